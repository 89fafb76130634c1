//! Loopback TCP throughput of our host iperf3 server against stock `iperf3 -c`, side by side
//! with stock `iperf3 -s` against the same client, in one run; prints both and their ratio.
//!
//! `cargo bench -p linklab-perf-host --bench iperf_loopback` (env `IPERF_BENCH_SECONDS`, default 3,
//! `IPERF_BENCH_ROUNDS`, default 5, `IPERF_BENCH_ARGS`, extra iperf3 -c flags, e.g. "-P 4").
//! Rounds alternate between the two servers so drift in machine load hits both alike; the
//! figure per server is the median over rounds of the receiver's bit rate, and of the CPU
//! use the server reported to the client (`end.cpu_utilization_percent.remote_total`: the
//! server's `getrusage` user + system time over the test's wall time, iperf3's measure).

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linklab_perf_host::iperf3::Server;

const IPERF3: &str = "/usr/bin/iperf3";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let needle = format!(":{port:04X}");
    while Instant::now() < deadline {
        let t = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default()
            + &std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
        if t.lines().any(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            c.len() > 3 && c[1].ends_with(&needle) && c[3] == "0A"
        }) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nothing listens on {port}");
}

/// One test's figures: the receiver's bit/s and the server's CPU use, %.
type Figures = (f64, f64);

/// Runs stock `iperf3 -c` against `port`; returns the receiver's bit/s and the server's CPU %.
fn client(port: u16, secs: u32, extra: &[String]) -> Figures {
    let out = Command::new(IPERF3)
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-J",
            "-t",
            &secs.to_string(),
        ])
        .args(extra)
        .stderr(Stdio::null())
        .output()
        .expect("iperf3 runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("iperf3 -J output");
    if let Some(e) = v.get("error") {
        panic!("iperf3: {e}");
    }
    let bps = v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .expect("receiver rate");
    let cpu = v["end"]["cpu_utilization_percent"]["remote_total"]
        .as_f64()
        .expect("server CPU use");
    (bps, cpu)
}

fn ours(secs: u32, extra: &[String]) -> Figures {
    let mut server = Server::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = server.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let t = std::thread::spawn(move || server.serve_one_until(&stop2).unwrap().map(|o| o.is_ok()));
    let figures = client(port, secs, extra);
    // The client exits right after sending IPERF_DONE; let the server read it and finish
    // (stopping it at once would cut a complete test short on a loaded machine).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !t.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    assert_eq!(t.join().unwrap(), Some(true), "our server's test failed");
    figures
}

fn stock(secs: u32, extra: &[String]) -> Figures {
    let port = free_port();
    let mut child = Command::new(IPERF3)
        .args(["-s", "-1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s runs");
    wait_listening(port);
    let figures = client(port, secs, extra);
    let _ = child.wait();
    figures
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    // `cargo test --benches` runs bench binaries with no work to do quickly.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let env = |k: &str, d: u32| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let secs = env("IPERF_BENCH_SECONDS", 3);
    let rounds = env("IPERF_BENCH_ROUNDS", 5).max(1);
    let extra: Vec<String> = std::env::var("IPERF_BENCH_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut ca, mut cb) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let (x, y) = if r % 2 == 0 {
            (ours(secs, &extra), stock(secs, &extra))
        } else {
            let y = stock(secs, &extra);
            (ours(secs, &extra), y)
        };
        println!(
            "round {r}: linklab -s {:.2} Gbit/s ({:.1}% CPU), iperf3 -s {:.2} Gbit/s ({:.1}% CPU)",
            x.0 / 1e9,
            x.1,
            y.0 / 1e9,
            y.1
        );
        a.push(x.0);
        b.push(y.0);
        ca.push(x.1);
        cb.push(y.1);
    }
    let (ma, mb) = (median(&mut a), median(&mut b));
    let (mca, mcb) = (median(&mut ca), median(&mut cb));
    println!(
        "loopback TCP, stock iperf3 -c -t {secs} {}: linklab server {:.2} Gbit/s, iperf3 server {:.2} Gbit/s, ratio {:.3} (median of {rounds})",
        extra.join(" "),
        ma / 1e9,
        mb / 1e9,
        ma / mb
    );
    println!(
        "server CPU use (getrusage over wall time): linklab {mca:.1}%, iperf3 {mcb:.1}%, ratio {:.3}",
        mca / mcb
    );
}
