//! `linklab sweep --iperf 2`: the offered-rate sweep against stock iperf 2.1.8 (`iperf -s -u`)
//! — each step judged by the server's UDP report (to it) or by what we received (`-R`) —
//! through a 50 Mbit/s tbf on a router, both ways: the knee and the limit as for iperf3. And
//! against a server with no UDP reports, one clear line.
//!
//! Namespaces in 198.18.0.0/15; needs root.

use std::process::Stdio;
use std::time::Duration;

use linklab_results::sweep::{Limit, SweepReport};
use linklab_testkit::{
    assert_one_line_error, iface_with, linklab_bin, linklab_in, tempdir, veth_pair, wait_until,
    ChildGuard, Netns,
};

/// Server namespace `a` (198.18.3.1), client `b` (198.18.4.2), router `r` between them.
struct Path {
    _a: Netns,
    b: Netns,
    _r: Netns,
    _server: ChildGuard,
    log: std::path::PathBuf,
}

fn quiet(ns: &Netns, argv: &[&str]) -> ChildGuard {
    let child = ns
        .command(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {argv:?}: {e}"));
    ChildGuard(Some(child))
}

/// Stock `iperf -s` with `server_args` (e.g. `-u`) behind a router whose egress both ways is
/// a tbf at `rate` (none when `None`).
fn path(tag: &str, server_args: &[&str], rate: Option<&str>) -> Path {
    let a = Netns::new(&format!("{tag}a"));
    let b = Netns::new(&format!("{tag}b"));
    let r = Netns::new(&format!("{tag}r"));
    veth_pair(&a, "198.18.3.1/24", &r, "198.18.3.254/24");
    veth_pair(&b, "198.18.4.2/24", &r, "198.18.4.254/24");
    a.run(&["ip", "route", "add", "default", "via", "198.18.3.254"]);
    b.run(&["ip", "route", "add", "default", "via", "198.18.4.254"]);
    r.run(&["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]);
    if let Some(rate) = rate {
        for addr in ["198.18.3.254", "198.18.4.254"] {
            let dev = iface_with(&r, addr);
            r.run(&[
                "tc", "qdisc", "add", "dev", &dev, "root", "tbf", "rate", rate, "burst", "128kb",
                "latency", "50ms",
            ]);
        }
    }
    // The server's words go to a file, for a failure message.
    let log = tempdir(&format!("sweep-iperf2-{tag}")).join("server.log");
    let sh = format!(
        "exec chrt -f 20 iperf -s -p 5001 {} > {} 2>&1",
        server_args.join(" "),
        log.display()
    );
    let server = quiet(&a, &["sh", "-c", &sh]);
    let proto = if server_args.contains(&"-u") {
        "-Hlun"
    } else {
        "-Hltn"
    };
    let up = wait_until(Duration::from_secs(5), || {
        a.command(&["ss", proto, "sport", "= :5001"])
            .output()
            .is_ok_and(|o| !o.stdout.is_empty())
    });
    assert!(up, "stock iperf -s {server_args:?} did not start");
    Path {
        _a: a,
        b,
        _r: r,
        _server: server,
        log,
    }
}

/// A sweep from `p.b` (real-time priority, as tests/sweep.rs found necessary): its JSON and
/// text.
fn sweep(p: &Path, args: &[&str], json: &std::path::Path) -> (SweepReport, String) {
    let bin = linklab_bin();
    let priority = if args.contains(&"-R") { "30" } else { "10" };
    let mut argv = vec![
        "chrt",
        "-f",
        priority,
        bin.to_str().unwrap(),
        "sweep",
        "-c",
        "198.18.3.1",
        "--iperf",
        "2",
    ];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--json", json.to_str().unwrap()]);
    let out = p.b.command(&argv).output().expect("run linklab");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "sweep failed; stock iperf said:\n{}",
        std::fs::read_to_string(&p.log).unwrap_or_default()
    );
    (linklab_testkit::docs::read(json), stdout)
}

/// A 50 Mbit/s router tbf, each way: the knee within ±15 %, every step's datagrams counted by
/// the server's report (forward) or by us (-R), the limit above the knee named and confirmed.
/// A fresh stock server for each way: after a few lossy UDP tests stock 2.1.8's server
/// lingers in failed report acks (`WARNING: ack of last datagram failed`) and once hung on
/// the -R flow that came next (its log: the flow "connected", never reported; our retries
/// never reached it).
#[test]
fn knee_of_a_50_mbit_tbf_from_the_servers_reports_both_ways() {
    let dir = tempdir("sweep-iperf2");
    let rates = ["--from", "35M", "--to", "65M", "--step", "10M"];
    for (name, extra) in [("fwd", &[][..]), ("rev", &["-R"][..])] {
        let p = path(&format!("sw2{name}"), &["-u"], Some("50mbit"));
        let args = [&rates[..], &["-t", "1", "--refine", "2"], extra].concat();
        let (v, text) = sweep(&p, &args, &dir.join(format!("{name}.json")));
        assert_eq!(v.kind, "sweep");
        assert_eq!(v.iperf, "iperf2", "{name}");
        assert_eq!(v.port, 5001);
        assert!(
            text.starts_with("linklab sweep: 198.18.3.1:5001 iperf 2 udp"),
            "{text}"
        );
        let knee = v.knee_bps.expect("a knee");
        assert!(
            (42.5e6..=57.5e6).contains(&knee),
            "{name}: knee {knee} for a 50 Mbit/s tbf"
        );
        for s in &v.steps {
            assert!(s.packets > 0, "{name}: {s:?}");
            assert!(s.out_of_order.is_some(), "{name}: {s:?}");
            if s.offered_bps >= 60e6 {
                // The router's shaper loses the excess: the receiver counts it.
                assert!(s.limits.contains(&Limit::ReceiverLoss), "{name}: {s:?}");
                assert!(s.received_bps < 57.5e6, "{name}: {s:?}");
            }
        }
        let at = v.limited_at.as_ref().expect("a limit above the knee");
        assert!(at.offered_bps > knee, "{name}: {at:?}");
        assert!(at.confirmed, "{name}: {at:?}");
        assert!(
            text.contains("knee: ") && text.contains("limit: "),
            "{text}"
        );
    }
}

/// A stock `iperf -s` without `-u`: the first step gets no report — one line, exit 1, in a few
/// seconds, not a knee of 0; `--tcp` with `--iperf 2` is refused as usage.
#[test]
fn no_udp_reports_is_one_clear_line() {
    let p = path("sw2n", &[], None);
    let began = std::time::Instant::now();
    let out = linklab_in(
        &p.b,
        &[
            "sweep",
            "-c",
            "198.18.3.1",
            "--iperf",
            "2",
            "--from",
            "10M",
            "--to",
            "20M",
            "--step",
            "10M",
            "-t",
            "1",
        ],
    );
    assert_one_line_error(&out, "got no UDP report back");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    let out = linklab_in(
        &p.b,
        &["sweep", "-c", "198.18.3.1", "--iperf", "2", "--tcp"],
    );
    assert_one_line_error(&out, "--tcp: not with --iperf 2");
    assert_eq!(out.status.code(), Some(2));
}
