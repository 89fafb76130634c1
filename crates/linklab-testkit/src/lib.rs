//! What linklab's integration tests and benches share, compiled once: network namespaces the
//! test creates and deletes, veth pairs between them, child processes that are killed when the
//! test ends, stock peers, ping, the pty relay, holders, spoofing, paced clients, the
//! PostgreSQL helper, probe runs, the pin-level boards, and documents read through their
//! types ([`docs`]).
//!
//! Every address used lives in 198.18.0.0/15 (RFC 2544) inside a namespace; nothing leaves it.
//!
//! The CLI's test harnesses (`crates/linklab/tests/<harness>/main.rs`) and benches use it as
//! `linklab_testkit`; CONTRIBUTING.md says how to add a test.

pub mod clients;
pub mod device;
pub mod docs;
pub mod emulated_clock;
pub mod holders;
pub mod hostile;
pub mod iperf2;
pub mod iperf3;
pub mod paced;
pub mod pg_server;
pub mod ping;
pub mod probe;
pub mod pty_relay;
pub mod rp2040js;
pub mod spoof;
pub mod stats;
pub mod track;
pub mod usb;
pub mod w5500_spi;
pub mod wire_rtt;

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use stats::Stats;

/// The `linklab` binary built for these tests: the path cargo or nextest gives the test at
/// run time (`CARGO_BIN_EXE_linklab`, `NEXTEST_BIN_EXE_linklab`), else the `linklab` beside
/// the running test's `deps/` folder, where cargo builds it for the CLI's tests and benches.
pub fn linklab_bin() -> PathBuf {
    for var in ["CARGO_BIN_EXE_linklab", "NEXTEST_BIN_EXE_linklab"] {
        if let Some(path) = std::env::var_os(var) {
            return PathBuf::from(path);
        }
    }
    let bin = profile_dir().join("linklab");
    assert!(
        bin.is_file(),
        "no linklab binary at {} (run this through `cargo test -p linklab` or `cargo nextest \
         run`, which build it)",
        bin.display()
    );
    bin
}

/// The cargo profile folder of the running test or bench (`target/debug`, `target/release`):
/// its executable lives in `deps/` below it.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let deps = exe.parent().expect("the test's folder");
    deps.parent().unwrap_or(deps).to_path_buf()
}

/// The target folder's scratch space for tests (`target/tmp`, cargo's
/// `CARGO_TARGET_TMPDIR`), created when missing.
pub fn target_tmpdir() -> PathBuf {
    let profile = profile_dir();
    let dir = profile.parent().unwrap_or(&profile).join("tmp");
    std::fs::create_dir_all(&dir).expect("the target's tmp folder");
    dir
}

/// A TCP port free on every address a moment ago, whose UDP twin is free too.
pub fn free_port() -> u16 {
    loop {
        let l = std::net::TcpListener::bind("[::]:0").unwrap();
        let port = l.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(("::", port)).is_ok() {
            return port;
        }
    }
}

/// True if something listens on TCP `port` (reads /proc/net/tcp*, so no probe connection
/// takes a one-shot server's test).
pub fn listening(port: u16) -> bool {
    let needle = format!(":{port:04X}");
    let t = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default()
        + &std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    t.lines().any(|l| {
        let c: Vec<&str> = l.split_whitespace().collect();
        c.len() > 3 && c[1].ends_with(&needle) && c[3] == "0A"
    })
}

/// Runs a command to completion and panics with its output when it fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A network namespace created for one test and deleted (with its interfaces) on drop.
pub struct Netns {
    /// The namespace name, as `ip netns` knows it.
    pub name: String,
}

impl Netns {
    /// Creates a fresh namespace with a unique name and brings its loopback up.
    pub fn new(tag: &str) -> Netns {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("ll-{tag}-{}-{n}", std::process::id());
        run_ok(Command::new("ip").args(["netns", "add", &name]));
        let ns = Netns { name };
        ns.run(&["ip", "link", "set", "lo", "up"]);
        ns
    }

    /// Caps TCP receive buffers in this namespace at 16 kB, so a download is paced by its
    /// reader: the kernel would otherwise take in a whole bench file at once, ending the
    /// download on the device's side while the reader still reads. Returns the setting it
    /// replaced, for [`Netns::set_receive_buffers`].
    pub fn small_receive_buffers(&self) -> String {
        let rmem = self.run(&["sysctl", "-n", "net.ipv4.tcp_rmem"]).stdout;
        let rmem = String::from_utf8(rmem)
            .expect("sysctl's output")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        self.set_receive_buffers("4096 16384 16384");
        rmem
    }

    /// Sets `net.ipv4.tcp_rmem` (min, default, max) in this namespace.
    pub fn set_receive_buffers(&self, rmem: &str) {
        self.run(&["sysctl", "-q", "-w", &format!("net.ipv4.tcp_rmem={rmem}")]);
    }

    /// A command that runs `argv` inside this namespace.
    pub fn command(&self, argv: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name]).args(argv);
        cmd
    }

    /// Runs `argv` inside this namespace and panics if it fails.
    pub fn run(&self, argv: &[&str]) -> Output {
        run_ok(&mut self.command(argv))
    }

    /// True when interface `name` exists in this namespace.
    pub fn has_link(&self, name: &str) -> bool {
        self.command(&["ip", "link", "show", name])
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Waits up to `within` for the TAP `tap` (made by a device starting in this namespace),
    /// then gives it the host's side of the device's subnet (`host_cidr`, up); false when it
    /// never appeared.
    pub fn host_side_of(&self, tap: &str, host_cidr: &str, within: Duration) -> bool {
        if !wait_until(within, || self.has_link(tap)) {
            return false;
        }
        self.run(&["ip", "addr", "add", host_cidr, "dev", tap]);
        self.run(&["ip", "link", "set", tap, "up"]);
        true
    }

    /// Waits up to `within` for `addr` to answer one ping from this namespace.
    pub fn answers_ping(&self, addr: &str, within: Duration) -> bool {
        wait_until(within, || {
            self.command(&["ping", "-c", "1", "-W", "1", addr])
                .output()
                .is_ok_and(|o| o.status.success())
        })
    }

    /// Starts `argv` inside this namespace in the background; it is killed on drop.
    pub fn spawn(&self, argv: &[&str]) -> ChildGuard {
        let child = self
            .command(argv)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {argv:?}: {e}"));
        ChildGuard(Some(child))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// Joins two namespaces with a veth pair; `a_addr` and `b_addr` are `ADDR/PREFIX`.
pub fn veth_pair(a: &Netns, a_addr: &str, b: &Netns, b_addr: &str) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let (ia, ib) = (
        format!("va{}x{n}", std::process::id() % 100000),
        format!("vb{}x{n}", std::process::id() % 100000),
    );
    a.run(&[
        "ip", "link", "add", &ia, "type", "veth", "peer", "name", &ib,
    ]);
    a.run(&["ip", "link", "set", &ib, "netns", &b.name]);
    a.run(&["ip", "addr", "add", a_addr, "dev", &ia]);
    b.run(&["ip", "addr", "add", b_addr, "dev", &ib]);
    a.run(&["ip", "link", "set", &ia, "up"]);
    b.run(&["ip", "link", "set", &ib, "up"]);
}

/// The interface of `ns` that carries `addr`.
pub fn iface_with(ns: &Netns, addr: &str) -> String {
    let out = ns.run(&["ip", "-o", "-4", "addr", "show"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.lines()
        .find(|l| l.contains(&format!(" {addr}/")))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .unwrap_or_else(|| panic!("no interface with {addr}: {text}"))
}

/// A background child process that is stopped (and reaped) when dropped: SIGTERM, so a
/// `linklab` process removes what it made (its TAP, the config blob `linklab emu` leaves
/// in the temporary directory), then SIGKILL if it has not exited within 3 s.
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    /// Sends SIGINT and waits up to `timeout` for the process to exit; returns its output.
    pub fn interrupt(mut self, timeout: Duration) -> Output {
        let mut child = self.0.take().expect("child present");
        // SAFETY: a signal to our own child, not yet reaped (its pid is still ours).
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
        }
        let exited = exit_within(&mut child, timeout).is_some();
        let out = child.wait_with_output().expect("wait_with_output");
        if exited {
            return out;
        }
        panic!(
            "process did not exit within {timeout:?} of SIGINT\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            if !matches!(child.try_wait(), Ok(None)) {
                return; // Exited and reaped already (or not ours to wait for).
            }
            // SAFETY: a signal to our own child, not yet reaped (its pid is still ours).
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            exit_within(&mut child, Duration::from_secs(3));
        }
    }
}

/// Waits up to `within` for `child` to exit: its status, or None when it did not (it is then
/// killed and reaped; its output pipes can still be read).
pub fn exit_within(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    if wait_until(within, || child.try_wait().expect("try_wait").is_some()) {
        // The status try_wait saw is kept by `child`.
        return child.try_wait().expect("try_wait");
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Polls `f` every 20 ms until it returns true or `timeout` passes.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Runs `linklab ARGS` inside `ns` to completion.
pub fn linklab_in(ns: &Netns, args: &[&str]) -> Output {
    let bin = linklab_bin();
    let mut argv = vec![bin.to_str().expect("utf-8 path")];
    argv.extend_from_slice(args);
    ns.command(&argv).output().expect("run linklab")
}

/// The CLI's error contract: non-zero exit, one line `linklab: error: ...` on stderr that
/// contains `must_contain`, no panic or backtrace.
pub fn assert_one_line_error(out: &Output, must_contain: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got: {stderr}");
    assert!(lines[0].starts_with("linklab: error: "), "{stderr}");
    assert!(
        lines[0].contains(must_contain),
        "expected {must_contain:?} in: {stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );
}

/// A fresh directory under the cargo target dir for one test's files.
pub fn tempdir(name: &str) -> PathBuf {
    let dir = target_tmpdir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the test directory");
    dir
}

/// Runs `f` on a thread that has entered the namespace `ns`, so std sockets reach the device.
pub fn in_netns<T: Send + 'static>(ns: &Netns, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{}", ns.name);
    std::thread::spawn(move || {
        enter_netns(&path);
        f()
    })
    .join()
    .expect("netns thread")
}

/// Moves the calling thread into the namespace at `path` (`/run/netns/NAME`), so the sockets
/// it opens from then on live there.
pub fn enter_netns(path: &str) {
    let file = File::open(path).expect("open netns");
    // SAFETY: setns(2) moves only this thread into the namespace.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
}

/// Bytes `key` (`sum_received`, `sum_sent`, ...) of an iperf3 report's end section.
pub fn end_bytes(report: &iperf3::Report, key: &str) -> u64 {
    report.end_bytes(key)
}

/// App counter `app.name` of a /stats document.
pub fn counter(stats: &Stats, app: &str, name: &str) -> u64 {
    stats.counter(app, name)
}

/// A counter from the `mac` section of /stats.
pub fn mac_counter(stats: &Stats, name: &str) -> u64 {
    stats.counter("mac", name)
}

/// Asserts the RX conservation law on /stats, recomputed here from the counters: every
/// frame the TAP delivered ends in exactly one bucket (and the device agrees).
pub fn assert_conserved(stats: &Stats) {
    assert!(
        stats.flag("conservation", "holds"),
        "device reports a broken law: {stats}"
    );
    let buckets = [
        "rx_packets",
        "rx_pause_frames",
        "rx_filtered",
        "rx_frame_errors",
        "rx_crc_errors",
        "rx_short_length_errors",
        "rx_long_length_errors",
        "rx_missed_errors",
        "rx_checksum_errors",
        "rx_pending",
    ];
    let accounted: u64 = buckets.iter().map(|b| mac_counter(stats, b)).sum();
    assert_eq!(
        mac_counter(stats, "rx_transmissions"),
        accounted,
        "buckets do not add up: {stats}"
    );
    assert_eq!(
        mac_counter(stats, "rx_committed") + mac_counter(stats, "rx_missed_errors"),
        mac_counter(stats, "rx_transmissions")
    );
    assert_eq!(
        mac_counter(stats, "tx_requests"),
        mac_counter(stats, "tx_packets")
            + mac_counter(stats, "tx_dropped")
            + mac_counter(stats, "tx_deferred")
    );
}

/// Runs `cmd` with a deadline; kills it and panics when the deadline passes.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let pid = child.id();
    let deadline = Instant::now() + limit;
    let waiter = std::thread::spawn(move || child.wait_with_output().expect("wait"));
    while !waiter.is_finished() {
        if Instant::now() > deadline {
            // SAFETY: plain kill(2) of our own child.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            let _ = waiter.join();
            panic!("{cmd:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    waiter.join().unwrap()
}

/// Headless Chromium with a fresh profile, no network services; `extra` picks the output.
pub fn chromium(page: &Path, extra: &[&str]) -> Output {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let profile = target_tmpdir().join(format!(
        "chromium-profile-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&profile);
    let mut cmd = Command::new("/usr/bin/chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(format!("file://{}", page.display()));
    let out = run_bounded(&mut cmd, Duration::from_secs(90));
    let _ = std::fs::remove_dir_all(&profile);
    out
}

/// `(data-chart, data-points, data-drawn)` of every chart in a dumped DOM.
pub fn charts(dom: &str) -> Vec<(String, usize, usize)> {
    let attr = |tag: &str, name: &str| -> Option<String> {
        let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(tag[start..].split('"').next()?.to_string())
    };
    dom.match_indices("<svg ")
        .filter_map(|(i, _)| {
            let tag = &dom[i..i + dom[i..].find('>')?];
            let id = attr(tag, "data-chart")?;
            let points = attr(tag, "data-points")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let drawn = attr(tag, "data-drawn")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            Some((id, points, drawn))
        })
        .collect()
}
