//! One QEMU process running a firmware image: its console kept line by line (echoed if asked,
//! each line marked with the instruction counter's reading where asked), the boot line
//! awaited, guest memory read through its monitor, and stopped for good when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::sys::signal::{sigprocmask, SigSet, SigmaskHow, Signal};

use crate::blob::ConfigBlob;
use crate::board::Board;
use crate::counted::counter::{self, Mark};

/// The niceness the emulated board (QEMU, its wire) runs at when we may raise its priority
/// (see [`Qemu::start`]).
const BOARD_NICE: libc::c_int = -10;
/// Console lines an error message quotes.
const QUOTED_LINES: usize = 8;
/// Console lines kept at most (a board served for days prints on); the oldest go first.
const KEPT_LINES: usize = 100_000;
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
    /// The NIC's MAC address as QEMU gives it (for an image that takes its address from the
    /// NIC, as the lwIP peer's does); None: QEMU's default (linklab's images set their own).
    pub nic_mac: Option<&'a str>,
    /// `-icount` options (e.g. `shift=0`), or None to run free.
    pub icount: Option<String>,
    /// QEMU's TCG plugin and its arguments (`-plugin`), e.g. the instruction counter.
    pub plugin: Option<String>,
    /// A unix socket for QEMU's monitor ([`Qemu::memory`]), or None.
    pub monitor: Option<&'a Path>,
    /// Run QEMU inside this network namespace (`ip netns exec`).
    pub netns: Option<&'a str>,
    /// Echo the console to our stdout.
    pub echo_console: bool,
}

impl<'a> Boot<'a> {
    /// `image` of `board` on `network`, free-running, nothing else.
    pub fn new(board: &'a Board, image: &'a Path, network: Network<'a>) -> Boot<'a> {
        Boot {
            board,
            image,
            config_blob: None,
            network,
            nic_mac: None,
            icount: None,
            plugin: None,
            monitor: None,
            netns: None,
            echo_console: false,
        }
    }
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

/// One console line, and the counter's reading taken as it arrived if it is a line the
/// counter is read at ([`Qemu::mark_lines`]).
#[derive(Clone, Debug)]
pub struct Line {
    /// The line, its end's white space trimmed.
    pub text: String,
    /// The counter's reading when the line arrived.
    pub mark: Option<Mark>,
}

/// The console so far, shared with its readers.
#[derive(Default)]
struct Console {
    /// The lines kept, the oldest first.
    lines: Vec<Line>,
    /// Lines dropped from the front (to keep at most [`KEPT_LINES`]).
    dropped: usize,
    /// Readers still reading (QEMU's stdout and stderr).
    readers: usize,
}

impl Console {
    /// The line at absolute index `i`, if still kept.
    fn get(&self, i: usize) -> Option<&Line> {
        self.lines.get(i.checked_sub(self.dropped)?)
    }
}

/// Where the console reader reads the counter: at lines starting with `prefix`.
struct Marker {
    counter: counter::Shared,
    prefix: &'static str,
    profile: bool,
}

/// The console and the signal that a line arrived.
type Shared = Arc<(Mutex<Console>, Condvar)>;

/// A running QEMU.
pub struct Qemu {
    child: Option<Child>,
    /// [`Boot::config_blob`], until the boot line.
    config_blob: Option<ConfigBlob>,
    console: Shared,
    marker: Arc<OnceLock<Marker>>,
    /// The next line a consuming read ([`Qemu::lines_until`]) looks at.
    cursor: usize,
    monitor: Option<PathBuf>,
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
        require(boot.board)?;
        let argv = argv_of(&boot);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        signals_unblocked(&mut cmd);
        // No emulator is left holding its TAP if we die without stopping it.
        dies_with_us(&mut cmd);
        // A real board's MCU owns its CPU and its wire; the emulated ones share the host's.
        // From here on this thread — and what it starts: QEMU and all its threads, the
        // bridges to the TAP, a simulated line — runs ahead of the host's other work where
        // permitted (root), so a busy host does not starve the board of cycles and its NIC
        // model of receive buffers: beside CPU hogs, `iperf3 -u -b 5M` to the mps2 embassy
        // image lost 3-14 % at nice 0 and 0 % at -10. Where not permitted, nothing changes.
        // (The image was built before, at our own priority.) No maintained crate wraps
        // setpriority (nix 0.32 has none).
        // SAFETY: setpriority only changes this thread's scheduling weight.
        unsafe { libc::setpriority(libc::PRIO_PROCESS as _, 0, BOARD_NICE) };
        // An embassy image's console is defmt frames: decode them with its table.
        let table = crate::defmt::table_of(boot.image)?.map(Arc::new);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", argv[0]))?;
        let console: Shared = Arc::new((Mutex::new(Console::default()), Condvar::new()));
        let marker: Arc<OnceLock<Marker>> = Arc::new(OnceLock::new());
        let stdout = child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        let stderr = child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        for (stream, echo, table) in [(stdout, boot.echo_console, table), (stderr, false, None)] {
            let Some(stream) = stream else { continue };
            read_console(stream, echo, table, &console, &marker);
        }
        Ok(Qemu {
            child: Some(child),
            config_blob: boot.config_blob,
            console,
            marker,
            cursor: 0,
            monitor: boot.monitor.map(Path::to_path_buf),
        })
    }

    /// From now on the console's reader reads `counter` the moment a line starting with
    /// `prefix` arrives (with `profile`, the per-block counts too), and keeps the reading with
    /// the line ([`Line::mark`]). Once per QEMU.
    pub fn mark_lines(
        &self,
        counter: counter::Shared,
        prefix: &'static str,
        profile: bool,
    ) -> anyhow::Result<()> {
        self.marker
            .set(Marker {
                counter,
                prefix,
                profile,
            })
            .map_err(|_| anyhow::anyhow!("the console's lines are marked already"))
    }

    /// Waits for the firmware's boot line; on timeout or an early exit, an error with the
    /// console's last lines (QEMU is then stopped).
    pub fn wait_for_boot(&mut self, timeout: Duration) -> anyhow::Result<String> {
        match self.next_matching(is_boot_line, timeout) {
            Ok(lines) => {
                self.config_blob = None;
                Ok(lines.last().cloned().unwrap_or_default())
            }
            Err(Waited::Exited(status)) => {
                let last = self.last_lines();
                self.stop();
                bail!("QEMU exited ({status}) before the firmware came up; its last lines: {last}");
            }
            Err(Waited::TimedOut) => {
                let last = self.last_lines();
                self.stop();
                bail!(
                    "the image did not boot within {} s; the console's last lines: {last}",
                    timeout.as_secs()
                );
            }
        }
    }

    /// Console lines up to and including the next that starts with `last`; on timeout or an
    /// exit before it, an error with the console's last lines (QEMU is stopped on timeout).
    pub fn lines_until(&mut self, last: &str, timeout: Duration) -> anyhow::Result<Vec<String>> {
        match self.next_matching(|l| l.starts_with(last), timeout) {
            Ok(lines) => Ok(lines),
            Err(Waited::Exited(status)) => {
                let last_lines = self.last_lines();
                bail!("QEMU exited ({status}) before the image finished; its last lines: {last_lines}");
            }
            Err(Waited::TimedOut) => {
                let last_lines = self.last_lines();
                self.stop();
                bail!(
                    "the image did not finish within {} s; the console's last lines: {last_lines}",
                    timeout.as_secs()
                );
            }
        }
    }

    /// The lines from the cursor to the next one `wanted` takes (the cursor then after it).
    /// Once QEMU has exited, its pipes may still hold the last lines it printed (on a busy
    /// host the readers run behind): they are read to their end, for at most
    /// [`DRAIN_AFTER_EXIT`] (a helper QEMU left behind could hold a pipe open).
    fn next_matching(
        &mut self,
        wanted: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<Vec<String>, Waited> {
        let deadline = Instant::now() + timeout;
        let mut exited_at: Option<(Instant, std::process::ExitStatus)> = None;
        let (lock, arrived) = &*self.console;
        let mut console = lock.lock().unwrap_or_else(|p| p.into_inner());
        let start = self.cursor.max(console.dropped);
        loop {
            self.cursor = self.cursor.max(console.dropped);
            while let Some(line) = console.get(self.cursor) {
                self.cursor += 1;
                if wanted(&line.text) {
                    return Ok((start.max(console.dropped)..self.cursor)
                        .filter_map(|i| console.get(i).map(|l| l.text.clone()))
                        .collect());
                }
            }
            if let Some((at, status)) = exited_at {
                if console.readers == 0 || at.elapsed() >= DRAIN_AFTER_EXIT {
                    return Err(Waited::Exited(status));
                }
            } else if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                exited_at = Some((Instant::now(), status));
                continue;
            }
            if exited_at.is_none() && Instant::now() >= deadline {
                return Err(Waited::TimedOut);
            }
            let wait = Duration::from_millis(200);
            console = arrived
                .wait_timeout(console, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The console lines so far that contain `text` (every one kept, consumed or not).
    pub fn lines_containing(&self, text: &str) -> Vec<Line> {
        let console = self.console.0.lock().unwrap_or_else(|p| p.into_inner());
        console
            .lines
            .iter()
            .filter(|l| l.text.contains(text))
            .cloned()
            .collect()
    }

    /// Waits up to `timeout` for the console line containing `text` after the first `seen`
    /// such lines (every line kept, consumed or not).
    pub fn wait_for_nth(&self, text: &str, seen: usize, timeout: Duration) -> anyhow::Result<Line> {
        let deadline = Instant::now() + timeout;
        let (lock, arrived) = &*self.console;
        let mut console = lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(l) = console
                .lines
                .iter()
                .filter(|l| l.text.contains(text))
                .nth(seen)
            {
                return Ok(l.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let last: Vec<&str> = console
                    .lines
                    .iter()
                    .rev()
                    .take(5)
                    .map(|l| l.text.as_str())
                    .collect();
                bail!("no console line with {text:?} within {timeout:?} (last lines: {last:?})");
            }
            console = arrived
                .wait_timeout(console, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The pseudo-terminal QEMU opened for the second UART (`-serial pty` prints "char
    /// device redirected to /dev/pts/N (label serial1)"), once booted.
    pub fn serial_pty(&self) -> Option<String> {
        let console = self.console.0.lock().ok()?;
        console.lines.iter().find_map(|l| {
            let rest = l.text.split("char device redirected to ").nth(1)?;
            Some(rest.split_whitespace().next()?.to_string())
        })
    }

    /// The exit status, if QEMU has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// The console's last lines, joined on one line.
    pub fn last_lines(&self) -> String {
        let console = self.console.0.lock().unwrap_or_else(|p| p.into_inner());
        if console.lines.is_empty() {
            return "(nothing)".into();
        }
        let from = console.lines.len().saturating_sub(QUOTED_LINES);
        console.lines[from..]
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// `len` bytes of guest memory at `addr`, through QEMU's monitor (`pmemsave` into a file
    /// beside the monitor's socket, in the caller's private folder).
    pub fn memory(&self, addr: u64, len: u64) -> anyhow::Result<Vec<u8>> {
        let monitor = self
            .monitor
            .as_deref()
            .context("this QEMU was started without a monitor")?;
        let file = monitor.with_file_name("memory.bin");
        let _ = std::fs::remove_file(&file);
        let mut s = UnixStream::connect(monitor).context("QEMU's monitor")?;
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

    /// Stops QEMU: SIGTERM to its process group, SIGKILL after a grace period; waits.
    pub fn stop(&mut self) {
        if let Some(child) = self.child.take() {
            crate::stop::stop(child, crate::stop::Whom::Group, STOP_GRACE);
        }
    }
}

/// Why a wait for a console line ended without it.
enum Waited {
    /// QEMU exited (and its last lines were read).
    Exited(std::process::ExitStatus),
    /// The time was up.
    TimedOut,
}

/// Starts a thread reading `stream` into `console` line by line (decoding defmt frames with
/// `table`), echoing to stdout with `echo`, reading the counter at the lines `marker` names.
fn read_console(
    stream: Box<dyn Read + Send>,
    echo: bool,
    table: Option<Arc<defmt_decoder::Table>>,
    console: &Shared,
    marker: &Arc<OnceLock<Marker>>,
) {
    let console = Arc::clone(console);
    let marker = Arc::clone(marker);
    console.0.lock().unwrap_or_else(|p| p.into_inner()).readers += 1;
    std::thread::spawn(move || {
        let emit = |text: String| {
            let mark = marker
                .get()
                .filter(|m| text.starts_with(m.prefix))
                .and_then(|m| counter::mark(&m.counter, m.profile).ok());
            if echo {
                println!("{text}");
            }
            let (lock, arrived) = &*console;
            let mut c = lock.lock().unwrap_or_else(|p| p.into_inner());
            if c.lines.len() == KEPT_LINES {
                c.lines.remove(0);
                c.dropped += 1;
            }
            c.lines.push(Line {
                text: text.trim_end().to_string(),
                mark,
            });
            arrived.notify_all();
        };
        match table {
            Some(table) => crate::defmt::decode_stream(&table, stream, emit),
            None => {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    emit(line);
                }
            }
        }
        let (lock, arrived) = &*console;
        lock.lock().unwrap_or_else(|p| p.into_inner()).readers -= 1;
        arrived.notify_all();
    });
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
    let monitor = match boot.monitor {
        Some(path) => format!("unix:{},server=on,wait=off", path.display()),
        None => "none".into(),
    };
    argv.extend(["-display".into(), "none".into(), "-monitor".into(), monitor]);
    argv.extend(["-serial", "stdio", "-kernel"].map(String::from));
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
        Network::Tap(tap) => argv.extend(b.tap_args(tap, boot.nic_mac)),
    }
    if let Some(icount) = &boot.icount {
        argv.push("-icount".into());
        argv.push(icount.clone());
    }
    if let Some(plugin) = &boot.plugin {
        argv.push("-plugin".into());
        argv.push(plugin.clone());
    }
    argv
}

impl Drop for Qemu {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Unblocks in `cmd`'s process the signals a caller may have blocked for its signalfd
/// ([`StopSignals`](linklab_serve::serve::StopSignals)), so it can be stopped with SIGTERM.
pub fn signals_unblocked(cmd: &mut Command) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
            Ok(())
        });
    }
}

/// Has the kernel kill `cmd`'s process (SIGKILL) when we die without stopping it — killed,
/// crashed — so that no emulator or stock tool we started outlives us. The parent-death
/// signal follows the thread that forked: call it only for commands started on a thread that
/// lives as long as the command should.
pub fn dies_with_us(cmd: &mut Command) {
    let us = nix::unistd::getpid();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            // We died between fork and prctl: the signal will never come.
            if nix::unistd::getppid() != us {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}
