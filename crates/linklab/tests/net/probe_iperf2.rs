//! `linklab probe` finds an iperf 2 server where no iperf3 server answers, and measures what
//! it answers, saying which protocol each figure came from:
//!
//! - stock iperf 2.1.8 (`iperf -s` and `iperf -s -u` on 5001), behind a 50 Mbit/s tbf each
//!   way: it replies with its version, so TCP from it is `-R` on the one connection, and its
//!   UDP reports give a sweep — and a knee — each way;
//! - a device like ESP-IDF's or NuttX's iperf (a little server in the test: TCP read to the
//!   end, UDP counted, nothing answered, no connect-back): TCP to it measured, the rest a
//!   plain "absent" line each, exit 0, within the budget — never a zero or a hang.
//!
//! Namespaces in 198.18.0.0/15; needs root.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use linklab_results::probe::{ServiceState, Unmeasured};
use linklab_testkit::probe::probe;
use linklab_testkit::{enter_netns, iface_with, veth_pair, wait_until, ChildGuard, Netns};

/// A device namespace `d` (198.18.44.1) and the prober's `p` (198.18.44.2) on one veth.
fn pair(tag: &str) -> (Netns, Netns) {
    let d = Netns::new(&format!("{tag}d"));
    let p = Netns::new(&format!("{tag}p"));
    veth_pair(&d, "198.18.44.1/24", &p, "198.18.44.2/24");
    (d, p)
}

/// Starts `argv` in `ns` with its output discarded (a stock server's reports fill a pipe
/// nobody reads); killed on drop.
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

#[test]
fn stock_iperf2_both_ways_and_its_udp_reports() {
    let (d, p) = pair("pi2");
    for (ns, addr) in [(&d, "198.18.44.1"), (&p, "198.18.44.2")] {
        let dev = iface_with(ns, addr);
        ns.run(&[
            "tc", "qdisc", "add", "dev", &dev, "root", "tbf", "rate", "50mbit", "burst", "64kb",
            "latency", "50ms",
        ]);
    }
    let rt = ["chrt", "-f", "20"];
    // The TCP server's words, for a failure message.
    let tcp_log = linklab_testkit::tempdir("probe-iperf2-servers").join("tcp.log");
    let sh = format!(
        "exec chrt -f 20 iperf -s -p 5001 > {} 2>&1",
        tcp_log.display()
    );
    let _tcp = quiet(&d, &["sh", "-c", &sh]);
    let udp_log = tcp_log.with_file_name("udp.log");
    let sh = format!(
        "exec chrt -f 20 iperf -s -u -p 5001 > {} 2>&1",
        udp_log.display()
    );
    let _udp = quiet(&d, &["sh", "-c", &sh]);
    let up = wait_until(Duration::from_secs(5), || {
        let tcp = d.command(&["ss", "-Hltn", "sport", "= :5001"]).output();
        let udp = d.command(&["ss", "-Hlun", "sport", "= :5001"]).output();
        matches!((tcp, udp), (Ok(t), Ok(u)) if !t.stdout.is_empty() && !u.stdout.is_empty())
    });
    assert!(up, "stock iperf -s / -s -u did not start");
    let run = probe(&p, "iperf2", "198.18.44.1", 30, &[], &rt);
    assert_eq!(
        run.out.status.code(),
        Some(0),
        "{}\nstock iperf -s said:\n{}\nstock iperf -s -u said:\n{}",
        run.stderr(),
        std::fs::read_to_string(&tcp_log).unwrap_or_default(),
        std::fs::read_to_string(&udp_log).unwrap_or_default()
    );
    let v = run.report();

    assert_eq!(run.service("iperf3"), ServiceState::Absent);
    assert_eq!(run.service("iperf2"), ServiceState::Present);
    assert_eq!(
        run.service_entry("iperf2").version.as_deref(),
        Some("2.1.8")
    );
    assert!(run
        .stdout()
        .contains("TCP and UDP through iperf 2 on port 5001 (it sends its version: -R"));

    // TCP each way, through the shaper, with what measured it.
    let via = |id: &str| run.figure_of(id).via.clone().unwrap_or_default();
    assert_eq!(via("iperf2.tcp.to_device"), "iperf 2");
    assert_eq!(via("iperf2.tcp.from_device"), "iperf 2 -R");
    for id in ["iperf2.tcp.to_device", "iperf2.tcp.from_device"] {
        let r = run.figure(id);
        assert!(
            (20e6..=58e6).contains(&r),
            "{id} {r} through a 50 Mbit/s tbf"
        );
    }
    assert!(!run.has_figure("tcp.to_device"), "no iperf3 figure");

    // UDP: a sweep each way from the server's reports (to it) and what we received (-R),
    // every step with its datagrams counted, a knee near the shaper.
    for (way, sweep) in [
        ("to_device", &v.sweep_to_device),
        ("from_device", &v.sweep_from_device),
    ] {
        let sw = sweep.as_ref().unwrap_or_else(|| panic!("no sweep {way}"));
        assert_eq!(sw.iperf, "iperf2", "{way}");
        let steps = &sw.steps;
        assert!(steps.len() >= 2, "{way}: {steps:?}");
        for s in steps {
            assert!(s.packets > 0, "{way}: {s:?}");
            assert!(s.received_bps > 0.0, "{way}: {s:?}");
        }
        let id = format!("iperf2.udp.knee.{way}");
        let knee = run.figure(&id);
        assert!(
            knee > 0.0 && knee <= 58e6,
            "{id} {knee} through a 50 Mbit/s tbf"
        );
        assert!(via(&id).starts_with("iperf 2 -u"), "{id}: {}", via(&id));
    }
    assert!(v.not_measured.iter().all(|m| !m.id.starts_with("iperf2.")));
    let page = std::fs::read_to_string(&run.html).unwrap();
    assert!(page.contains(r#"data-iperf="iperf2""#) && page.contains("iperf 2 -R"));
}

/// A device whose iperf 2 server reads TCP to the end and counts UDP, answering nothing (as
/// ESP-IDF's and NuttX's do): TCP to it, and a plain line for the rest.
#[test]
fn a_device_without_reports_or_a_way_back() {
    let (d, p) = pair("pi2n");
    let stop = Arc::new(AtomicBool::new(false));
    let path = format!("/run/netns/{}", d.name);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let flag = Arc::clone(&stop);
    std::thread::spawn(move || {
        enter_netns(&path);
        let tcp = TcpListener::bind(("0.0.0.0", 5001)).expect("bind TCP 5001");
        let udp = UdpSocket::bind(("0.0.0.0", 5001)).expect("bind UDP 5001");
        tcp.set_nonblocking(true).unwrap();
        udp.set_nonblocking(true).unwrap();
        ready_tx.send(()).unwrap();
        let mut buf = vec![0u8; 65536];
        while !flag.load(Ordering::Relaxed) {
            if let Ok((mut s, _)) = tcp.accept() {
                std::thread::spawn(move || {
                    let _ = s.set_nonblocking(false);
                    let mut sink = vec![0u8; 65536];
                    while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
                });
            }
            while udp.recv_from(&mut buf).is_ok() {}
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    ready_rx.recv().unwrap();
    let run = probe(&p, "iperf2-silent", "198.18.44.1", 15, &[], &[]);
    stop.store(true, Ordering::Relaxed);
    assert_eq!(run.out.status.code(), Some(0), "{}", run.stderr());
    assert!(run.wall < Duration::from_secs(17), "{:?}", run.wall);
    assert_eq!(run.service("iperf2"), ServiceState::Present);
    assert!(run.service_entry("iperf2").version.is_none());
    assert!(run.figure("iperf2.tcp.to_device") > 1e6);
    for (id, says) in [
        ("iperf2.tcp.from_device", "did not connect back for -r"),
        ("iperf2.udp.knee.to_device", "got no UDP report back"),
        ("iperf2.udp.knee.from_device", "no UDP report to the device"),
    ] {
        assert!(!run.has_figure(id), "{id}");
        let m = run.not_measured(id);
        assert_eq!(m.state, Unmeasured::Absent, "{m:?}");
        assert!(m.reason.contains(says), "{m:?}");
        let line = run
            .stdout()
            .lines()
            .find(|l| l.contains(&m.label))
            .unwrap_or_else(|| panic!("no line for {id}"))
            .to_string();
        assert!(
            line.contains(" absent ") && line.ends_with("(no figure)"),
            "{line}"
        );
    }
}
