//! `linklab track compare` on stored runs: the rule per kind of figure (sizes exact, counts
//! by their spread and the threshold, rates by probe's rule), exit 3 naming each worse
//! figure, a failed entry counted worse, `--last`, `--markdown` and `--bmf`.

use std::collections::BTreeMap;

use linklab_results::track::TrackRun;
use linklab_testkit::track::{entry, failed, figure, image, import, stderr, stdout, track};
use linklab_testkit::{assert_one_line_error, tempdir};
use serde::Deserialize;
use serde_json::Value;

/// bencher's Metric Format as `linklab track compare --bmf` writes it: entry, then figure.
type Bmf = BTreeMap<String, BTreeMap<String, BmfMeasure>>;

/// One figure in bencher's Metric Format: the median and the samples' range.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BmfMeasure {
    value: f64,
    lower_value: f64,
    upper_value: f64,
}

#[test]
fn unchanged_within_noise_is_exit_0() {
    let dir = tempdir("track-compare-same");
    let db = dir.join("t.sqlite");
    import(
        &db,
        &dir,
        "a",
        vec![image("lwip", 36016.0, &[3.51, 3.53], &[4.27, 4.57])],
    );
    // Moved by less than each run's own spread, and less than the threshold.
    import(
        &db,
        &dir,
        "b",
        vec![image("lwip", 36016.0, &[3.52, 3.54], &[4.30, 4.50])],
    );
    let out = track(&db, &["compare", "a", "b"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.starts_with("base a -> head b\n"), "{table}");
    assert!(table.contains("lwip   flash_bytes"), "{table}");
    assert_eq!(table.matches("unchanged").count(), 3, "{table}");
}

#[test]
fn worse_figures_are_named_and_exit_3() {
    let dir = tempdir("track-compare-worse");
    let db = dir.join("t.sqlite");
    import(
        &db,
        &dir,
        "base",
        vec![image("main", 86764.0, &[2.0, 2.02], &[2.7, 2.74])],
    );
    import(
        &db,
        &dir,
        "head",
        vec![image("main", 86765.0, &[2.5, 2.6], &[2.71, 2.73])],
    );
    let out = track(&db, &["compare", "base", "head"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        "linklab: worse than base: main flash_bytes, main rx_instr_per_byte"
    );
    let table = stdout(&out);
    let line = |f: &str| table.lines().find(|l| l.contains(f)).unwrap().to_string();
    assert!(line("flash_bytes").contains("+0.00 %"), "{table}");
    assert!(line("flash_bytes").ends_with("worse"), "{table}");
    assert!(
        line("rx_instr_per_byte").contains("2.01 (2–2.02)"),
        "{table}"
    );
    assert!(line("rx_instr_per_byte").ends_with("worse"), "{table}");
    assert!(line("tx_instr_per_byte").ends_with("unchanged"), "{table}");
}

#[test]
fn the_threshold_and_the_spread_both_hold_a_count_back() {
    let dir = tempdir("track-compare-threshold");
    let db = dir.join("t.sqlite");
    // 2 % higher with no spread: under the default threshold (5 %).
    import(&db, &dir, "a", vec![image("m", 1.0, &[3.0], &[4.0])]);
    import(&db, &dir, "b", vec![image("m", 1.0, &[3.06], &[3.5])]);
    let out = track(&db, &["compare", "a", "b"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // The sent cost fell by 12.5 %: better.
    assert!(stdout(&out)
        .lines()
        .any(|l| l.contains("tx_instr") && l.ends_with("better")));
    // With a 1 % threshold the received cost is worse.
    let out = track(&db, &["compare", "a", "b", "--count-threshold", "1"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("m rx_instr_per_byte"),
        "{}",
        stderr(&out)
    );
    // 10 % higher but HEAD's own samples spread wider than the gap: unchanged.
    import(
        &db,
        &dir,
        "c",
        vec![image("m", 1.0, &[3.3, 3.3 + 0.5], &[4.0])],
    );
    let out = track(&db, &["compare", "a", "c"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn rates_follow_probes_rule() {
    let dir = tempdir("track-compare-rate");
    let db = dir.join("t.sqlite");
    let rate = |s: &[f64]| {
        entry(
            "sim",
            "sim",
            vec![figure("get /1MB", "kB/s", "higher", "rate", s)],
        )
    };
    import(&db, &dir, "a", vec![rate(&[100.0, 104.0])]);
    import(&db, &dir, "b", vec![rate(&[95.0, 97.0])]);
    import(&db, &dir, "c", vec![rate(&[80.0, 82.0])]);
    assert_eq!(track(&db, &["compare", "a", "b"]).status.code(), Some(0));
    let out = track(&db, &["compare", "a", "c"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("sim get /1MB"), "{}", stderr(&out));
    let out = track(&db, &["compare", "a", "c", "--rate-tolerance", "30"]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_failed_entry_is_worse_and_last_2_takes_the_newest() {
    let dir = tempdir("track-compare-failed");
    let db = dir.join("t.sqlite");
    import(&db, &dir, "ok", vec![image("lwip", 1.0, &[3.0], &[4.0])]);
    let failed = failed("lwip", "image", "never answered ping");
    import(&db, &dir, "broken", vec![failed]);
    let out = track(&db, &["compare", "--last", "2"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("worse than ok: lwip failed"),
        "{}",
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("failed: never answered ping"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn markdown_and_bmf_are_written() {
    let dir = tempdir("track-compare-files");
    let db = dir.join("t.sqlite");
    import(&db, &dir, "a", vec![image("main", 100.0, &[3.0], &[4.0])]);
    import(
        &db,
        &dir,
        "b",
        vec![image("main", 90.0, &[2.9, 3.1], &[4.0])],
    );
    let (md, bmf) = (dir.join("c.md"), dir.join("b.json"));
    let out = track(
        &db,
        &[
            "compare",
            "a",
            "b",
            "--markdown",
            md.to_str().unwrap(),
            "--bmf",
            bmf.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.starts_with("### linklab track: `a` → `b`\n\nNo figure is worse.\n"),
        "{md}"
    );
    assert!(
        md.contains("| main | flash_bytes | B | 100 | 90 | -10.00 % | better |"),
        "{md}"
    );
    let v: Bmf = serde_json::from_slice(&std::fs::read(bmf).unwrap()).unwrap();
    let main = |name: &str| v.get("main").and_then(|m| m.get(name)).copied();
    assert_eq!(main("flash_bytes").map(|m| m.value), Some(90.0));
    let rx = main("rx_instr_per_byte").expect("main.rx_instr_per_byte");
    assert_eq!((rx.value, rx.lower_value, rx.upper_value), (3.0, 2.9, 3.1));
}

#[test]
fn bad_requests_are_one_line() {
    let dir = tempdir("track-compare-bad");
    let db = dir.join("t.sqlite");
    import(&db, &dir, "a", vec![]);
    assert_one_line_error(
        &track(&db, &["compare", "a", "nope"]),
        "no run labelled \"nope\"",
    );
    assert_one_line_error(
        &track(&db, &["compare", "--last", "3"]),
        "--last 3: the store holds 1 run(s)",
    );
    assert_one_line_error(&track(&db, &["compare", "a"]), "give BASE and HEAD labels");
    assert_one_line_error(
        &track(&db, &["compare", "a", "a", "--count-threshold", "x"]),
        "--count-threshold",
    );
}

#[test]
fn an_exported_run_imports_as_the_same_figures() {
    let dir = tempdir("track-compare-export");
    let db = dir.join("t.sqlite");
    import(
        &db,
        &dir,
        "base",
        vec![image("main", 100.0, &[3.0, 3.1], &[4.0])],
    );
    let file = dir.join("exported.json");
    let out = track(&db, &["export", "base", "-o", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let other = dir.join("other.sqlite");
    let out = track(&other, &["import", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    import(
        &other,
        &dir,
        "head",
        vec![image("main", 100.0, &[3.0, 3.1], &[4.0])],
    );
    let out = track(&other, &["compare", "base", "head"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out).matches("unchanged").count(),
        3,
        "{}",
        stdout(&out)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_valid_run(&doc);
    let run = TrackRun::parse(&text).unwrap();
    assert_eq!(run.entries[0].figures[1].samples, [3.0, 3.1]);
}

/// Validates a run document against the schema checked into the repository.
fn assert_valid_run(doc: &Value) {
    let schema: Value = serde_json::from_str(include_str!(
        "../../../linklab-results/schema/track-run.schema.json"
    ))
    .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}
