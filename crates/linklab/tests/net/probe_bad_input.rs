//! `linklab probe` given bad input, each answered with one clear line: a name that does not
//! resolve, an address nobody has, a port that talks garbage, a busy iperf3 server, a server
//! that stalls mid-test (the report of what was measured is kept, within the bound), and bad
//! `--baseline` and `--http` arguments.
//!
//! Addresses come from 198.18.0.0/15 inside namespaces the tests create; these need root.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linklab_results::probe::ServiceState;
use linklab_testkit::probe::{finished, probe, stock_iperf3, two_hosts, Run};
use linklab_testkit::{assert_one_line_error, linklab_bin, tempdir, Netns};

/// A TCP server in `ns` on `port` that answers every connection with `garbage` and closes;
/// it stops when the returned flag is dropped.
fn garbage_server(ns: &Netns, port: u16, garbage: &'static [u8]) -> StopOnDrop {
    let path = format!("/run/netns/{}", ns.name);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("open netns");
        // SAFETY: setns(2) moves only this thread into the namespace.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0);
        let listener = TcpListener::bind(("0.0.0.0", port)).expect("bind");
        listener.set_nonblocking(true).unwrap();
        ready_tx.send(()).unwrap();
        while !flag.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut s, _)) => {
                    let _ = s.write_all(garbage);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    ready_rx.recv().unwrap();
    StopOnDrop(stop)
}

struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What a failed run must show: one line naming `what`, a non-zero exit, the ICMP round trips
/// measured before (or beside) the failure in a valid JSON and a page, within the bound.
fn assert_failed_with_report(run: &Run, what: &str, duration: u64) {
    assert_one_line_error(&run.out, what);
    assert_eq!(run.out.status.code(), Some(1));
    assert!(
        run.figure("icmp.rtt_p50.64B") > 0.0,
        "what was measured is kept"
    );
    assert!(!run.report().failures.is_empty());
    assert!(run.html.exists(), "the page of what was measured");
    assert!(
        run.wall < Duration::from_secs(duration + 10),
        "{:?}",
        run.wall
    );
}

#[test]
fn bad_input_is_one_clear_line_each() {
    std::thread::scope(|s| {
        // An unresolvable name (no resolver reachable in a fresh namespace) and an address
        // nobody has: one line, exit 1, no page.
        s.spawn(|| {
            let ns = Netns::new("prn");
            let run = probe(&ns, "unresolvable", "no-such-device.invalid", 10, &[], &[]);
            assert_one_line_error(&run.out, "cannot resolve \"no-such-device.invalid\"");
            assert!(run.json.is_none() && !run.html.exists());
            let (_h, p) = two_hosts("pru");
            let run = probe(&p, "unreachable", "198.18.40.99", 10, &[], &[]);
            assert_one_line_error(&run.out, "198.18.40.99 (198.18.40.99) answered none of");
            assert!(run.wall < Duration::from_secs(6), "{:?}", run.wall);
            assert!(run.json.is_none());
        });
        // A port that accepts and talks garbage.
        s.spawn(|| {
            let (h, p) = two_hosts("prg");
            let _garbage = garbage_server(&h, 5201, b"garbage\r\n");
            let run = probe(&p, "garbage", "198.18.40.1", 10, &[], &[]);
            assert_failed_with_report(&run, "iperf3 at 198.18.40.1:5201: not an iperf3 server", 10);
            assert_eq!(run.service("iperf3"), ServiceState::Failed);
        });
        // A busy stock iperf3 server (a test running): error 121, ACCESS_DENIED.
        s.spawn(|| {
            let (h, p) = two_hosts("prb");
            let _server = stock_iperf3(&h, &[]);
            let _busy = p.spawn(&["iperf3", "-c", "198.18.40.1", "-t", "30", "-b", "1M"]);
            std::thread::sleep(Duration::from_millis(800));
            let run = probe(&p, "busy", "198.18.40.1", 10, &[], &[]);
            assert_failed_with_report(&run, "the server is busy running a test", 10);
        });
        // A server that stalls mid-test: stock iperf3 stopped (SIGSTOP) as the TCP step begins.
        s.spawn(|| {
            let (h, p) = two_hosts("prs");
            let server = stock_iperf3(&h, &[]);
            let pid = server.0.as_ref().unwrap().id() as i32;
            let stalled = stall_when_tcp_begins(&p, pid, 15);
            assert_failed_with_report(&stalled, "iperf3 server 198.18.40.1:5201", 15);
            // SAFETY: kill(2) on the stock server this test started and stopped.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        });
        // Bad --baseline files: refused before anything is measured.
        s.spawn(|| {
            let dir = tempdir("probe-bad-baseline");
            let not_json = dir.join("not.json");
            std::fs::write(&not_json, "{ nope").unwrap();
            let other = dir.join("other.json");
            std::fs::write(&other, r#"{"kind": "probe", "schema_version": 99}"#).unwrap();
            let sweep = dir.join("sweep.json");
            std::fs::write(&sweep, r#"{"kind": "sweep"}"#).unwrap();
            for (file, what) in [
                (dir.join("missing.json"), "cannot read"),
                (not_json, "not valid JSON"),
                (
                    other,
                    "schema version 99, this linklab reads versions 1 to 4",
                ),
                (sweep, "not a linklab probe result"),
            ] {
                let out = Command::new(linklab_bin())
                    .args(["probe", "127.0.0.1", "--baseline"])
                    .arg(&file)
                    .arg("-o")
                    .arg(dir.join("never.html"))
                    .output()
                    .unwrap();
                assert_one_line_error(&out, what);
                assert_eq!(out.status.code(), Some(1));
            }
            assert!(!dir.join("never.html").exists());
            let out = Command::new(linklab_bin())
                .args(["probe", "127.0.0.1", "--http", "no-slash"])
                .output()
                .unwrap();
            assert_one_line_error(&out, "--http \"no-slash\"");
            assert_eq!(out.status.code(), Some(2), "a usage error");
        });
    });
}

/// Runs a probe from `p`, stopping process `pid` (the iperf3 server) once the probe says the
/// HTTP step is over (the TCP step is next).
fn stall_when_tcp_begins(p: &Netns, pid: i32, duration: u64) -> Run {
    let dir = tempdir("probe-stall");
    let json = dir.join("probe.json");
    let html = dir.join("probe.html");
    let bin = linklab_bin();
    let d = duration.to_string();
    let began = Instant::now();
    let mut child = p
        .command(&[
            bin.to_str().unwrap(),
            "probe",
            "198.18.40.1",
            "--duration",
            &d,
        ])
        .args([
            "--json",
            json.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read every line (a closed pipe would fail the probe's own printing), and stop the
    // server once the line of the HTTP step is out.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all += &line;
            all.push('\n');
        }
        all
    });
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(duration)) {
        if line.trim_start().starts_with("http ") {
            std::thread::sleep(Duration::from_millis(300));
            // SAFETY: kill(2) on the stock server this test started.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
            break;
        }
    }
    let mut child = child;
    let status = linklab_testkit::exit_within(&mut child, Duration::from_secs(duration + 10))
        .expect("the probe hung past its bound");
    let mut out = child.wait_with_output().unwrap();
    out.status = status;
    out.stdout = reader.join().unwrap().into_bytes();
    finished("stall", out, began.elapsed(), &json, html)
}
