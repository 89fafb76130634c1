//! `linklab bench` end to end: determinism, CRC32s, impairments with conserved counters,
//! the pcap read by tshark, the TCP window lesson, bad options and the watchdog.
//!
//! Every run uses small files and a wall-time watchdog (`--max-wall-s`), so each test is
//! bounded. Every document is checked against its schema and read through its type.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use linklab_results::bench::{BenchReport, Wire};
use serde_json::Value;

/// A scratch path unique to this test process.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("linklab-bench-{}-{name}", std::process::id()))
}

/// Runs `linklab bench` with `args` (plus a wall-time watchdog).
fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_linklab"))
        .arg("bench")
        .args(args)
        .args(["--max-wall-s", "120"])
        .output()
        .expect("run linklab bench")
}

/// Runs `linklab bench`, requires success, returns the document it wrote (checked against its
/// schema) and its bytes.
fn bench_json(name: &str, args: &[&str]) -> (BenchReport, Vec<u8>) {
    let path = scratch(&format!("{name}.json"));
    let mut all: Vec<&str> = args.to_vec();
    let p = path.to_str().unwrap().to_string();
    all.extend(["--json", &p]);
    let out = bench(&all);
    assert!(
        out.status.success(),
        "linklab bench {args:?} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_valid(&serde_json::from_slice(&bytes).unwrap());
    let text = std::str::from_utf8(&bytes).expect("the document is UTF-8");
    (linklab_testkit::docs::parse(text), bytes)
}

/// Validates a bench document against the schema checked into the repository.
fn assert_valid(doc: &Value) {
    let schema: Value = serde_json::from_str(include_str!(
        "../../../linklab-results/schema/bench.schema.json"
    ))
    .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}

/// CRC32 of a bench file computed here, independently of the server and the client.
fn file_crc(path: &str) -> u32 {
    let file = linklab_perf::payload::find(path).unwrap();
    let mut body = vec![0u8; file.len as usize];
    linklab_perf::payload::fill(0, &mut body);
    crc32fast::hash(&body)
}

/// Every download completed with the served file's CRC32; returns how many there were.
fn assert_downloads_ok(json: &BenchReport) -> usize {
    for d in &json.downloads {
        assert!(d.error.is_none(), "download failed: {d:?}");
        assert_eq!(d.crc32, d.expected_crc32, "{d:?}");
        assert_eq!(d.crc32, Some(file_crc(&d.path)), "{d:?}");
        let len = linklab_perf::payload::find(&d.path).unwrap().len;
        assert_eq!(d.body_bytes, len);
        assert!(d.bytes > len, "head bytes are counted too");
        assert!(d.seconds > 0.0);
    }
    json.downloads.len()
}

const SMALL: &[&str] = &["--sizes", "10kB,100kB", "--gets", "2", "--pings", "3"];

#[test]
fn same_seed_gives_byte_identical_json() {
    let args: Vec<&str> = [SMALL, &["--seed", "7", "--loss", "0.005"]].concat();
    let (_, a) = bench_json("det-a", &args);
    let (_, b) = bench_json("det-b", &args);
    assert!(a == b, "two runs with the same seed differ");
    let other: Vec<&str> = [SMALL, &["--seed", "8", "--loss", "0.005"]].concat();
    let (_, c) = bench_json("det-c", &other);
    assert!(a != c, "the seed has no effect");
}

#[test]
fn every_download_has_the_served_crc32_and_the_json_fields() {
    let (json, _) = bench_json("crc", SMALL);
    assert_eq!(assert_downloads_ok(&json), 4);
    assert_eq!(json.kind, "bench");
    assert_eq!(json.profile, "niccle-optimized");
    assert_eq!(json.link.rate, "10M");
    assert_eq!(json.link.duplex, "half");
    assert!(json.limit_bytes_per_s.unwrap() > 1_000_000.0);
    assert_eq!(json.pings.len(), 3);
    assert!(json.pings.iter().all(|p| p.rtt_ms.unwrap() > 0.0));
    for name in [
        "rx_packets",
        "rx_crc_errors",
        "rx_frame_errors",
        "rx_missed_errors",
        "tx_packets",
    ] {
        assert!(json.counters.get(name).is_some(), "missing counter {name}");
    }
    assert_eq!(json.conservation.as_deref(), Some("ok"));
}

#[test]
fn loss_and_bit_errors_still_deliver_every_file_and_counters_conserve() {
    let args: Vec<&str> = [SMALL, &["--loss", "0.01", "--ber", "1e-6", "--seed", "3"]].concat();
    let (json, _) = bench_json("impaired", &args);
    assert_eq!(assert_downloads_ok(&json), 4);
    assert_eq!(json.conservation.as_deref(), Some("ok"));
    let imp = json.impairment_counters.as_ref().unwrap();
    let lost = imp.to_device.lost + imp.to_host.lost;
    let corrupted = imp.to_device.corrupted + imp.to_host.corrupted;
    assert!(lost > 0, "no transmission was lost: {imp:?}");
    assert!(corrupted > 0, "no transmission was corrupted: {imp:?}");
    // The law, recomputed here from the JSON.
    let c = &json.counters;
    let n = |k: &str| c.get(k).unwrap();
    let pending = n("rx_committed") - n("rx_dequeued");
    let accounted = n("rx_packets")
        + n("rx_pause_frames")
        + n("rx_filtered")
        + n("rx_frame_errors")
        + n("rx_crc_errors")
        + n("rx_short_length_errors")
        + n("rx_long_length_errors")
        + n("rx_missed_errors")
        + n("rx_checksum_errors")
        + pending;
    assert_eq!(accounted, n("rx_transmissions"));
    assert!(
        n("rx_crc_errors") > 0,
        "bit errors should show as FCS errors: {c:?}"
    );
}

fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn tshark(pcap: &Path, extra: &[&str]) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(extra)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn tshark_reads_the_pcap_without_malformed_frames() {
    assert!(
        tshark_available(),
        "tshark is required (scripts/setup installs it)"
    );
    let pcap = scratch("wire.pcap");
    let p = pcap.to_str().unwrap().to_string();
    let args: Vec<&str> = [SMALL, &["--pcap", &p, "--ber", "1e-6", "--seed", "5"]].concat();
    let (json, _) = bench_json("pcap", &args);
    let malformed = tshark(&pcap, &["-Y", "_ws.malformed"]);
    assert!(
        malformed.trim().is_empty(),
        "malformed frames:\n{malformed}"
    );
    let frames = tshark(&pcap, &[]).lines().count() as u64;
    let expected = json.pcap_frames.unwrap();
    let imp = json.impairment_counters.unwrap();
    let transmissions = imp.to_device.transmissions + imp.to_host.transmissions;
    assert_eq!(frames, expected);
    assert_eq!(frames, transmissions);
    // The HTTP exchange is visible to tshark's dissectors.
    let http = tshark(&pcap, &["-Y", "http.request.method == \"GET\""])
        .lines()
        .count();
    assert_eq!(http, 4);
    let _ = std::fs::remove_file(&pcap);
}

#[test]
fn auto_window_never_overruns_the_queue_but_a_larger_window_does() {
    let base = ["--sizes", "100kB", "--gets", "2", "--pings", "0"];
    for profile in ["ideal", "niccle-optimized"] {
        let args: Vec<&str> = [&base[..], &["--profile", profile, "--tcp-window", "auto"]].concat();
        let (json, _) = bench_json(&format!("win-auto-{profile}"), &args);
        assert_downloads_ok(&json);
        assert_eq!(
            json.counters.get("rx_missed_errors"),
            Some(0),
            "{profile}: {:?}",
            json.counters
        );
        assert_eq!(json.tcp_window, json.tcp_window_auto);
    }
    // The lesson of Niccle's MAC write-up: a window larger than the queue lets a burst overrun it.
    let args: Vec<&str> = [
        &base[..],
        &[
            "--profile",
            "niccle-optimized",
            "--rx-frames",
            "4",
            "--tcp-window",
            "20000",
        ],
    ]
    .concat();
    let (json, _) = bench_json("win-big", &args);
    assert_downloads_ok(&json);
    assert!(
        json.counters.get("rx_missed_errors").unwrap() > 0,
        "{:?}",
        json.counters
    );
    assert_eq!(json.conservation.as_deref(), Some("ok"));
}

/// The queue is sized at run time: both ends of 2..=1024 run, on both wire models.
#[test]
fn any_queue_size_from_2_to_1024_frames_runs() {
    for frames in ["2", "1024"] {
        for phy in ["bytes", "samples"] {
            let args = [
                "--rx-frames",
                frames,
                "--phy",
                phy,
                "--sizes",
                "10kB",
                "--gets",
                "1",
                "--pings",
                "1",
            ];
            let (json, _) = bench_json(&format!("q{frames}-{phy}"), &args);
            assert_downloads_ok(&json);
            assert_eq!(json.rx_frames.to_string(), frames, "{phy}");
            assert_eq!(json.conservation.as_deref(), Some("ok"));
        }
    }
}

#[test]
fn bad_options_name_the_option_and_the_range() {
    let cases: [(&[&str], &str); 13] = [
        (&["--loss", "2"], "--loss"),
        (&["--ber", "0.5"], "--ber"),
        (&["--rx-frames", "1025"], "--rx-frames"),
        (&["--tcp-window", "12"], "--tcp-window"),
        (&["--rate", "5M"], "--rate"),
        (&["--sizes", "7GB"], "--sizes"),
        (&["--gets", "0"], "--gets"),
        (&["--phy", "samples", "--jitter", "9"], "--jitter"),
        (&["--mhz", "160"], "--mhz"),
        (&["--profile", "riscv32-measured", "--mhz", "0"], "--mhz"),
        (&["--profile", "riscv32-measured", "--cpi", "x"], "--cpi"),
        (&["--device-sends", "ftp"], "--device-sends"),
        (&["--latency-us", "1e9"], "--latency-us"),
    ];
    for (args, option) in cases {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: a usage error");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(option), "{args:?}: {err}");
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{args:?}: one line expected: {err}"
        );
    }
}

/// The counted profile sends with `--device-sends http` and prints its clock; every transfer's
/// CRC32 (computed by the host's sink over what arrived) is the file's.
#[test]
fn measured_profile_sends_and_the_sink_checks_every_byte() {
    let out = bench(&[
        "--profile",
        "riscv32-measured",
        "--mhz",
        "50",
        "--cpi",
        "1.5",
        "--device-sends",
        "http",
        "--sizes",
        "10kB,100kB",
        "--gets",
        "2",
        "--pings",
        "1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("at 50 MHz, CPI 1.5"), "{text}");
    let sent: Vec<&str> = text.lines().filter(|l| l.starts_with("Sent ")).collect();
    assert_eq!(sent.len(), 4, "{text}");
    assert!(sent.iter().all(|l| l.ends_with("(ok)")), "{text}");
}

/// `--latency-us` puts a delay between the device and the host: a counted device that waits
/// for each window's ACK moves less and is busy a smaller share of the time; the link records
/// the delay.
#[test]
fn latency_between_device_and_host_slows_a_counted_device() {
    let run = |name: &str, latency: &str| {
        let args = [
            "--profile",
            "riscv32-measured",
            "--mhz",
            "62.5",
            "--rate",
            "1G",
            "--duplex",
            "full",
            "--pings",
            "0",
            "--gets",
            "1",
            "--sizes",
            "1MB",
            "--latency-us",
            latency,
        ];
        let (j, _) = bench_json(name, &args);
        assert_downloads_ok(&j);
        let d = &j.downloads[0];
        let rate = d.body_bytes as f64 / d.seconds;
        let busy = j.cpu_busy_seconds / j.virtual_seconds;
        (rate, busy, j.link.propagation_ns)
    };
    let (near, near_busy, near_ns) = run("latency-near", "0.01");
    let (far, far_busy, far_ns) = run("latency-far", "200");
    assert_eq!((near_ns, far_ns), (10, 200_000));
    assert!(far < 0.9 * near, "{far} vs {near} B/s");
    assert!(far_busy < near_busy, "{far_busy} vs {near_busy}");
}

#[test]
fn watchdog_reports_where_a_run_stalled() {
    // The initial profile loses most frames; with a 2 s stall limit the watchdog fires
    // during the first download and says where.
    let out = bench(&[
        "--profile",
        "niccle-initial",
        "--sizes",
        "100kB",
        "--pings",
        "0",
        "--max-stall-s",
        "2",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no progress") && err.contains("GET /100kB.txt"),
        "{err}"
    );
}

#[test]
fn sample_level_wire_delivers_the_files() {
    let (json, _) = bench_json(
        "samples-clean",
        &[
            "--phy", "samples", "--sizes", "10kB", "--gets", "2", "--pings", "2",
        ],
    );
    assert_eq!(assert_downloads_ok(&json), 2);
    assert!(
        matches!(json.link.phy, Wire::Samples { .. }),
        "{:?}",
        json.link
    );
    assert_eq!(json.conservation.as_deref(), Some("ok"));
}

/// The sample wire's acceptance run: a transmitter clock 0.5 % fast and one sample of edge
/// jitter.
#[test]
fn sample_level_wire_with_drift_and_jitter_delivers_the_files() {
    let (json, _) = bench_json(
        "samples",
        &[
            "--phy", "samples", "--drift", "5000", "--jitter", "1", "--sizes", "10kB", "--gets",
            "2", "--pings", "2",
        ],
    );
    assert_eq!(assert_downloads_ok(&json), 2);
    assert!(
        matches!(json.link.phy, Wire::Samples { .. }),
        "{:?}",
        json.link
    );
    assert_eq!(json.conservation.as_deref(), Some("ok"));
}
