//! The Pico's USB images in rp2040js as a user boots them (`linklab emu pico --image IMAGE
//! --pty PATH`): the board, its port, and the harness's status (the chip's clock, the USB
//! model's counters). Shared by the emu harness's emu_usb (the check) and emu_usb_figures (the
//! benchmarks by hand).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::emulated_clock::Status;
use crate::rp2040js::build_elf;
use crate::stats::Field;
use crate::{linklab_bin, ChildGuard};

/// One emulated board at a time: each keeps a core of the machine busy.
pub static ONE_BOARD: Mutex<()> = Mutex::new(());

/// The port's rate for `linklab serial` (a USB port ignores it; the link's timers use it).
pub const BAUD: &str = "4000000";

/// `linklab emu pico --image IMAGE --pty PATH` running.
pub struct UsbBoard {
    /// Its scratch folder (the status file, the harness's log).
    pub dir: PathBuf,
    /// The harness's status file: the chip's clock, the USB model's counters.
    pub status: Status,
    /// The port's pseudo-terminal, as a program opens /dev/ttyACM0.
    pub port: PathBuf,
    cli: Option<ChildGuard>,
}

impl UsbBoard {
    /// Builds the example with `features`, boots it as `image` and waits until the modelled
    /// host has configured it.
    pub fn boot(image: &str, features: &str) -> UsbBoard {
        UsbBoard::boot_with(image, features, &[])
    }

    /// As `boot`, with `env` for linklab emu (and so the harness: RP2040JS_USB_CAPTURE).
    pub fn boot_with(image: &str, features: &str, env: &[(&str, &str)]) -> UsbBoard {
        let variant = if features.is_empty() {
            image.to_string()
        } else {
            format!("{image}-{}", features.replace(',', "-"))
        };
        let elf = build_elf("rp2040-usb", features, &variant);
        let dir = std::env::temp_dir().join(format!("linklab-{image}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let status = Status(dir.join("status.json"));
        let port = dir.join("ttyACM0");
        let child = Command::new(linklab_bin())
            .args(["emu", "pico", "--image", image, "--elf"])
            .arg(&elf)
            .arg("--pty")
            .arg(&port)
            .arg("--status")
            .arg(&status.0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .envs(env.iter().copied())
            .spawn()
            .expect("linklab emu pico");
        let board = UsbBoard {
            dir,
            status,
            port,
            cli: Some(ChildGuard(Some(child))),
        };
        board.wait_state("configured", Duration::from_secs(300));
        board
    }

    /// Waits until the modelled host's USB state is `state`.
    pub fn wait_state(&self, state: &str, limit: Duration) {
        let started = Instant::now();
        while self.status.figures().0.get("usb_state") != Some(&Field::Text(state.into())) {
            assert!(
                started.elapsed() < limit,
                "USB never {state}: {}",
                self.status.read()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The harness's count at `path` (e.g. `["usb_bus", "in_naks"]`).
    pub fn count(&self, path: &[&str]) -> u64 {
        let mut v = self.status.read();
        for k in path {
            v = v[*k].clone();
        }
        v.as_u64().unwrap_or(0)
    }

    /// Waits `ns` of the chip's clock.
    pub fn wait_chip(&self, ns: u64) {
        let now = self.status.emulated_ns();
        self.status.wait_until(now + ns, Duration::from_secs(300));
    }

    /// The relay's opens or closes of the port, as the harness counted them.
    pub fn relay_count(&self, name: &str) -> u64 {
        self.count(&["usb_tty", name])
    }

    /// A USB reset of the device by the modelled host (SIGUSR2 to the harness).
    pub fn usb_reset(&self) {
        let pid = self.count(&["harness_pid"]) as i32;
        assert!(pid > 0, "no harness pid: {}", self.status.read());
        // SAFETY: a signal to the harness this test started (its pid from its own status).
        assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR2) }, 0);
    }

    /// Stops the board; the relay's counters must obey their law and the bus have met no
    /// error. Returns the relay's summary line.
    pub fn finish(mut self) -> String {
        let last = self.status.figures();
        for (k, what) in [
            ("toggle_errors", "DATA toggle errors"),
            ("timeouts", "timeouts"),
        ] {
            assert_eq!(last.counter("usb_bus", k), 0, "{what} on the bus: {last}");
        }
        assert_eq!(last.counter("usb_core", "control_errors"), 0, "{last}");
        let out = self
            .cli
            .take()
            .expect("linklab emu")
            .interrupt(Duration::from_secs(30));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let summary = text
            .lines()
            .find(|l| l.starts_with("usb port: "))
            .unwrap_or_else(|| panic!("no relay summary: {text}"))
            .to_string();
        assert!(summary.ends_with("| conserved"), "{summary}");
        println!("{summary}");
        let _ = std::fs::remove_dir_all(&self.dir);
        summary
    }
}
