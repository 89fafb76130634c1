//! The page from documents: each kind read by its `kind`, the friendly sentence for a file
//! that is not one of linklab's documents, every value escaped, the baseline's verdicts
//! shown as the comparison gives them, two probe runs side by side.

use linklab_report::{page, probe_page, Document, Input};
use linklab_results::probe::{baseline, ProbeReport};

/// A real probe run against `serve` (schema version 1: one measurement per figure).
const PROBE: &str = include_str!("../../linklab-results/tests/data/probe-minimal.json");
/// A sweep written before the sweep named limits.
const OLD_SWEEP: &str = include_str!("../../linklab-results/tests/data/sweep_before_limits.json");

fn input(name: &str, text: &str) -> Input {
    Input {
        name: name.into(),
        document: Document::from_json(text, name).unwrap(),
    }
}

fn probe() -> ProbeReport {
    serde_json::from_str(PROBE).unwrap()
}

fn error(text: &str) -> String {
    format!("{:#}", Document::from_json(text, "f.json").unwrap_err())
}

#[test]
fn documents_are_told_apart_by_their_kind() {
    assert!(matches!(input("p", PROBE).document, Document::Probe(_)));
    assert!(matches!(input("s", OLD_SWEEP).document, Document::Sweep(_)));
    let rtt = r#"{"kind": "rtt", "host": "h", "port": 7, "protocol": "udp", "count": 1,
                  "interval_us": 0, "sizes": []}"#;
    assert!(matches!(input("r", rtt).document, Document::Rtt(_)));
    // A bench file says so, or (older) has downloads and counters.
    assert!(matches!(
        input("b", r#"{"kind": "bench"}"#).document,
        Document::Bench(_)
    ));
    let older_bench = r#"{"downloads": [], "counters": {}}"#;
    assert!(matches!(
        input("b", older_bench).document,
        Document::Bench(_)
    ));
}

#[test]
fn a_file_that_is_not_a_document_gets_one_sentence() {
    assert!(error("{ nope").starts_with("f.json: not valid JSON"));
    assert!(error(r#"{"hello": 1}"#).starts_with(
        "f.json: not a linklab probe, sweep, rtt or bench result or serial self-test"
    ));
    assert!(error(r#"{"kind": "sweep", "steps": "many"}"#)
        .starts_with("f.json: malformed sweep result"));
    assert!(error(r#"{"kind": "probe"}"#).starts_with("f.json: malformed probe result"));
    assert!(error(r#"{"kind": "serial-selftest"}"#)
        .starts_with("f.json: malformed serial self-test result"));
}

/// Text from a document (a host, a step's detail, a file name) never becomes markup.
#[test]
fn every_value_is_escaped() {
    let mut r = probe();
    r.host = "<script>alert(1)</script>".into();
    r.steps[0].detail = r#"a "quoted" & <b>bold</b> detail"#.into();
    r.figures[0].label = "x < y".into();
    let html = probe_page(&r, "<b>file</b>.json");
    assert!(html.contains("Probe of &lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<script>alert"));
    assert!(html.contains("a &quot;quoted&quot; &amp; &lt;b&gt;bold&lt;/b&gt; detail"));
    assert!(html.contains("&lt;b&gt;file&lt;/b&gt;.json"));
    assert!(!html.contains("<b>file</b>"));
    // Chart text too: the figure's label is not on a chart, its id is; titles are.
    assert!(html.contains("x &lt; y"));
    // One script: the page's check.
    assert_eq!(html.matches("<script>").count(), 1);
}

/// The summary shows each figure's verdict as the baseline comparison gives it.
#[test]
fn the_summary_shows_the_comparisons_verdicts() {
    let old = probe();
    let mut new = probe();
    new.schema_version = 3;
    // The first figure much worse, the second gone, a third new.
    let first = new.figures[0].clone();
    new.figures[0].value = first.value * 0.1;
    let gone = new.figures.remove(1);
    let mut added = first.clone();
    added.id = "tcp.to_device.new".into();
    new.figures.push(added);
    let c = baseline::compare(&old, &new, "old.json", 10.0);
    new.baseline = Some(c.clone());
    let html = probe_page(&new, "new.json");
    for f in &c.figures {
        let row = format!(r#"<tr data-figure="{}">"#, f.id);
        let at = html.find(&row).unwrap_or_else(|| panic!("{row}"));
        let cells = &html[at..at + html[at..].find("</tr>").unwrap()];
        let v = baseline::verdict(f);
        let class = if v.is_worse() { "warn" } else { "ok" };
        assert!(
            cells.ends_with(&format!(r#"<td class="l {class}">{}</td>"#, v.words())),
            "{cells}"
        );
    }
    let verdict_of =
        |id: &str| baseline::verdict(c.figures.iter().find(|f| f.id == id).unwrap()).words();
    assert_eq!(verdict_of(&gone.id), "not measured");
    assert_eq!(verdict_of("tcp.to_device.new"), "new");
    let worse = c
        .figures
        .iter()
        .filter(|f| baseline::verdict(f).is_worse())
        .count();
    assert!(html.contains(&format!("<b>{worse} worse</b>")));
}

#[test]
fn an_older_sweep_is_drawn_with_its_knee_recomputed() {
    let html = page(&[input("old.json", OLD_SWEEP)], 0);
    assert!(html.contains("written before linklab sweep named limits"));
    assert!(html.contains("<b>150 Mbit/s</b><span>knee"));
    assert!(html.contains("1970-01-01"), "the generated stamp");
}

#[test]
fn two_probe_runs_are_side_by_side_first() {
    let html = page(&[input("a.json", PROBE), input("b.json", PROBE)], 0);
    let side = html
        .find("2 probe runs side by side")
        .expect("side by side");
    assert!(side < html.find("Probe of ").unwrap());
    // Each section once more after it, its charts' ids apart.
    assert_eq!(html.matches(r#"<section class="card probe">"#).count(), 2);
    assert!(html.contains(r#"data-chart="probe-0-throughput""#));
    assert!(html.contains(r#"data-chart="probe-1-throughput""#));
    assert_eq!(
        html.matches("<svg ").count(),
        html.matches("</svg>").count()
    );
    assert_eq!(
        html.matches("<section").count(),
        html.matches("</section>").count()
    );
}
