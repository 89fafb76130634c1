//! `linklab probe`'s latency under load against the soft NIC (`linklab serve` on a TAP in a
//! namespace): behind a token bucket with a deep queue (`tbf ... latency 400ms`) the round
//! trip while TCP runs to the device rises by about the queue's delay and the summary says so
//! in words, while the same device unshaped holds its latency; a flow cut for 2 s (a `pfifo
//! limit 0` queue added and removed with tc: this kernel has no netem) is a stall at the time of the cut, with the host's
//! retransmissions beside it and every ping of the cut counted lost; `--repeat` keeps each
//! figure across the runs; `linklab report` lays the runs side by side; bad input is one line.
//!
//! The bounds are physical, not timings of this machine: a tbf queue holds at most its
//! `latency` of data (400 ms), and a TCP flow whose window exceeds it keeps it between about
//! half full (after a loss) and full; an unshaped soft NIC's queue is its window at the host's
//! speed, milliseconds at most. Addresses come from 198.18.0.0/15; these need root.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use linklab_results::probe::latency::LoadRtt;
use linklab_results::probe::{LatencyUnderLoad, ProbeReport};
use linklab_testkit::probe::{finished, probe, tap_device, Run};
use linklab_testkit::{
    assert_one_line_error, charts, iface_with, linklab_bin, run_bounded, tempdir, veth_pair,
    wait_until, ChildGuard, Netns,
};

/// The soft NIC with a window larger than the shaper's queue (so the queue, not the window,
/// bounds what waits).
const SERVE: [&str; 3] = ["serve", "--tcp-window", "262144"];

/// The device (`args`) on a TAP in namespace `r`, reached from a prober's namespace through
/// `r` (proxy ARP: the prober is 198.18.0.3 on the device's subnet): a queue or a cut on the
/// TAP is in the path, not in the prober's own stack (whose TCP would see a local drop as
/// back-pressure rather than loss). Returns (router, prober, device).
fn routed_device(tag: &str, tap: &str, args: &[&str]) -> (Netns, Netns, ChildGuard) {
    let (r, device) = tap_device(tag, tap, args, Duration::from_secs(10));
    let p = Netns::new(&format!("{tag}p"));
    veth_pair(&r, "198.18.1.1/24", &p, "198.18.0.3/24");
    let link = iface_with(&r, "198.18.1.1");
    r.run(&["ip", "route", "add", "198.18.0.3/32", "dev", &link]);
    for key in ["net.ipv4.ip_forward=1", "net.ipv4.conf.all.proxy_arp=1"] {
        r.run(&["sysctl", "-q", "-w", key]);
    }
    for dev in [tap, link.as_str()] {
        r.run(&[
            "sysctl",
            "-q",
            "-w",
            &format!("net.ipv4.conf.{dev}.proxy_arp=1"),
        ]);
    }
    let answered = wait_until(Duration::from_secs(10), || {
        p.command(&["ping", "-c", "1", "-W", "1", "198.18.0.2"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    assert!(
        answered,
        "the device never answered the prober through the router"
    );
    (r, p, device)
}

/// The run's latency section.
fn latency(run: &Run) -> &LatencyUnderLoad {
    run.report().latency.as_ref().expect("a latency section")
}

/// The ICMP figures of `load` in the run's latency section.
fn icmp<'r>(run: &'r Run, load: &str) -> &'r LoadRtt {
    let l = latency(run);
    let t = l
        .round_trips
        .iter()
        .find(|t| t.transport == "icmp")
        .unwrap_or_else(|| panic!("no ICMP series: {l:?}"));
    t.per_load
        .iter()
        .find(|p| p.load == load)
        .unwrap_or_else(|| panic!("no {load}: {:?}", t.per_load))
}

/// A run of the latency step alone that ran every load and sampled every transport.
fn assert_latency_ran(run: &Run) {
    assert!(run.out.status.success(), "probe failed: {}", run.stderr());
    let l = latency(run);
    let names: Vec<&str> = l.loads.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["idle", "to_device", "from_device", "both"], "{l:?}");
    for x in l.loads.iter().skip(1) {
        assert!(x.error.is_none(), "{x:?}");
        assert!(x.intervals.len() >= 5, "{x:?}");
        assert!(x.end_s > x.start_s);
    }
    assert_eq!(l.round_trips.len(), 3, "ICMP, UDP and TCP echo");
    let c = run.report().conditions.as_ref().expect("conditions");
    assert!(
        c.interface.as_ref().is_some_and(|i| i.starts_with("vb")),
        "the prober's veth: {c:?}"
    );
    assert!(c.kernel.as_ref().is_some_and(|k| !k.is_empty()), "{c:?}");
    assert!(c.mtu.is_some(), "{c:?}");
    let window = c.device.as_ref().and_then(|d| d.tcp_window);
    assert!(window == Some(262_144), "{c:?}");
}

/// Shaped, then unshaped: the queue's delay shows under load to the device and is said in
/// words; unshaped it does not. Then `report` lays the two side by side.
#[test]
fn a_deep_queue_shows_under_load_and_an_unshaped_device_holds() {
    let (ns, p, _device) = routed_device("prq", "llq0", &SERVE);
    let plain = probe(
        &p,
        "unshaped",
        "198.18.0.2",
        20,
        &["--only", "latency", "--label", "unshaped"],
        &[],
    );
    assert_latency_ran(&plain);
    let idle = icmp(&plain, "idle").p50_ms.unwrap();
    assert!(idle < 50.0, "idle {idle} ms");
    for load in ["to_device", "from_device", "both"] {
        let p = icmp(&plain, load);
        // Unshaped, the only queue is the device's window in flight at the host's speed.
        let rise = p.increase_ms.unwrap();
        assert!(rise < 50.0, "unshaped {load}: +{rise} ms: {p:?}");
    }
    // Its ICMP median holds (the soft NIC may drop pings its RX queue has no room for: those
    // are counted lost, not fast).
    let grows = &latency(&plain).grows;
    assert!(!grows.iter().any(|g| g.starts_with("ICMP")), "{grows:?}");

    // A 400 ms queue at 2 Mbit/s on the way to the device.
    ns.run(&[
        "tc", "qdisc", "add", "dev", "llq0", "root", "tbf", "rate", "2mbit", "burst", "16kb",
        "latency", "400ms",
    ]);
    let shaped = probe(
        &p,
        "shaped",
        "198.18.0.2",
        20,
        &["--only", "latency", "--label", "tbf 400ms"],
        &[],
    );
    assert_latency_ran(&shaped);
    for load in ["to_device", "both"] {
        let p = icmp(&shaped, load);
        let rise = p.increase_ms.unwrap();
        assert!(
            (150.0..=800.0).contains(&rise),
            "{load}: +{rise} ms behind a 400 ms queue: {p:?}"
        );
        let rate = latency(&shaped)
            .loads
            .iter()
            .find(|x| x.name == load)
            .and_then(|x| x.to_device_bps)
            .unwrap();
        assert!(
            rate <= 2.1e6,
            "{load}: {rate} bit/s through a 2 Mbit/s shaper"
        );
    }
    // The way back is not shaped: the device's data does not wait in the queue.
    let back = icmp(&shaped, "from_device").increase_ms.unwrap();
    assert!(back < 100.0, "from_device +{back} ms");
    let out = shaped.stdout();
    assert!(
        out.contains(
            "LATENCY GROWS UNDER LOAD: ICMP round trip grows while TCP runs to the device"
        ),
        "{out}"
    );
    assert!(!latency(&shaped).grows.is_empty());
    // The page draws the time axis and a CDF per transport.
    let page = std::fs::read_to_string(&shaped.html).unwrap();
    let drawn = charts(&page);
    let latency: Vec<_> = drawn.iter().filter(|c| c.0.contains("latency")).collect();
    assert_eq!(latency.len(), 1 + 3, "{drawn:?}");
    assert!(latency.iter().all(|c| c.1 > 0), "{latency:?}");
    assert!(page.contains("latency grows under load:"));

    assert_side_by_side(&plain, &shaped);
}

/// `linklab report -o HTML RUN...`, which must succeed; the page it wrote.
fn report_page(html: &Path, runs: &[&Path]) -> String {
    let out = Command::new(linklab_bin())
        .args(["report", "-o"])
        .arg(html)
        .args(runs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(html).unwrap()
}

/// `linklab report` on two runs: one column per run named by its label, the change, the CDFs
/// overlaid.
fn assert_side_by_side(plain: &Run, shaped: &Run) {
    let dir = tempdir("probe-latency-report");
    let (a, b) = (dir.join("unshaped.json"), dir.join("shaped.json"));
    std::fs::copy(plain.html.with_file_name("probe.json"), &a).unwrap();
    std::fs::copy(shaped.html.with_file_name("probe.json"), &b).unwrap();
    let page = report_page(&dir.join("side.html"), &[&a, &b]);
    assert!(page.contains("2 probe runs side by side"));
    assert!(
        page.contains("<th>unshaped</th><th>tbf 400ms</th>"),
        "runs named by label"
    );
    let row = page
        .find(r#"<tr data-compare="latency.icmp.to_device.rtt_p50">"#)
        .expect("the latency figure side by side");
    let row = &page[row..row + page[row..].find("</tr>").unwrap()];
    assert_eq!(
        row.matches("<td>").count(),
        3,
        "two runs and the change: {row}"
    );
    assert!(row.contains(" %</td>"), "{row}");
    let drawn = charts(&page);
    assert!(
        drawn.iter().any(|c| c.0 == "compare-cdf-icmp" && c.1 > 0),
        "{drawn:?}"
    );
}

/// Unix milliseconds now.
fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
}

/// Cuts the way to the device (a queue of no packets on the TAP: every packet dropped) for
/// 2 s once the first load's data flows through router `ns` (seen by the prober `p`); returns
/// when it cut and when it restored, Unix ms.
fn cut_when_the_flow_runs(ns: &Netns, p: &Netns) -> (f64, f64) {
    let began = Instant::now();
    loop {
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "no iperf3 data connection"
        );
        let ss = p.run(&["ss", "-Htn", "state", "established", "dport", "= :5201"]);
        if String::from_utf8_lossy(&ss.stdout).lines().count() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let cut = unix_ms();
    ns.run(&[
        "tc", "qdisc", "add", "dev", "llc0", "root", "pfifo", "limit", "0",
    ]);
    std::thread::sleep(Duration::from_secs(2));
    ns.run(&["tc", "qdisc", "del", "dev", "llc0", "root"]);
    (cut, unix_ms())
}

/// A flow cut for 2 s: a stall of the flow to the device within the cut, the host's
/// retransmissions beside it, and the pings of the cut counted lost, never fast.
#[test]
fn a_cut_flow_is_a_stall_at_the_time_of_the_cut() {
    let (ns, p, _device) = routed_device("prc", "llc0", &SERVE);
    let (run, (cut, restored)) = std::thread::scope(|s| {
        let cutter = s.spawn(|| cut_when_the_flow_runs(&ns, &p));
        let run = probe(&p, "cut", "198.18.0.2", 30, &["--only", "latency"], &[]);
        (run, cutter.join().unwrap())
    });
    assert!(run.out.status.success(), "{}", run.stderr());
    let l = latency(&run);
    let t0 = l.started_unix_ms as f64;
    let stalls = &l.stalls;
    let at = |s: f64| t0 + s * 1e3;
    let flow = stalls
        .iter()
        .find(|x| {
            x.kind == "no_bytes"
                && x.what == "to_device"
                && at(x.start_s) <= restored
                && at(x.end_s) >= cut
        })
        .unwrap_or_else(|| panic!("no stall of the flow within the cut at {cut}: {stalls:?}"));
    assert_eq!(flow.load, "to_device");
    // It began within the cut (the send buffer fills in moments) and lasted most of it
    // (TCP's retransmission timer may keep it stalled past the restore: up to a backoff).
    assert!(
        at(flow.start_s) >= cut - 200.0 && at(flow.start_s) <= cut + 1000.0,
        "{flow:?} cut at {cut}"
    );
    assert!(at(flow.end_s) >= cut + 1000.0, "{flow:?}");
    assert!(
        at(flow.end_s) <= restored + 3500.0,
        "{flow:?} restored at {restored}"
    );
    assert!(flow.retransmits.is_some_and(|n| n >= 1), "{flow:?}");
    // At a probe every 5 ms, a 2 s cut loses hundreds of pings: counted, not fast.
    let p = icmp(&run, "to_device");
    assert!(p.lost >= 200, "{p:?}");
    let samples = &l.round_trips[0].samples;
    let lost_in_cut = samples
        .iter()
        .filter(|(_, rtt)| rtt.is_none())
        .filter(|(s, _)| (cut + 100.0..restored - 100.0).contains(&at(*s)))
        .count();
    assert!(lost_in_cut >= 200, "{lost_in_cut} lost within the cut");
    assert!(run.stdout().contains("stalls: "), "{}", run.stdout());
}

/// `linklab probe --only icmp --repeat N --duration D` in `ns`, killed if it runs past N times
/// probe's own bound (each run within --duration and its 6 s overrun) and 10 s more.
fn repeated(ns: &Netns, n: u64, duration: u64) -> Run {
    let dir = tempdir("probe-repeat");
    let (json, html) = (dir.join("probe.json"), dir.join("probe.html"));
    let bin = linklab_bin();
    let (n_text, d_text) = (n.to_string(), duration.to_string());
    let argv = [
        bin.to_str().unwrap(),
        "probe",
        "198.18.0.2",
        "--only",
        "icmp",
        "--repeat",
        &n_text,
        "--duration",
        &d_text,
        "--json",
        json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ];
    let began = Instant::now();
    let limit = Duration::from_secs(n * (duration + 6) + 10);
    let out = run_bounded(&mut ns.command(&argv), limit);
    finished("repeat", out, began.elapsed(), &json, html)
}

/// `--repeat 2`: every figure in both runs with its spread; and bad input, one line each.
#[test]
fn repeat_keeps_the_spread_and_bad_input_is_one_line() {
    let (ns, _device) = tap_device("prr", "llr0", &["serve"], Duration::from_secs(10));
    let run = repeated(&ns, 2, 6);
    assert!(run.out.status.success(), "{}", run.stderr());
    let rep = run.report().repeat.as_ref().expect("the runs' spread");
    assert_eq!(rep.runs, 2);
    assert_eq!(rep.figures.len(), 3, "ICMP per size: {rep:?}");
    for f in &rep.figures {
        let values: Vec<f64> = f.values.iter().map(|v| v.unwrap()).collect();
        assert_eq!(values.len(), 2, "{f:?}");
        assert!(values.iter().all(|v| (f.low..=f.high).contains(v)), "{f:?}");
    }
    assert_eq!(run.report().conditions.as_ref().unwrap().runs, 2);
    assert!(run.stdout().contains("run 2 of 2") && run.stdout().contains("across 2 runs"));
    assert!(
        run.wall < Duration::from_secs(2 * (6 + 6)),
        "two runs of 6 s, each within its overrun: {:?}",
        run.wall
    );

    // Beside an older document lacking a figure and the conditions: both shown, the lack named.
    let dir = tempdir("probe-latency-bad");
    let probe_json = run.html.with_file_name("probe.json");
    let mut older: ProbeReport = linklab_testkit::docs::read(&probe_json);
    older.linklab_version = "0.1.0".into();
    older.conditions = None;
    older.repeat = None;
    older.figures.retain(|f| f.id != "icmp.rtt_p50.1472B");
    let older_json = dir.join("older.json");
    std::fs::write(&older_json, serde_json::to_string(&older).unwrap()).unwrap();
    let page = report_page(&dir.join("side.html"), &[&older_json, &probe_json]);
    assert!(page.contains("no conditions recorded (an older document)"));
    assert!(
        page.contains("lacks icmp.rtt_p50.1472B: not measured"),
        "the lack named"
    );

    let other = dir.join("other.json");
    std::fs::write(&other, r#"{"kind": "nope"}"#).unwrap();
    let out = Command::new(linklab_bin())
        .args(["report", "-o"])
        .arg(dir.join("never.html"))
        .arg(&probe_json)
        .arg(&other)
        .output()
        .unwrap();
    assert_one_line_error(&out, "not a linklab probe");
    assert!(!dir.join("never.html").exists());
    for (args, what) in [
        (&["--only", "bogus"][..], "no step \"bogus\""),
        (&["--repeat", "0"][..], "--repeat"),
    ] {
        let out = Command::new(linklab_bin())
            .args(["probe", "127.0.0.1"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "a usage error: {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(what), "{err}");
    }
}
