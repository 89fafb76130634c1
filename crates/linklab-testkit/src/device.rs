//! A device under test on a TAP, in a network namespace the test creates: `linklab serve` (the
//! soft NIC) or `linklab emu` (linklab's firmware on an emulated board), with the kernel side
//! of the TAP configured as the host, and what tests do to it — stock curl and iperf3, /stats,
//! raw frames written on the TAP with an AF_PACKET socket. The device is 198.18.0.2/24, the
//! host 198.18.0.1; nothing leaves the namespace.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::iperf3;
use super::spoof::Target;
use super::stats::Stats;
use super::{enter_netns, in_netns, linklab_bin, ChildGuard, Netns};

/// The device's address.
pub const DEVICE: &str = "198.18.0.2";
/// The device's address, as bytes.
pub const DEVICE_IP: [u8; 4] = [198, 18, 0, 2];
/// The kernel side of the TAP.
pub const HOST_CIDR: &str = "198.18.0.1/24";
/// The host's address.
pub const HOST: &str = "198.18.0.1";

/// One device at a time: emulators are CPU-bound, timings in the tests want a quiet machine,
/// and the machine has two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Waits for this test binary's turn to run something CPU-bound or timing-sensitive (a
/// [`Device`] takes it for its lifetime).
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A device running on a TAP in its own namespace, host side configured; stopped (and its
/// namespace deleted) on drop.
pub struct Device {
    child: Option<ChildGuard>,
    /// The namespace the device's TAP lives in; run host-side tools in it.
    pub ns: Netns,
    /// The TAP's name inside the namespace.
    pub tap: &'static str,
    /// The device's MAC address.
    pub mac: [u8; 6],
    _turn: MutexGuard<'static, ()>,
}

impl Device {
    /// `linklab serve` (this build) on TAP `llh0`, MAC 02:4c:4c:00:00:01.
    pub fn serve(tag: &str) -> Device {
        Device::serve_with(&linklab_bin(), tag)
    }

    /// `linklab serve` of the binary `bin` (e.g. an older build, for a before/after figure).
    pub fn serve_with(bin: &Path, tag: &str) -> Device {
        let argv = ["serve", "--tap", "llh0", "--ip", "198.18.0.2/24"];
        Device::start(bin, tag, &argv, "llh0", [0x02, 0x4c, 0x4c, 0, 0, 1])
    }

    /// `linklab emu BOARD` (this build) on TAP `llfw0`, MAC 02:4c:4c:00:00:02.
    pub fn emu(board: &str) -> Device {
        Device::emu_args(board, &[])
    }

    /// `linklab emu BOARD EXTRA...` (this build), e.g. with `--image embassy`.
    pub fn emu_args(board: &str, extra: &[&str]) -> Device {
        Device::emu_with(&linklab_bin(), board, extra)
    }

    /// `linklab emu BOARD EXTRA...` of the binary `bin` (which builds or finds its
    /// own image). A build other than this one may predate `linklab emu BOARD`:
    /// it gets the flags of before (`--board BOARD`, `--embassy` for `--image embassy`),
    /// which the builds of the round after still take.
    pub fn emu_with(bin: &Path, board: &str, extra: &[&str]) -> Device {
        let mut argv = vec!["emu", board, "--tap", "llfw0", "--ip", "198.18.0.2/24"];
        argv.extend_from_slice(extra);
        if bin != linklab_bin() {
            argv = old_spelling(&argv);
        }
        Device::start(
            bin,
            &board[..4],
            &argv,
            "llfw0",
            [0x02, 0x4c, 0x4c, 0, 0, 2],
        )
    }

    fn start(bin: &Path, tag: &str, args: &[&str], tap: &'static str, mac: [u8; 6]) -> Device {
        let turn = one_at_a_time();
        let ns = Netns::new(tag);
        let bin: PathBuf = bin.to_path_buf();
        let mut argv = vec![bin.to_str().expect("utf-8 path")];
        argv.extend_from_slice(args);
        let child = ns.spawn(&argv);
        let mut device = Device {
            child: Some(child),
            ns,
            tap,
            mac,
            _turn: turn,
        };
        // An emulator may first build its image.
        if !device
            .ns
            .host_side_of(tap, HOST_CIDR, Duration::from_secs(120))
        {
            device.fail("the TAP never appeared");
        }
        if !device.ns.answers_ping(DEVICE, Duration::from_secs(60)) {
            device.fail("the device never answered a ping");
        }
        device
    }

    /// Stops the device and panics with `why` and what it printed.
    fn fail(&mut self, why: &str) -> ! {
        let out = self
            .child
            .take()
            .expect("running")
            .interrupt(Duration::from_secs(10));
        panic!(
            "{why}; it said: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The device as spoofed frames address it.
    pub fn target(&self) -> Target {
        Target {
            mac: self.mac,
            ip: DEVICE_IP,
        }
    }

    /// Runs `argv` in the namespace; its stdout (panics if it fails).
    pub fn run(&self, argv: &[&str]) -> Vec<u8> {
        self.ns.run(argv).stdout
    }

    /// `curl -sS -o /dev/null -w %{http_code} EXTRA http://DEVICE/PATH`.
    pub fn curl(&self, extra: &[&str], path: &str) -> Output {
        let url = format!("http://{DEVICE}{path}");
        let mut argv = vec!["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}"];
        argv.extend_from_slice(extra);
        argv.push(&url);
        self.ns.command(&argv).output().expect("curl")
    }

    /// The device's `GET /stats`.
    pub fn stats(&self) -> Stats {
        let body = self.run(&[
            "curl",
            "-sS",
            "--max-time",
            "20",
            "--retry",
            "5",
            "--retry-connrefused",
            "--retry-delay",
            "1",
            &format!("http://{DEVICE}/stats"),
        ]);
        Stats::parse(&body)
    }

    /// Stock `iperf3 -c DEVICE -J` with `extra`; the report, checked for an error.
    pub fn iperf3(&self, extra: &[&str]) -> iperf3::Report {
        let mut argv = vec!["iperf3", "-c", DEVICE, "-J", "--connect-timeout", "5000"];
        argv.extend_from_slice(extra);
        let out = self.ns.command(&argv).output().expect("run iperf3");
        let report: iperf3::Report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "iperf3 {extra:?}: no report ({e}): {} {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(report.error.is_none(), "iperf3 {extra:?}: {report:?}");
        report
    }

    /// Stock `iperf3 -c DEVICE` with `extra`, in text, stopped after 20 s whatever it does:
    /// its exit status, what it printed (stdout and stderr) and how long it took. For the
    /// tests a device is to refuse.
    pub fn iperf3_text(&self, extra: &[&str]) -> (Option<i32>, String, std::time::Duration) {
        let mut argv = vec!["timeout", "20", "iperf3", "-c", DEVICE];
        argv.extend_from_slice(extra);
        let started = std::time::Instant::now();
        let out = self.ns.command(&argv).output().expect("run iperf3");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text, started.elapsed())
    }

    /// Sends raw Ethernet frames out of the kernel side of the TAP.
    pub fn inject(&self, frames: Vec<Vec<u8>>) {
        let tap = self.tap;
        in_netns(&self.ns, move || {
            let sender = RawSocket::open(tap);
            for f in &frames {
                sender.send(f);
            }
        });
    }

    /// Sends raw Ethernet frames out of the kernel side of the TAP, back to back, and returns
    /// the frames the device sent after them: up to the first for which `last` is true, or
    /// all it sent `within`.
    pub fn inject_and_read(
        &self,
        frames: Vec<Vec<u8>>,
        within: Duration,
        last: impl Fn(&[u8]) -> bool + Send + 'static,
    ) -> Vec<Vec<u8>> {
        let (tap, mac) = (self.tap, self.mac);
        in_netns(&self.ns, move || {
            let socket = RawSocket::listening(tap);
            for f in &frames {
                socket.send(f);
            }
            let until = Instant::now() + within;
            let mut got = Vec::new();
            while let Some(f) = socket.recv(until) {
                if f.get(6..12) == Some(&mac[..]) {
                    let done = last(&f);
                    got.push(f);
                    if done {
                        break;
                    }
                }
            }
            got
        })
    }

    /// Sends spoofed SYNs (built by `frame(i)`, i = 0, 1, ...) at `per_second` from a thread in
    /// the namespace, until `stop` is set (at most 60 s); the thread returns how many it sent.
    pub fn flood(
        &self,
        per_second: u32,
        stop: Arc<AtomicBool>,
        frame: impl Fn(u32) -> Vec<u8> + Send + 'static,
    ) -> JoinHandle<u32> {
        let path = format!("/run/netns/{}", self.ns.name);
        let tap = self.tap;
        std::thread::spawn(move || {
            enter_netns(&path);
            let sender = RawSocket::open(tap);
            let started = Instant::now();
            let mut sent = 0u32;
            while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(60) {
                // A full TAP queue (ENOBUFS) loses this one, as a real flood would.
                let _ = sender.try_send(&frame(sent));
                sent += 1;
                std::thread::sleep(Duration::from_secs(1) / per_second);
            }
            sent
        })
    }

    /// Stops the device with `signal` (SIGINT or SIGTERM); its stdout, once it exited.
    pub fn stop(&mut self, signal: i32) -> String {
        let mut child = self.child.take().expect("running").0.take().expect("child");
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        super::exit_within(&mut child, Duration::from_secs(15));
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "the device exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether the device's TAP exists in the namespace.
    fn has_tap(&self) -> bool {
        self.ns.has_link(self.tap)
    }

    /// Kills the device with SIGKILL (no chance to clean up) and asserts that what it started
    /// dies with it: every child process (an emulator) is gone within 3 s, and with it the TAP;
    /// and that it left no configuration blob in the temporary directory.
    pub fn kill_leaves_nothing(&mut self) {
        let mut child = self.child.take().expect("running").0.take().expect("child");
        let children = children_of(child.id());
        assert!(!children.is_empty(), "the device runs no child process");
        child.kill().expect("SIGKILL");
        child.wait().expect("wait");
        let gone = super::wait_until(Duration::from_secs(3), || {
            children.iter().all(|pid| !alive(*pid)) && !self.has_tap()
        });
        let left: Vec<_> = children.iter().filter(|p| alive(**p)).collect();
        assert!(gone, "left behind: processes {left:?}, or TAP {}", self.tap);
        let ours = format!("linklab-emu-{}-", child.id());
        let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
            .expect("the temporary directory")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(&ours))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

/// The child processes of `pid` (every thread's).
fn children_of(pid: u32) -> Vec<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("/proc/PID/task");
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Whether `pid` still runs (a zombie nobody reaped has stopped running).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// An AF_PACKET socket that writes whole Ethernet frames on one interface (and, opened with
/// [`RawSocket::listening`], reads every frame that crosses it).
struct RawSocket {
    fd: i32,
    addr: libc::sockaddr_ll,
}

impl RawSocket {
    fn open(ifname: &str) -> RawSocket {
        let name = std::ffi::CString::new(ifname).expect("interface name");
        // SAFETY: plain libc calls with valid pointers; the fd is ours and closed on drop.
        unsafe {
            let index = libc::if_nametoindex(name.as_ptr());
            assert!(index > 0, "no such interface {ifname}");
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            assert!(fd >= 0, "AF_PACKET: {}", std::io::Error::last_os_error());
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = index as i32;
            addr.sll_halen = 6;
            RawSocket { fd, addr }
        }
    }

    /// A socket on `ifname` that also reads every frame crossing it, both ways, from now on.
    fn listening(ifname: &str) -> RawSocket {
        let socket = RawSocket::open(ifname);
        let mut addr = socket.addr;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: bind(2) of our socket to a valid address.
        let bound = unsafe {
            libc::bind(
                socket.fd,
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
        socket
    }

    /// The next frame read before `until`; None once it passed.
    fn recv(&self, until: Instant) -> Option<Vec<u8>> {
        let left = until.checked_duration_since(Instant::now())?;
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) on one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, left.as_millis() as i32 + 1) } <= 0 {
            return None;
        }
        let mut buf = vec![0u8; 2048];
        // SAFETY: recv(2) into a buffer of its length on our socket.
        let n = unsafe { libc::recv(self.fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        buf.truncate(usize::try_from(n).ok()?);
        Some(buf)
    }

    fn send(&self, frame: &[u8]) {
        assert!(self.try_send(frame), "{}", std::io::Error::last_os_error());
    }

    /// Writes one frame; false if the kernel refused it.
    fn try_send(&self, frame: &[u8]) -> bool {
        // SAFETY: sendto(2) with a valid buffer and address on our socket.
        let n = unsafe {
            libc::sendto(
                self.fd,
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&self.addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        n == frame.len() as isize
    }
}

impl Drop for RawSocket {
    fn drop(&mut self) {
        // SAFETY: closing the socket we opened.
        unsafe { libc::close(self.fd) };
    }
}

/// `emu BOARD ...` in the older flags (`emu --board BOARD ...`).
fn old_spelling<'a>(argv: &[&'a str]) -> Vec<&'a str> {
    let mut old = vec![argv[0], "--board", argv[1]];
    let mut rest = argv[2..].iter();
    while let Some(&a) = rest.next() {
        match (a, rest.clone().next()) {
            ("--image", Some(&"embassy")) => {
                rest.next();
                old.push("--embassy");
            }
            ("--image", Some(&"serial")) => {
                rest.next();
                old.push("--serial");
            }
            ("--image", Some(&"soft-phy")) => {
                rest.next();
                old.push("--phy10-line");
            }
            _ => old.push(a),
        }
    }
    old
}
