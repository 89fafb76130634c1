//! `linklab report` on real `sweep` and `rtt` results (measured here, in a namespace, against
//! stock iperf3 and our echo server) and a `bench` sample: the page renders in headless
//! Chromium, every chart draws data, and a screenshot is saved for people to look at.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use linklab_results::probe::ProbeReport;
use linklab_testkit::{
    assert_one_line_error, charts, chromium, linklab_bin, run_ok, wait_until, Netns,
};

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Measures a small sweep and an rtt run on loopback inside a fresh namespace.
fn measure_inputs(dir: &Path) -> (PathBuf, PathBuf) {
    let ns = Netns::new("rep");
    let bin = linklab_bin();
    let bin = bin.to_str().unwrap();
    let _iperf = ns.spawn(&["iperf3", "-s", "-p", "5201"]);
    let _echo = ns.spawn(&[bin, "rtt", "-s", "-p", "7007"]);
    let up = wait_until(Duration::from_secs(5), || {
        let t = ns
            .command(&["ss", "-Hltn", "sport", "= :5201"])
            .output()
            .unwrap();
        let u = ns
            .command(&["ss", "-Hlnu", "sport", "= :7007"])
            .output()
            .unwrap();
        !t.stdout.is_empty() && !u.stdout.is_empty()
    });
    assert!(up, "servers did not start");
    let sweep = dir.join("sweep.json");
    let rtt = dir.join("rtt.json");
    ns.run(&[
        bin,
        "sweep",
        "-c",
        "127.0.0.1",
        "--from",
        "100M",
        "--to",
        "300M",
        "--step",
        "100M",
        "-t",
        "1",
        "--refine",
        "0",
        "--json",
        sweep.to_str().unwrap(),
    ]);
    ns.run(&[
        bin,
        "rtt",
        "-c",
        "127.0.0.1",
        "-p",
        "7007",
        "-n",
        "300",
        "--interval",
        "200",
        "--json",
        rtt.to_str().unwrap(),
    ]);
    (sweep, rtt)
}

/// A sweep document written before the sweep named limits (linklab-results keeps it).
fn sweep_before_limits() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../linklab-results/tests/data/sweep_before_limits.json")
}

#[test]
fn report_renders_every_chart_in_chromium() {
    let dir = out_dir();
    let (sweep, rtt) = measure_inputs(&dir);
    // A bench result with only the fields the report relies on, and a real one.
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bench_sample.json");
    let bench = dir.join("bench.json");
    run_ok(
        Command::new(linklab_bin())
            .args(["bench", "--sizes", "10kB,100kB", "--gets", "2"])
            .args(["--pings", "5", "--json", bench.to_str().unwrap()]),
    );
    // A sweep file written before the sweep named limits (a shaper on the sender's side).
    let older = sweep_before_limits();
    let html = dir.join("report.html");
    run_ok(
        Command::new(linklab_bin())
            .args(["report", "-o"])
            .arg(&html)
            .args([&sweep, &rtt, &sample, &bench, &older]),
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains("<link") && !page.contains("src=\"http") && !page.contains("url("),
        "self-contained"
    );

    let dom = chromium(&html, &["--dump-dom"]);
    assert!(
        dom.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout).to_string();
    let charts = charts(&dom);
    // sweep: 1 each; rtt: bandwidth + latency + 8 round-trip + 8 inter-arrival histograms;
    // bench: 2 each.
    assert_eq!(charts.len(), 24, "{charts:?}");
    for prefix in [
        "sweep-0",
        "sweep-4",
        "rtt-1-bandwidth",
        "rtt-1-latency",
        "rtt-1-hist-1472",
        "rtt-1-gaps-32",
        "bench-2-pings",
        "bench-2-downloads",
        "bench-3-pings",
        "bench-3-downloads",
    ] {
        assert!(
            charts.iter().any(|c| c.0 == prefix),
            "chart {prefix} missing: {charts:?}"
        );
    }
    for (id, points, drawn) in &charts {
        assert!(*points > 0, "chart {id} has no data points");
        assert!(*drawn > 0, "chart {id}: the browser drew no data element");
    }
    // The bench tables made it too.
    assert!(
        dom.contains("rx_missed_errors") && dom.contains("/64k.bin"),
        "bench tables"
    );

    let png = dir.join("report.png");
    let _ = std::fs::remove_file(&png);
    let shot = chromium(
        &html,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1280,5600",
        ],
    );
    assert!(
        shot.status.success(),
        "chromium screenshot failed: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 50_000,
        "a real PNG"
    );
    eprintln!("report: {} screenshot: {}", html.display(), png.display());
}

/// A sweep file from before the limits existed still renders: its steps are classified and its
/// knee recomputed by the current rule, and the page says so. The file's case: a shaper at
/// 150 Mbit/s on the sender's own interface, every step loss-free, knee 300 by loss.
#[test]
fn older_sweep_files_render_with_the_knee_recomputed() {
    let dir = out_dir();
    let older = sweep_before_limits();
    let text = std::fs::read_to_string(&older).unwrap();
    assert!(!text.contains("limits") && text.contains(r#""knee_bps": 300000000.0"#));
    let html = dir.join("older.html");
    run_ok(
        Command::new(linklab_bin())
            .args(["report", "-o"])
            .arg(&html)
            .arg(&older),
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("written before linklab sweep named limits: its knee (300 Mbit/s, by loss &lt; 0.1 % alone) is recomputed"),
        "the page says the knee was recomputed"
    );
    assert!(
        page.contains("<b>150 Mbit/s</b><span>knee"),
        "recomputed knee"
    );
    assert!(
        page.contains("<b>receiver loss + sender could not keep up</b><span>limit above the knee, at 200 Mbit/s offered"),
        "limit above the knee"
    );
    // Sender-limited steps are drawn and tabled apart: 200, 250 and 300 Mbit/s.
    assert_eq!(page.matches(r#"<tr class="sender">"#).count(), 3);
    assert!(
        page.contains("sender could not keep up: 300 → 147"),
        "chart marker"
    );
}

/// A probe document of schema version 1 (written by linklab before every figure carried its
/// samples: one measurement each; `tests/data/probe_v1.json`, a real run against `serve`)
/// still renders: every figure in the summary table, no ranges, the schema version named.
#[test]
fn older_probe_documents_render() {
    let dir = out_dir();
    let older = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/probe_v1.json");
    let text = std::fs::read_to_string(&older).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let probe: ProbeReport = serde_json::from_str(&text).unwrap();
    assert_eq!(probe.schema_version, 1);
    // It is what version 1 described (the schema kept beside the current one).
    let schema: serde_json::Value = serde_json::from_str(include_str!(
        "../../../linklab-results/schema/probe-v1.schema.json"
    ))
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&doc), "a version 1 document");
    assert!(probe.figures.iter().all(|f| f.samples.is_empty()));

    let html = dir.join("probe-v1.html");
    run_ok(
        Command::new(linklab_bin())
            .args(["report", "-o"])
            .arg(&html)
            .arg(&older),
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("· schema 1</p>"), "the version is named");
    for f in &probe.figures {
        let row = format!(r#"<tr data-figure="{}">"#, f.id);
        let at = page
            .find(&row)
            .unwrap_or_else(|| panic!("{row} in the summary"));
        // This run's value, then no range: one measurement.
        let cells = &page[at..at + page[at..].find("</tr>").unwrap()];
        assert!(
            cells.ends_with(r#"<td>–</td><td class="l">one measurement</td>"#),
            "{cells}"
        );
    }
    assert!(page.contains("Offered-rate sweep"), "its sweeps render");
}

#[test]
fn bad_inputs_are_one_clear_line() {
    let dir = out_dir();
    let not_json = dir.join("not.json");
    std::fs::write(&not_json, "{ nope").unwrap();
    let other = dir.join("other.json");
    std::fs::write(&other, r#"{"hello": 1}"#).unwrap();
    let bad_sweep = dir.join("bad_sweep.json");
    std::fs::write(&bad_sweep, r#"{"kind": "sweep", "steps": "many"}"#).unwrap();
    let html = dir.join("never.html");
    for (input, what) in [
        (dir.join("missing.json"), "cannot read"),
        (not_json, "not valid JSON"),
        (other, "not a linklab probe, sweep, rtt or bench result"),
        (bad_sweep, "malformed sweep result"),
    ] {
        let out = Command::new(linklab_bin())
            .arg("report")
            .arg(&input)
            .arg("-o")
            .arg(&html)
            .output()
            .unwrap();
        assert_one_line_error(&out, what);
    }
    assert!(!html.exists(), "no page is written when an input is bad");
}
