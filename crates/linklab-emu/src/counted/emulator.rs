//! One image booted on QEMU's mps2-an385 in a network namespace of its own: the TAP QEMU
//! creates, configured on the kernel side (198.18.9.1/24, the device 198.18.9.2, the lwIP
//! peer's addresses), the console read line by line, and the counting plugin loaded (or a
//! fixed instruction rate, for throughput). Everything goes when it is dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::counter::{self, Counter, Mark, Shared};

/// The device's address (the lwIP image's is fixed at build time).
pub const DEVICE: &str = "198.18.9.2";
/// The kernel side of the TAP.
const HOST_CIDR: &str = "198.18.9.1/24";
/// The TAP's name in the namespace.
const TAP: &str = "lltap0";
/// Where linklab's images read their configuration blob (the last 256 bytes of their RAM).
const CONFIG_ADDR: &str = "0x203fff00";
/// Console lines the reader marks the counter at, as they arrive (lwiperf's end of a test).
const MARKED_PREFIX: &str = "iperf-done:";

/// A console line, with the counter read when it arrived if it is one the reader marks.
#[derive(Clone, Debug)]
pub struct Line {
    /// The line, without its newline.
    pub text: String,
    /// The counter when the line arrived, for a line the reader marks.
    pub mark: Option<Mark>,
}

/// How QEMU runs the guest.
pub enum Clock {
    /// Free-running, counted by the plugin at `lib` (with `profile`: per-block counts too,
    /// written to files under `dir`; with `ack_every_segment`, the host's route to the device
    /// has `quickack 1`: Linux acknowledges every segment the device sends, so the count of
    /// ACKs the device takes in no longer follows the host's delayed-ACK timing).
    Counted {
        /// The TCG plugin's shared library.
        lib: PathBuf,
        /// Where the plugin writes its profile files.
        dir: PathBuf,
        /// Per-block counts too.
        profile: bool,
        /// The host's route to the device has `quickack 1`.
        ack_every_segment: bool,
    },
    /// `-icount shift=N,align=on,sleep=on`: 2^N ns per instruction (shift 5: 31.25 MIPS).
    Fixed(u32),
}

/// A booted image.
pub struct Emulator {
    ns: String,
    qemu: Option<Child>,
    console: Arc<Mutex<Vec<Line>>>,
    counter: Option<Shared>,
    monitor: PathBuf,
    profile: Option<PathBuf>,
}

impl Emulator {
    /// Boots `elf` with NIC address `mac` (and, for linklab, the configuration blob
    /// `config`), waits for a console line containing `up_line` (if it prints one) and for
    /// the device to answer ping.
    pub fn boot(
        tag: &str,
        elf: &Path,
        mac: &str,
        config: Option<&Path>,
        clock: &Clock,
        up_line: Option<&str>,
    ) -> anyhow::Result<Emulator> {
        let ns = format!("ll-lwipcmp-{}-{tag}", std::process::id());
        let status = Command::new("ip").args(["netns", "add", &ns]).status();
        if !matches!(status, Ok(s) if s.success()) {
            bail!("cannot create the network namespace {ns} (needs root)");
        }
        let scratch = std::env::temp_dir().join(&ns);
        std::fs::create_dir_all(&scratch)?;
        let monitor = scratch.join("monitor.sock");
        let mut emu = Emulator {
            ns,
            qemu: None,
            console: Arc::new(Mutex::new(Vec::new())),
            counter: None,
            monitor: monitor.clone(),
            profile: None,
        };
        emu.run(&["ip", "link", "set", "lo", "up"])?;
        let mut argv: Vec<String> = [
            "ip",
            "netns",
            "exec",
            &emu.ns,
            "qemu-system-arm",
            "-M",
            "mps2-an385",
            "-display",
            "none",
            "-serial",
            "stdio",
            "-kernel",
        ]
        .map(String::from)
        .to_vec();
        argv.push(elf.display().to_string());
        argv.push("-monitor".into());
        argv.push(format!("unix:{},server=on,wait=off", monitor.display()));
        argv.push("-nic".into());
        argv.push(format!(
            "tap,ifname={TAP},script=no,downscript=no,model=lan9118,mac={mac}"
        ));
        if let Some(blob) = config {
            argv.push("-device".into());
            argv.push(format!(
                "loader,file={},addr={CONFIG_ADDR},force-raw=on",
                blob.display()
            ));
        }
        let sock = scratch.join("count.sock");
        argv.extend(emu.clock_args(tag, clock, &sock));
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start qemu-system-arm (Debian's qemu-system-arm package)")?;
        let stdout = child.stdout.take().context("QEMU's console")?;
        let mut stderr = child.stderr.take().context("QEMU's stderr")?;
        emu.qemu = Some(child);
        if matches!(clock, Clock::Counted { .. }) {
            emu.counter = Some(Arc::new(Mutex::new(Counter::connect(&sock)?)));
        }
        let console = emu.console.clone();
        let counter = emu.counter.clone();
        let profile = emu.profile.is_some();
        std::thread::spawn(move || read_console(stdout, console, counter, profile));
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            if !s.trim().is_empty() {
                eprintln!("qemu: {}", s.trim());
            }
        });
        if let Some(line) = up_line {
            emu.wait_for(line, Duration::from_secs(60))?;
        }
        emu.run(&["ip", "addr", "add", HOST_CIDR, "dev", TAP])?;
        emu.run(&["ip", "link", "set", TAP, "up"])?;
        if matches!(
            clock,
            Clock::Counted {
                ack_every_segment: true,
                ..
            }
        ) {
            let route = "198.18.9.0/24 proto kernel scope link src 198.18.9.1 quickack 1";
            let mut argv = vec!["ip", "route", "change"];
            argv.extend(route.split(' '));
            argv.extend(["dev", TAP]);
            emu.run(&argv)?;
        }
        for _ in 0..30 {
            let pong = emu
                .command(&["ping", "-c", "1", "-W", "1", DEVICE])
                .output();
            if pong.is_ok_and(|o| o.status.success()) {
                return Ok(emu);
            }
        }
        bail!("{} booted but never answered ping", elf.display())
    }

    /// QEMU's arguments for `clock`: the counting plugin on `sock` (with a profile file
    /// named by `tag` when asked), or a fixed instruction rate.
    fn clock_args(&mut self, tag: &str, clock: &Clock, sock: &Path) -> Vec<String> {
        match clock {
            Clock::Counted {
                lib, dir, profile, ..
            } => {
                let mut plugin = format!("{},sock={}", lib.display(), sock.display());
                if *profile {
                    let p = dir.join(format!("{tag}.prof"));
                    plugin.push_str(&format!(",prof={}", p.display()));
                    self.profile = Some(p);
                }
                vec!["-plugin".into(), plugin]
            }
            Clock::Fixed(shift) => {
                vec!["-icount".into(), format!("shift={shift},align=on,sleep=on")]
            }
        }
    }

    /// A command run inside the namespace.
    pub fn command(&self, argv: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns]).args(argv);
        c
    }

    /// Runs `argv` in the namespace; an error with its stderr if it fails.
    pub fn run(&self, argv: &[&str]) -> anyhow::Result<Output> {
        let out = self
            .command(argv)
            .output()
            .with_context(|| format!("cannot run {}", argv[0]))?;
        if !out.status.success() {
            bail!(
                "{} failed: {}",
                argv.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out)
    }

    /// Waits up to `timeout` for a console line containing `text`.
    pub fn wait_for(&self, text: &str, timeout: Duration) -> anyhow::Result<Line> {
        self.wait_for_nth(text, 0, timeout)
    }

    /// Waits up to `timeout` for the console line containing `text` after the first `seen`
    /// such lines.
    pub fn wait_for_nth(&self, text: &str, seen: usize, timeout: Duration) -> anyhow::Result<Line> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(l) = self.lines(text).get(seen) {
                return Ok(l.clone());
            }
            if Instant::now() > deadline {
                let all = self.console.lock().map(|c| c.clone()).unwrap_or_default();
                let last: Vec<&str> = all.iter().rev().take(5).map(|l| l.text.as_str()).collect();
                bail!("no console line with {text:?} within {timeout:?} (last lines: {last:?})");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The console lines so far that contain `text`.
    pub fn lines(&self, text: &str) -> Vec<Line> {
        self.console
            .lock()
            .map(|c| {
                c.iter()
                    .filter(|l| l.text.contains(text))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Reads the counter now (with a profile file if this boot profiles).
    pub fn mark(&self) -> anyhow::Result<Mark> {
        let c = self
            .counter
            .as_ref()
            .context("this boot runs at a fixed rate, without the counter")?;
        counter::mark(c, self.profile.is_some())
    }

    /// The profile file a mark wrote.
    pub fn profile_file(&self, mark: &Mark) -> Option<PathBuf> {
        let base = self.profile.as_ref()?;
        let n = mark.profile?;
        Some(PathBuf::from(format!("{}.{n}", base.display())))
    }

    /// `len` bytes of guest memory at `addr` (QEMU's monitor `pmemsave`).
    pub fn memory(&self, addr: u64, len: u64) -> anyhow::Result<Vec<u8>> {
        let file = self.monitor.with_file_name("memory.bin");
        let _ = std::fs::remove_file(&file);
        let mut s = UnixStream::connect(&self.monitor).context("QEMU's monitor")?;
        s.set_read_timeout(Some(Duration::from_millis(200)))?;
        writeln!(s, "pmemsave {addr:#x} {len} \"{}\"", file.display())?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut sink = [0u8; 4096];
        while Instant::now() < deadline {
            let _ = s.read(&mut sink);
            if std::fs::metadata(&file).is_ok_and(|m| m.len() == len) {
                return std::fs::read(&file).context("the memory QEMU saved");
            }
        }
        bail!("QEMU's monitor saved no memory at {addr:#x}")
    }
}

/// The console reader: every line into `console`, the counter read at once for the lines
/// the bench marks by.
fn read_console(
    stdout: impl Read,
    console: Arc<Mutex<Vec<Line>>>,
    counter: Option<Shared>,
    profile: bool,
) {
    for text in BufReader::new(stdout).lines() {
        let Ok(text) = text else { return };
        let mark = match &counter {
            Some(c) if text.starts_with(MARKED_PREFIX) => counter::mark(c, profile).ok(),
            _ => None,
        };
        let text = text.trim_end().to_string();
        if let Ok(mut c) = console.lock() {
            c.push(Line { text, mark });
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let Some(mut q) = self.qemu.take() {
            let _ = q.kill();
            let _ = q.wait();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
        if let Some(dir) = self.monitor.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
