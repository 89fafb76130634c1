//! `linklab bench` end to end: determinism, CRC32s, impairments with conserved counters,
//! the pcap read by tshark, the TCP window lesson, bad options and the watchdog.
//!
//! Every run uses small files and a wall-time watchdog (`--max-wall-s`), so each test is
//! bounded.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// Runs `linklab bench`, requires success, returns the JSON it wrote.
fn bench_json(name: &str, args: &[&str]) -> (Value, Vec<u8>) {
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
    (serde_json::from_slice(&bytes).unwrap(), bytes)
}

/// CRC32 of a bench file computed here, independently of the server and the client.
fn file_crc(path: &str) -> u32 {
    let file = linklab_perf::payload::find(path).unwrap();
    let mut body = vec![0u8; file.len as usize];
    linklab_perf::payload::fill(0, &mut body);
    crc32fast::hash(&body)
}

/// Every download completed with the served file's CRC32; returns how many there were.
fn assert_downloads_ok(json: &Value) -> usize {
    let downloads = json["downloads"].as_array().unwrap();
    for d in downloads {
        assert!(d["error"].is_null(), "download failed: {d}");
        let path = d["path"].as_str().unwrap();
        let crc = d["crc32"].as_u64().unwrap();
        assert_eq!(crc, d["expected_crc32"].as_u64().unwrap(), "{d}");
        assert_eq!(crc, u64::from(file_crc(path)), "{d}");
        let len = linklab_perf::payload::find(path).unwrap().len;
        assert_eq!(d["body_bytes"].as_u64().unwrap(), len);
        assert!(
            d["bytes"].as_u64().unwrap() > len,
            "head bytes are counted too"
        );
        assert!(d["seconds"].as_f64().unwrap() > 0.0);
    }
    downloads.len()
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
    assert_eq!(json["profile"], "niccle-optimized");
    assert_eq!(json["link"]["rate"], "10M");
    assert_eq!(json["link"]["duplex"], "half");
    assert!(json["limit_bytes_per_s"].as_f64().unwrap() > 1_000_000.0);
    let pings = json["pings"].as_array().unwrap();
    assert_eq!(pings.len(), 3);
    assert!(pings.iter().all(|p| p["rtt_ms"].as_f64().unwrap() > 0.0));
    let counters = &json["counters"];
    for name in [
        "rx_packets",
        "rx_crc_errors",
        "rx_frame_errors",
        "rx_missed_errors",
        "tx_packets",
    ] {
        assert!(counters[name].is_u64(), "missing counter {name}");
    }
    assert_eq!(json["conservation"], "ok");
}

#[test]
fn loss_and_bit_errors_still_deliver_every_file_and_counters_conserve() {
    let args: Vec<&str> = [SMALL, &["--loss", "0.01", "--ber", "1e-6", "--seed", "3"]].concat();
    let (json, _) = bench_json("impaired", &args);
    assert_eq!(assert_downloads_ok(&json), 4);
    assert_eq!(json["conservation"], "ok");
    let imp = &json["impairment_counters"];
    let lost =
        imp["to_device"]["lost"].as_u64().unwrap() + imp["to_host"]["lost"].as_u64().unwrap();
    let corrupted = imp["to_device"]["corrupted"].as_u64().unwrap()
        + imp["to_host"]["corrupted"].as_u64().unwrap();
    assert!(lost > 0, "no transmission was lost: {imp}");
    assert!(corrupted > 0, "no transmission was corrupted: {imp}");
    // The law, recomputed here from the JSON.
    let c = &json["counters"];
    let n = |k: &str| c[k].as_u64().unwrap();
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
        "bit errors should show as FCS errors: {c}"
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
    let expected = json["pcap_frames"].as_u64().unwrap();
    let imp = &json["impairment_counters"];
    let transmissions = imp["to_device"]["transmissions"].as_u64().unwrap()
        + imp["to_host"]["transmissions"].as_u64().unwrap();
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
            json["counters"]["rx_missed_errors"], 0,
            "{profile}: {}",
            json["counters"]
        );
        assert_eq!(json["tcp_window"], json["tcp_window_auto"]);
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
        json["counters"]["rx_missed_errors"].as_u64().unwrap() > 0,
        "{}",
        json["counters"]
    );
    assert_eq!(json["conservation"], "ok");
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
            assert_eq!(json["rx_frames"].to_string(), frames, "{phy}");
            assert_eq!(json["conservation"], "ok");
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
        let d = &j["downloads"][0];
        let rate = d["body_bytes"].as_f64().unwrap() / d["seconds"].as_f64().unwrap();
        let busy = j["cpu_busy_seconds"].as_f64().unwrap() / j["virtual_seconds"].as_f64().unwrap();
        (rate, busy, j["link"]["propagation_ns"].as_u64().unwrap())
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
    assert_eq!(json["link"]["phy"]["model"], "samples");
    assert_eq!(json["conservation"], "ok");
}

/// Issue 7's acceptance run: a transmitter clock 0.5 % fast and one sample of edge jitter.
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
    assert_eq!(json["link"]["phy"]["model"], "samples");
    assert_eq!(json["conservation"], "ok");
}
