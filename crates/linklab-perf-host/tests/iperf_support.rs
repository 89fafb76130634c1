//! Shared helpers for the iperf3 integration tests: free ports, stock iperf3 processes
//! with guards that kill them, and our server in a thread.
#![allow(dead_code)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linklab_perf_host::iperf3::{Server, ServerOutcome, ServerStats};

/// Tests take turns: parallel traffic on a 2-core machine would make UDP drop for reasons
/// that have nothing to do with the code under test.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Path of stock iperf3.
pub const IPERF3: &str = "/usr/bin/iperf3";

/// A TCP port that was free a moment ago (and whose UDP twin is free too).
pub fn free_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Kills the child when dropped, so a failing test leaves no process behind.
pub struct ChildGuard(pub Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl ChildGuard {
    /// Waits up to `limit` for the child and returns (success, stdout).
    pub fn finish(mut self, limit: Duration) -> (bool, String) {
        let mut c = self.0.take().unwrap();
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                let mut out = String::new();
                c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
                return (st.success(), out);
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                let mut out = String::new();
                let _ = c.stdout.take().unwrap().read_to_string(&mut out);
                panic!("iperf3 did not finish within {limit:?}; output so far:\n{out}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Starts `iperf3 -c 127.0.0.1 -p port -J <args>`.
pub fn iperf3_client(port: u16, args: &[&str]) -> ChildGuard {
    let child = Command::new(IPERF3)
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-J"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 runs");
    ChildGuard(Some(child))
}

/// Starts `iperf3 -s -1 -p port -J` and waits until it listens.
pub fn iperf3_server(port: u16) -> ChildGuard {
    let child = Command::new(IPERF3)
        .args(["-s", "-1", "-J", "-p", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 runs");
    let g = ChildGuard(Some(child));
    wait_listening(port);
    g
}

/// Waits until something listens on TCP `port` (reads /proc/net/tcp*, so no probe
/// connection disturbs a one-shot server).
pub fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let needle = format!(":{port:04X} ");
    while Instant::now() < deadline {
        for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let t = std::fs::read_to_string(f).unwrap_or_default();
            if t.lines().any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && format!("{} ", cols[1]).contains(&needle) && cols[3] == "0A"
            }) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nothing listens on port {port}");
}

/// Our host server running in a thread; outcomes arrive on `outcomes`.
pub struct OurServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Set to stop it.
    pub stop: Arc<AtomicBool>,
    /// Its live counters.
    pub stats: Arc<ServerStats>,
    /// Each finished test.
    pub outcomes: mpsc::Receiver<ServerOutcome>,
    thread: Option<JoinHandle<()>>,
}

impl OurServer {
    /// Starts it on a free port with a 10 s watchdog.
    pub fn start() -> Self {
        Self::start_with_watchdog(Duration::from_secs(10))
    }

    /// Starts it on a free port with watchdog `wd`.
    pub fn start_with_watchdog(wd: Duration) -> Self {
        let port = free_port();
        let mut server = Server::bind(format!("127.0.0.1:{port}").parse().unwrap()).unwrap();
        server.set_watchdog(wd);
        let addr = server.local_addr().unwrap();
        let stats = server.stats();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            server
                .serve(&stop2, &mut |o| {
                    let _ = tx.send(o);
                })
                .unwrap();
        });
        Self {
            addr,
            stop,
            stats,
            outcomes: rx,
            thread: Some(thread),
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The next finished test, waiting up to `limit`.
    pub fn next(&self, limit: Duration) -> ServerOutcome {
        self.outcomes
            .recv_timeout(limit)
            .expect("server reports a test")
    }
}

impl Drop for OurServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A number at `path` (e.g. "end.sum_sent.bytes") in iperf3's JSON.
pub fn num(v: &serde_json::Value, path: &str) -> f64 {
    let mut cur = v;
    for k in path.split('.') {
        cur = &cur[k];
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("no number at {path} in iperf3 output"))
}

/// Parses iperf3 -J output, failing with the text if it is not JSON or reports an error.
pub fn parse_json(out: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(out)
        .unwrap_or_else(|e| panic!("iperf3 -J output is not JSON ({e}):\n{out}"));
    assert!(
        v.get("error").is_none(),
        "iperf3 reported an error: {}",
        v["error"]
    );
    v
}
