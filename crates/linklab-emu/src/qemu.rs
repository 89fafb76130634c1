//! One QEMU process running a firmware image: its console captured line by line (echoed or
//! kept), the boot line awaited, and stopped for good when dropped.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The niceness the emulated board (QEMU, its wire) runs at when we may raise its priority
/// (see [`Qemu::start`]).
const BOARD_NICE: libc::c_int = -10;

use anyhow::{bail, Context};

use super::blob::ConfigBlob;
use super::board::Board;

/// Console lines kept for an error message.
const KEPT_LINES: usize = 8;
/// What the firmware prints once its network is up (firmware/common's `run`; the embassy
/// image's decoded defmt line has a timestamp and level before it).
const BOOT_LINE: &str = "linklab firmware: ";
/// How long QEMU gets to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// How long the console's pipes are read after QEMU exited, at most, for the lines it printed
/// last.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(5);

/// How to boot.
pub struct Boot<'a> {
    /// The board.
    pub board: &'a Board,
    /// The ELF image.
    pub image: &'a Path,
    /// The configuration blob, loaded at the board's config address (None: no blob). QEMU
    /// keeps it until the image has booted ([`Qemu::wait_for_boot`]): the loader read it when
    /// QEMU started, so nothing of ours stays in the temporary directory after that, even if
    /// this process is killed.
    pub config_blob: Option<ConfigBlob>,
    /// What the NIC is attached to.
    pub network: Network<'a>,
    /// `-icount` options (e.g. `shift=0`), or None to run free.
    pub icount: Option<String>,
    /// Run QEMU inside this network namespace (`ip netns exec`).
    pub netns: Option<&'a str>,
    /// Echo the console to our stdout.
    pub echo_console: bool,
}

/// What a booted image's NIC is attached to.
#[derive(Clone, Copy, Debug)]
pub enum Network<'a> {
    /// No NIC.
    None,
    /// A TAP QEMU creates.
    Tap(&'a str),
    /// A `-netdev stream` unix socket at this path (the soft-PHY image's line).
    Stream(&'a Path),
    /// The serial image: no NIC, the board's second UART on a pseudo-terminal
    /// ([`Qemu::serial_pty`]).
    SerialPty,
}

/// A running QEMU.
pub struct Qemu {
    child: Option<Child>,
    /// [`Boot::config_blob`], until the boot line.
    config_blob: Option<ConfigBlob>,
    lines: Receiver<String>,
    kept: Arc<Mutex<VecDeque<String>>>,
}

/// The firmware's boot line: `linklab firmware: BOARD up...`, at the start of the line or
/// (decoded defmt) after its timestamp and level.
fn is_boot_line(line: &str) -> bool {
    line.find(BOOT_LINE)
        .is_some_and(|at| line[at..].contains(" up"))
}

/// Is `program` on PATH?
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// One line naming the package when the board's QEMU is missing.
pub fn require(board: &Board) -> anyhow::Result<()> {
    if !on_path(board.qemu) {
        bail!(
            "{} not found: install Debian's {} package (apt-get install {})",
            board.qemu,
            board.qemu_package,
            board.qemu_package
        );
    }
    Ok(())
}

impl Qemu {
    /// Starts QEMU (in its own process group, so a terminal's Ctrl-C reaches us, and we stop
    /// it in order).
    pub fn start(boot: Boot<'_>) -> anyhow::Result<Qemu> {
        let b = boot.board;
        require(b)?;
        let argv = argv_of(&boot);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // SAFETY: only async-signal-safe calls between fork and exec: unblock the signals a
        // caller may have blocked for its signalfd, so QEMU can be stopped with SIGTERM.
        unsafe {
            cmd.pre_exec(move || {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
                Ok(())
            });
        }
        // No emulator is left holding its TAP if we die without stopping it.
        dies_with_us(&mut cmd);
        // A real board's MCU owns its CPU and its wire; the emulated ones share the host's.
        // From here on this thread — and what it starts: QEMU and all its threads, the
        // bridges to the TAP, a simulated line — runs ahead of the host's other work where
        // permitted (root), so a busy host does not starve the board of cycles and its NIC
        // model of receive buffers: beside CPU hogs, `iperf3 -u -b 5M` to the mps2 embassy
        // image lost 3-14 % at nice 0 and 0 % at -10. Where not permitted, nothing changes.
        // (The image was built before, at our own priority.)
        // SAFETY: setpriority only changes this thread's scheduling weight.
        unsafe { libc::setpriority(libc::PRIO_PROCESS as _, 0, BOARD_NICE) };
        // An embassy image's console is defmt frames: decode them with its table.
        let table = super::defmt::table_of(boot.image)?.map(std::sync::Arc::new);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", argv[0]))?;
        let kept = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, lines) = mpsc::channel();
        for (stream, echo, table) in [
            (
                child
                    .stdout
                    .take()
                    .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
                boot.echo_console,
                table,
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
                false,
                None,
            ),
        ] {
            let Some(stream) = stream else { continue };
            let kept = Arc::clone(&kept);
            let tx = tx.clone();
            std::thread::spawn(move || {
                let emit = |line: String| {
                    if echo {
                        println!("{line}");
                    }
                    if let Ok(mut k) = kept.lock() {
                        if k.len() == KEPT_LINES {
                            k.pop_front();
                        }
                        k.push_back(line.clone());
                    }
                    let _ = tx.send(line);
                };
                match table {
                    Some(table) => super::defmt::decode_stream(&table, stream, emit),
                    None => {
                        for line in BufReader::new(stream).lines() {
                            let Ok(line) = line else { break };
                            emit(line);
                        }
                    }
                }
            });
        }
        Ok(Qemu {
            child: Some(child),
            config_blob: boot.config_blob,
            lines,
            kept,
        })
    }

    /// Waits for the firmware's boot line; on timeout or an early exit, an error with the
    /// console's last lines (QEMU is then stopped).
    pub fn wait_for_boot(&mut self, timeout: Duration) -> anyhow::Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(line) if is_boot_line(&line) => {
                    self.config_blob = None;
                    return Ok(line);
                }
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            if let Some(status) = self.exited() {
                if let Some(line) = self
                    .lines_after_exit()
                    .into_iter()
                    .find(|l| is_boot_line(l))
                {
                    self.config_blob = None;
                    return Ok(line);
                }
                let last = self.last_lines();
                self.stop();
                bail!("QEMU exited ({status}) before the firmware came up; its last lines: {last}");
            }
            if Instant::now() >= deadline {
                let last = self.last_lines();
                self.stop();
                bail!(
                    "the image did not boot within {} s; the console's last lines: {last}",
                    timeout.as_secs()
                );
            }
        }
    }

    /// The pseudo-terminal QEMU opened for the second UART (`-serial pty` prints "char
    /// device redirected to /dev/pts/N (label serial1)"), once booted.
    pub fn serial_pty(&self) -> Option<String> {
        let kept = self.kept.lock().ok()?;
        kept.iter().find_map(|l| {
            let rest = l.split("char device redirected to ").nth(1)?;
            Some(rest.split_whitespace().next()?.to_string())
        })
    }

    /// Console lines up to and including the first that starts with `last`; on timeout or an
    /// exit before it, an error with the console's last lines (QEMU is then stopped).
    pub fn lines_until(&mut self, last: &str, timeout: Duration) -> anyhow::Result<Vec<String>> {
        let deadline = Instant::now() + timeout;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(line) => {
                    let done = line.starts_with(last);
                    lines.push(line);
                    if done {
                        return Ok(lines);
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            if let Some(status) = self.exited() {
                // Lines the readers still hold were printed before the exit.
                lines.extend(self.lines_after_exit());
                if let Some(end) = lines.iter().position(|l| l.starts_with(last)) {
                    lines.truncate(end + 1);
                    return Ok(lines);
                }
                let last_lines = self.last_lines();
                bail!("QEMU exited ({status}) before the image finished; its last lines: {last_lines}");
            }
            if Instant::now() >= deadline {
                let last_lines = self.last_lines();
                self.stop();
                bail!(
                    "the image did not finish within {} s; the console's last lines: {last_lines}",
                    timeout.as_secs()
                );
            }
        }
    }

    /// The console lines not yet taken, once QEMU has exited: its pipes may still hold the
    /// last lines it printed (on a busy host the readers run behind), so they are read to
    /// their end, for at most [`DRAIN_AFTER_EXIT`] (a helper QEMU left behind could hold a
    /// pipe open).
    fn lines_after_exit(&mut self) -> Vec<String> {
        let deadline = Instant::now() + DRAIN_AFTER_EXIT;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(_) => return lines,
            }
        }
    }

    /// The exit status, if QEMU has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// The console's last lines, joined on one line.
    pub fn last_lines(&self) -> String {
        let kept = self.kept.lock().map(|k| k.clone()).unwrap_or_default();
        if kept.is_empty() {
            return "(nothing)".into();
        }
        kept.into_iter().collect::<Vec<_>>().join(" | ")
    }

    /// Stops QEMU: SIGTERM to its process group, SIGKILL after a grace period; waits.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pgid = child.id() as libc::pid_t;
        // SAFETY: signals to the process group we created for QEMU.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = child.wait();
    }
}

/// QEMU's command line for `boot` (behind `ip netns exec` when it names a namespace).
fn argv_of(boot: &Boot<'_>) -> Vec<String> {
    let b = boot.board;
    let mut argv: Vec<String> = Vec::new();
    if let Some(ns) = boot.netns {
        argv.extend(["ip", "netns", "exec", ns].map(String::from));
    }
    argv.push(b.qemu.into());
    argv.extend(b.machine.iter().map(|s| s.to_string()));
    argv.extend(
        [
            "-display", "none", "-monitor", "none", "-serial", "stdio", "-kernel",
        ]
        .map(String::from),
    );
    argv.push(boot.image.display().to_string());
    if let Some(blob) = &boot.config_blob {
        argv.push("-device".into());
        argv.push(format!(
            "loader,file={},addr={:#x},force-raw=on",
            blob.path().display(),
            b.config_addr
        ));
    }
    match boot.network {
        Network::None => {}
        Network::SerialPty => {
            argv.extend(["-serial", "pty", "-nic", "none"].map(String::from));
        }
        Network::Stream(path) => argv.extend(b.stream_args(path)),
        Network::Tap(tap) => argv.extend(b.tap_args(tap)),
    }
    if let Some(icount) = &boot.icount {
        argv.push("-icount".into());
        argv.push(icount.clone());
    }
    argv
}

impl Drop for Qemu {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Has the kernel kill `cmd`'s process (SIGKILL) when we die without stopping it — killed,
/// crashed — so that no emulator or stock tool we started outlives us. The parent-death
/// signal follows the thread that forked: call it only for commands started on the main
/// thread, which lives as long as we do.
pub fn dies_with_us(cmd: &mut Command) {
    let us = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // We died between fork and prctl: the signal will never come.
            if libc::getppid() != us {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}
