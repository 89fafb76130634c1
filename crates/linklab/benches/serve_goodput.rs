//! TCP goodput of the soft NIC (`linklab serve`) measured by stock `iperf3 -c` (and `-R`),
//! side by side in one run with
//! (a) the bare smoltcp baseline: smoltcp's own `TunTapInterface` running the same
//!     linklab-perf iperf3 server (a TCP sink socket that speaks iperf3's control protocol),
//!     same socket buffers, same firmware-shaped loop, no linklab-mac in the path;
//! (b) the kernel ceiling: `iperf3 -s` on the far end of a veth pair.
//!
//! Needs root (namespaces, TAP). Run: `cargo bench -p linklab --bench serve_goodput`.
//! `LINKLAB_BENCH_SECS` sets the iperf3 duration (default 3 s), `LINKLAB_BENCH_REPS` the runs
//! per setup (default 3; the median is reported).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "serve_goodput/baseline.rs"]
mod baseline;

use std::process::Command;
use std::time::Duration;

use common::{linklab_bin, veth_pair, ChildGuard, Netns};
use serde_json::Value;

/// One measured direction: goodput in Mbit/s as the receiving end saw it.
fn goodput(ns: &Netns, server: &str, secs: u32, reverse: bool) -> f64 {
    let secs = secs.to_string();
    let mut argv = vec!["timeout", "60", "iperf3", "-c", server, "-t", &secs, "-J", "--connect-timeout", "5000"];
    if reverse {
        argv.push("-R");
    }
    let out = ns.command(&argv).output().expect("run iperf3");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("iperf3 JSON: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert!(report.get("error").is_none(), "iperf3 failed: {}", report["error"]);
    report["end"]["sum_received"]["bits_per_second"].as_f64().expect("bits_per_second") / 1e6
}

/// Puts the kernel side of `tap` at 198.18.0.1/24 once the TAP exists.
fn configure_host_side(ns: &Netns, tap: &str, device_ip: &str) {
    let up = common::wait_until(Duration::from_secs(10), || ns.command(&["ip", "link", "show", tap]).output().map(|o| o.status.success()).unwrap_or(false));
    assert!(up, "TAP {tap} never appeared");
    ns.run(&["ip", "addr", "add", "198.18.0.1/24", "dev", tap]);
    ns.run(&["ip", "link", "set", tap, "up"]);
    let ok = common::wait_until(Duration::from_secs(10), || ns.command(&["ping", "-c", "1", "-W", "1", device_ip]).output().map(|o| o.status.success()).unwrap_or(false));
    assert!(ok, "{device_ip} does not answer ping");
}

/// The soft NIC: `linklab serve` with the given window and queue.
fn soft_nic(secs: u32, rx_frames: &str, window: &str) -> (f64, f64) {
    let ns = Netns::new("bsoft");
    let bin = linklab_bin();
    let child: ChildGuard = ns.spawn(&[bin.to_str().unwrap(), "serve", "--tap", "ll0", "--ip", "198.18.0.2/24", "--rx-frames", rx_frames, "--tcp-window", window]);
    configure_host_side(&ns, "ll0", "198.18.0.2");
    let fwd = goodput(&ns, "198.18.0.2", secs, false);
    let rev = goodput(&ns, "198.18.0.2", secs, true);
    let out = child.interrupt(Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out.stdout);
    let missed = text.split_whitespace().find_map(|w| w.strip_prefix("rx_missed_errors=")).unwrap_or("?");
    eprintln!("soft NIC --rx-frames {rx_frames} --tcp-window {window}: rx_missed_errors={missed}, conservation {}", if text.contains("conservation=ok") { "ok" } else { "BROKEN" });
    (fwd, rev)
}

/// The bare smoltcp baseline on smoltcp's TunTapInterface, same app and window.
fn smoltcp_baseline(secs: u32, window: usize) -> (f64, f64) {
    let ns = Netns::new("bbase");
    let server = baseline::start(&ns.name, "ll0", window);
    configure_host_side(&ns, "ll0", "198.18.0.2");
    let fwd = goodput(&ns, "198.18.0.2", secs, false);
    let rev = goodput(&ns, "198.18.0.2", secs, true);
    server.stop();
    (fwd, rev)
}

/// The kernel ceiling: iperf3 -s at the far end of a veth pair.
fn kernel_ceiling(secs: u32) -> (f64, f64) {
    let client = Netns::new("bkc");
    let far = Netns::new("bks");
    veth_pair(&client, "198.18.1.1/24", &far, "198.18.1.2/24");
    let _server = far.spawn(&["iperf3", "-s"]);
    let ready = common::wait_until(Duration::from_secs(5), || far.command(&["ss", "-ltn", "sport = :5201"]).output().map(|o| String::from_utf8_lossy(&o.stdout).contains("5201")).unwrap_or(false));
    assert!(ready, "iperf3 -s did not start");
    (goodput(&client, "198.18.1.2", secs, false), goodput(&client, "198.18.1.2", secs, true))
}

/// The median of a few runs (the machine is shared, single runs are noisy).
fn median(mut runs: Vec<f64>) -> f64 {
    runs.sort_by(|a, b| a.total_cmp(b));
    runs[runs.len() / 2]
}

/// Formats runs as `a / b / c`.
fn list(runs: &[f64]) -> String {
    runs.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>().join(" / ")
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("serve_goodput: needs root (network namespaces and TAP devices); skipped");
        return;
    }
    let env = |name: &str, default: u32| std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    let secs = env("LINKLAB_BENCH_SECS", 3);
    let reps = env("LINKLAB_BENCH_REPS", 3).max(1);
    let iperf3 = Command::new("iperf3").arg("--version").output().expect("iperf3 installed");
    println!("client: {}", String::from_utf8_lossy(&iperf3.stdout).lines().next().unwrap_or("?"));
    println!("iperf3 -t {secs}, TCP goodput at the receiver in Mbit/s, median of {reps} alternating runs\n");

    let mut kernel = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let (f, r) = kernel_ceiling(secs);
        kernel.0.push(f);
        kernel.1.push(r);
    }
    let kernel_med = (median(kernel.0.clone()), median(kernel.1.clone()));
    let row = |name: &str, runs: &(Vec<f64>, Vec<f64>)| {
        println!("{name:<50} {:>8.0} {:>8.0}   runs -c: {}; -R: {}", median(runs.0.clone()), median(runs.1.clone()), list(&runs.0), list(&runs.1));
    };
    println!("{:<50} {:>8} {:>8}", "setup", "-c", "-c -R");
    row("kernel ceiling (iperf3 -s over veth)", &kernel);
    for (frames, window) in [("32", 43_800usize), ("256", 65_535usize)] {
        let (mut base, mut soft) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
        for _ in 0..reps {
            let b = smoltcp_baseline(secs, window);
            base.0.push(b.0);
            base.1.push(b.1);
            let s = soft_nic(secs, frames, &window.to_string());
            soft.0.push(s.0);
            soft.1.push(s.1);
        }
        row(&format!("smoltcp TunTapInterface, window {window}"), &base);
        row(&format!("linklab serve --rx-frames {frames} --tcp-window {window}"), &soft);
        let (sf, sr) = (median(soft.0.clone()), median(soft.1.clone()));
        println!("{:<50} {:>8.2} {:>8.2}", "  soft NIC / smoltcp baseline", sf / median(base.0.clone()), sr / median(base.1.clone()));
        println!("{:<50} {:>8.3} {:>8.3}", "  soft NIC / kernel ceiling", sf / kernel_med.0, sr / kernel_med.1);
    }
}
