//! `linklab sweep` with our iperf3 client against stock `iperf3 -s`, over a veth shaped to
//! 200 Mbit/s with tbf, and its answers to bad input.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{
    assert_one_line_error, linklab_bin, linklab_in, tempdir, veth_pair, wait_until, ChildGuard,
    Netns,
};
use serde_json::Value;

/// The interface of `ns` that carries `addr`.
fn iface_with(ns: &Netns, addr: &str) -> String {
    let out = ns.run(&["ip", "-o", "-4", "addr", "show"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.lines()
        .find(|l| l.contains(&format!(" {addr}/")))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .unwrap_or_else(|| panic!("no interface with {addr}: {text}"))
}

/// Stock `iperf3 -s` in `a` (198.18.1.1), the client side `b` (198.18.2.2), and a router `r`
/// between them (198.18.1.254 / 198.18.2.254) where a bottleneck can be shaped. Shaping on the
/// router, not on the sender's own interface, matters: a local qdisc pushes back on the
/// sending socket, so the sender would slow down instead of losing datagrams on the way.
struct Path {
    a: Netns,
    b: Netns,
    r: Netns,
    _server: ChildGuard,
}

fn iperf_path(tag: &str) -> Path {
    let a = Netns::new(&format!("{tag}a"));
    let b = Netns::new(&format!("{tag}b"));
    let r = Netns::new(&format!("{tag}r"));
    veth_pair(&a, "198.18.1.1/24", &r, "198.18.1.254/24");
    veth_pair(&b, "198.18.2.2/24", &r, "198.18.2.254/24");
    a.run(&["ip", "route", "add", "default", "via", "198.18.1.254"]);
    b.run(&["ip", "route", "add", "default", "via", "198.18.2.254"]);
    r.run(&["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]);
    // Real-time priority for the server: on a loaded machine (parallel builds) a starved
    // receiver overflows its socket buffer (UdpRcvbufErrors) long before the link is full, and
    // the sweep would find the host's knee instead of the link's.
    let server = a.spawn(&["chrt", "-f", "20", "iperf3", "-s", "-p", "5201"]);
    let up = wait_until(Duration::from_secs(5), || {
        let out = a
            .command(&["ss", "-Hltn", "sport", "= :5201"])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    });
    assert!(up, "iperf3 -s did not start");
    Path {
        a,
        b,
        r,
        _server: server,
    }
}

/// Runs a sweep and returns its JSON.
fn sweep(b: &Netns, args: &[&str], json: &std::path::Path) -> Value {
    // Real-time priority for the sender too, so a stall on a loaded machine does not turn
    // into a catch-up burst that a sub-knee step loses.
    let bin = linklab_bin();
    let mut argv = vec![
        "chrt",
        "-f",
        "10",
        bin.to_str().unwrap(),
        "sweep",
        "-c",
        "198.18.1.1",
    ];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--json", json.to_str().unwrap()]);
    let out = b.command(&argv).output().expect("run linklab");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sweep failed: {stderr}\n{stdout}");
    eprintln!("{stdout}");
    assert!(
        !stderr.contains('\r'),
        "no progress bar when stderr is not a terminal: {stderr:?}"
    );
    serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap()
}

fn steps(v: &Value) -> Vec<(f64, f64, f64)> {
    v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["offered_bps"].as_f64().unwrap(),
                s["received_bps"].as_f64().unwrap(),
                s["loss_pct"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Checks a sweep over a 200 Mbit/s bottleneck: knee within ±15 %, loss rising above it, and
/// received throughput capped near the shaped rate.
fn check_knee(v: &Value, loss_from: f64) {
    let knee = v["knee_bps"].as_f64().expect("a knee was found");
    assert!(
        (170e6..=230e6).contains(&knee),
        "knee {knee} not within ±15 % of 200 Mbit/s"
    );
    let steps = steps(v);
    let above: Vec<_> = steps.iter().filter(|s| s.0 >= loss_from).collect();
    assert!(!above.is_empty());
    for s in &above {
        assert!(
            s.2 > 1.0,
            "offered {} should lose more than 1 %: {}",
            s.0,
            s.2
        );
        assert!(s.1 < 230e6, "received {} above the 200 Mbit/s shaping", s.1);
    }
    for w in above.windows(2) {
        assert!(
            w[1].2 > w[0].2,
            "loss rises with the offered rate above the knee: {w:?}"
        );
    }
    // Well below the knee the link carries everything; a scheduling stall on a loaded machine
    // can still cost a handful of datagrams, hence 1 % rather than the knee's 0.1 %.
    for s in steps.iter().filter(|s| s.0 <= 150e6) {
        assert!(
            s.2 < 1.0,
            "well below the knee almost nothing is lost: {s:?}"
        );
    }
    let peak = v["peak"]["received_bps"].as_f64().unwrap();
    assert!((170e6..=230e6).contains(&peak), "peak {peak}");
}

#[test]
fn knee_of_a_200_mbit_tbf_link_both_directions() {
    let p = iperf_path("swk");
    // The bottleneck: the router's egress toward the server (forward) and toward the client (-R).
    for addr in ["198.18.1.254", "198.18.2.254"] {
        let dev = iface_with(&p.r, addr);
        p.r.run(&[
            "tc", "qdisc", "add", "dev", &dev, "root", "tbf", "rate", "200mbit", "burst", "256kb",
            "latency", "20ms",
        ]);
    }
    let dir = tempdir("sweep-tbf");
    let fwd = sweep(
        &p.b,
        &[
            "--from", "50M", "--to", "400M", "--step", "50M", "-t", "1", "--refine", "3",
        ],
        &dir.join("fwd.json"),
    );
    assert_eq!(fwd["kind"], "sweep");
    assert_eq!(fwd["reverse"], false);
    check_knee(&fwd, 250e6);
    let rev = sweep(
        &p.b,
        &[
            "-R", "--from", "100M", "--to", "300M", "--step", "100M", "-t", "1", "--refine", "3",
        ],
        &dir.join("rev.json"),
    );
    assert_eq!(rev["reverse"], true);
    check_knee(&rev, 250e6);
    // Out-of-order is known when we receive (-R).
    assert!(rev["steps"][0]["out_of_order"].is_u64());
    drop(p.a);
}

#[test]
fn progress_bar_only_on_a_terminal() {
    let p = iperf_path("swt");
    let bin = linklab_bin();
    let cmd = format!(
        "{} sweep -c 198.18.1.1 --from 10M --to 20M --step 10M -t 1",
        bin.display()
    );
    // `script` gives the command a pseudo-terminal; its output is what the terminal showed.
    let out =
        p.b.command(&["script", "-qec", &cmd, "/dev/null"])
            .output()
            .unwrap();
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{tty}");
    assert!(
        tty.contains("\r[") && tty.contains("step 1/"),
        "no progress bar on a terminal: {tty:?}"
    );
    assert!(tty.contains("knee: 20.0 Mbit/s"), "{tty}");
    // Piped: no bar (checked in every `sweep` run of the other tests, and here).
    let piped = linklab_in(
        &p.b,
        &[
            "sweep",
            "-c",
            "198.18.1.1",
            "--from",
            "10M",
            "--to",
            "10M",
            "-t",
            "1",
        ],
    );
    assert!(piped.status.success());
    assert!(!String::from_utf8_lossy(&piped.stderr).contains('\r'));
    assert!(!String::from_utf8_lossy(&piped.stdout).contains('\r'));
}

#[test]
fn busy_server_is_one_clear_line() {
    let p = iperf_path("swb");
    let _busy = p.b.spawn(&["iperf3", "-c", "198.18.1.1", "-t", "8"]);
    std::thread::sleep(Duration::from_millis(700));
    let out = linklab_in(
        &p.b,
        &[
            "sweep",
            "-c",
            "198.18.1.1",
            "--from",
            "10M",
            "--to",
            "10M",
            "-t",
            "1",
        ],
    );
    assert_one_line_error(&out, "busy");
}

#[test]
fn unreachable_host_is_one_clear_line() {
    let p = iperf_path("swu");
    // In the client's subnet, but nobody has the address.
    let out = linklab_in(
        &p.b,
        &[
            "sweep",
            "-c",
            "198.18.2.99",
            "--from",
            "10M",
            "--to",
            "10M",
            "-t",
            "1",
        ],
    );
    assert_one_line_error(&out, "198.18.2.99:5201");
}

#[test]
fn rates_that_do_not_parse_are_one_clear_line() {
    for (flag, bad) in [
        ("--from", "fast"),
        ("--to", "1.5Q"),
        ("--step", "-5M"),
        ("--step", "0"),
    ] {
        let arg = format!("{flag}={bad}");
        let out = Command::new(linklab_bin())
            .args(["sweep", "-c", "127.0.0.1", &arg])
            .output()
            .unwrap();
        assert_one_line_error(&out, &format!("invalid value '{bad}' for '{flag} <RATE>'"));
        assert_eq!(out.status.code(), Some(2), "a usage error exits with 2");
    }
    let out = Command::new(linklab_bin())
        .args(["sweep", "-c", "127.0.0.1", "--from", "2G", "--to", "1G"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "--from");
}
