//! The RP2040 soft-PHY example at the pin level in rp2040js (emulators/rp2040js): building a
//! variant of the example, the harness and `linklab emu line` in a namespace the test
//! creates, the chip's clock (the harness's status file), and what the tests ask of the
//! device over its line.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::stats::Stats;

use super::device::DEVICE;
pub use super::emulated_clock::Status;
use super::{linklab_bin, ChildGuard, Netns};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds examples/boards/`package` in release with `features` and copies the ELF to a
/// name of its own (`NAME-VARIANT`), as `linklab emu pico` builds its images
/// ([`linklab_emu::pin_board::build_example`]: one cargo at a time, by a lock beside the
/// ELFs). After the check's build of the example only what the features change is rebuilt.
pub fn build_elf(package: &str, features: &str, variant: &str) -> PathBuf {
    linklab_emu::pin_board::build_example(package, features, variant, true)
        .unwrap_or_else(|e| panic!("{e:#}"))
}

/// The example in the harness, its line joined to a TAP in a namespace of its own
/// (198.18.0.1 there, the device 198.18.0.2).
pub struct PinLevel {
    /// The namespace holding the line's TAP (198.18.0.1 there).
    pub ns: Netns,
    /// The harness's status file: the chip's clock and its devices' counters.
    pub status: Status,
    line: Option<ChildGuard>,
    node: Option<ChildGuard>,
    dir: PathBuf,
}

impl PinLevel {
    /// Starts `linklab emu line --oversample OVERSAMPLE --no-pace` and the harness on `elf`
    /// (with `--inject PLAN` if given), and waits until the chip's clock passes 200 ms
    /// (embassy-rp's clocks, core 1, the PIO programs and the stack are up well before).
    pub fn start(tag: &str, elf: &Path, oversample: u8, inject: Option<&str>) -> PinLevel {
        assert!(
            root()
                .join("emulators/rp2040js/node_modules/rp2040js")
                .exists(),
            "rp2040js is not installed (scripts/setup: npm ci in emulators/rp2040js)"
        );
        let ns = Netns::new(tag);
        let dir = std::env::temp_dir().join(format!("linklab-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("line.sock");
        let status = Status(dir.join("status.json"));
        let os = oversample.to_string();
        let line = ns.spawn(&[
            linklab_bin().to_str().unwrap(),
            "emu",
            "line",
            "--tap",
            "rp0",
            "--socket",
            sock.to_str().unwrap(),
            "--no-pace",
            "--oversample",
            &os,
        ]);
        let started = Instant::now();
        while !sock.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no line socket"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        ns.run(&["ip", "addr", "add", "198.18.0.1/24", "dev", "rp0"]);
        ns.run(&["ip", "link", "set", "rp0", "up"]);
        let mut harness = Command::new("node");
        harness
            .arg(root().join("emulators/rp2040js/harness.mjs"))
            .args(["--elf", elf.to_str().unwrap()])
            .args(["--socket", sock.to_str().unwrap()])
            .args(["--oversample", &os])
            .args(["--status", status.0.to_str().unwrap()]);
        if let Some(plan) = inject {
            harness.args(["--inject", plan]);
        }
        let node = harness
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node");
        let pin = PinLevel {
            ns,
            status,
            line: Some(line),
            node: Some(ChildGuard(Some(node))),
            dir,
        };
        pin.status.wait_until(200_000_000, Duration::from_secs(300));
        pin
    }

    /// Sends the harness SIGUSR1: its `--inject` plan starts.
    pub fn start_injection(&self) {
        let pid = self
            .node
            .as_ref()
            .and_then(|g| g.0.as_ref())
            .map(|c| c.id());
        let pid = pid.expect("the harness runs") as libc::pid_t;
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR1) }, 0);
    }

    /// The device's `/stats` (its apps', MAC's and PHY's counters).
    pub fn stats(&self) -> Stats {
        let url = format!("http://{DEVICE}/stats");
        let out = self
            .ns
            .run(&["curl", "-sS", "--fail", "--max-time", "300", &url]);
        Stats::parse(&out.stdout)
    }

    /// curl of bench file `path`: whole, CRC32 right; returns its length and the emulated
    /// seconds it took.
    pub fn curl_crc(&self, path: &str) -> (u64, f64) {
        curl_crc(&self.ns, &self.status, path)
    }

    /// Waits (in the chip's clock, 2 ms at a time) until /stats has no iperf 2 stream open:
    /// the device's iperf 2 server listens again once the last test's connection closed
    /// (which is also when the last byte sent to it arrived).
    pub fn wait_iperf2_closed(&self) {
        let started = Instant::now();
        while self.stats().counter("iperf2", "open_streams") != 0 {
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "an iperf 2 stream stayed open: {}",
                self.stats()
            );
            self.status.wait_until(
                self.status.emulated_ns() + 2_000_000,
                Duration::from_secs(120),
            );
        }
    }

    /// Stops the harness, then the line; returns the line's summary line (its counters and
    /// law).
    pub fn stop(mut self) -> String {
        drop(self.node.take());
        let out = self
            .line
            .take()
            .expect("the line runs")
            .interrupt(Duration::from_secs(20));
        let summary = String::from_utf8_lossy(&out.stdout).to_string();
        summary
            .lines()
            .find(|l| l.starts_with("linklab emu: line "))
            .unwrap_or_else(|| panic!("no line summary: {summary}"))
            .to_string()
    }
}

/// curl in `ns` of bench file `path` from the device: whole, CRC32 right; returns its length
/// and the seconds it took in the chip's clock (`status`).
pub fn curl_crc(ns: &Netns, status: &Status, path: &str) -> (u64, f64) {
    let file = linklab_perf::payload::find(path).expect("a bench file");
    let url = format!("http://{DEVICE}{path}");
    let (out, secs) =
        status.timed(|| ns.run(&["curl", "-sS", "--fail", "--max-time", "600", &url]));
    let body = out.stdout;
    assert_eq!(body.len() as u64, file.len, "{path}: length");
    assert_eq!(
        crc32fast::hash(&body),
        linklab_perf::http::expected_crc32(file),
        "{path}: CRC32"
    );
    (file.len, secs)
}

impl Drop for PinLevel {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
