//! What the probe tests share: one `linklab probe` run in a namespace, its JSON read and
//! validated against `schema/probe.schema.json`, and the checks every document passes.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use linklab_results::probe::{
    Figure, HttpDownload, NotMeasured, ProbeReport, Service, ServiceState, SpreadKind,
};
use serde_json::Value;

use crate::{linklab_bin, run_bounded, tempdir, veth_pair, wait_until, ChildGuard, Netns};

/// One probe run: its output, its JSON (when written), its wall time.
pub struct Run {
    /// The process's exit status and output.
    pub out: Output,
    /// The `--json` document, when one was written.
    pub json: Option<Value>,
    /// The same document read strictly into its type ([`crate::docs`]): a field the type
    /// does not hold fails the run's test.
    pub report: Option<ProbeReport>,
    /// How long the run took in real time.
    pub wall: Duration,
    /// Where its page was asked to go (`-o`).
    pub html: PathBuf,
}

impl Run {
    /// Its standard output, as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    /// Its standard error, as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    /// The document; panics, with the output, when none was written.
    pub fn json(&self) -> &Value {
        self.json.as_ref().unwrap_or_else(|| self.no_document())
    }
    /// The typed document; panics, with the output, when none was written.
    pub fn report(&self) -> &ProbeReport {
        self.report.as_ref().unwrap_or_else(|| self.no_document())
    }
    /// Panics: no document was written.
    fn no_document(&self) -> ! {
        panic!(
            "no JSON written; stdout: {}\nstderr: {}",
            self.stdout(),
            self.stderr()
        )
    }
    /// The state the document gives service `name`.
    pub fn service(&self, name: &str) -> ServiceState {
        self.report()
            .services
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no service {name}"))
            .state
    }
    /// Figure `id`; panics when the document has none.
    pub fn figure_of(&self, id: &str) -> &Figure {
        let report = self.report();
        report
            .figures
            .iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("no figure {id}: {:?}", report.figures))
    }
    /// The value of figure `id`; panics when the document has none.
    pub fn figure(&self, id: &str) -> f64 {
        self.figure_of(id).value
    }
    /// True when the document has figure `id`.
    pub fn has_figure(&self, id: &str) -> bool {
        self.report().figures.iter().any(|f| f.id == id)
    }
    /// What discovery found of service `name`; panics when the document has none.
    pub fn service_entry(&self, name: &str) -> &Service {
        let all = &self.report().services;
        all.iter()
            .find(|x| x.name == name)
            .unwrap_or_else(|| panic!("no service {name} in {all:?}"))
    }
    /// The HTTP download of `path`; panics when the document has none.
    pub fn http(&self, path: &str) -> &HttpDownload {
        let all = &self.report().http;
        all.iter()
            .find(|h| h.path == path)
            .unwrap_or_else(|| panic!("no http entry for {path}: {all:?}"))
    }
    /// The figure `id` a step could not make, with why; panics when the document has none.
    pub fn not_measured(&self, id: &str) -> &NotMeasured {
        let all = &self.report().not_measured;
        all.iter()
            .find(|m| m.id == id)
            .unwrap_or_else(|| panic!("{id} not in not_measured: {all:?}"))
    }
}

/// Runs `linklab probe HOST --duration D ARGS` in `ns` (with `prefix`, e.g. `chrt -f 20`),
/// killed if it runs past the promised bound (`--duration` + 10 s).
pub fn probe(
    ns: &Netns,
    tag: &str,
    host: &str,
    duration: u64,
    args: &[&str],
    prefix: &[&str],
) -> Run {
    let dir = tempdir(&format!("probe-{tag}"));
    let json = dir.join("probe.json");
    let html = dir.join("probe.html");
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(&html);
    let bin = linklab_bin();
    let d = duration.to_string();
    let mut argv: Vec<&str> = prefix.to_vec();
    argv.extend_from_slice(&[bin.to_str().unwrap(), "probe", host, "--duration", &d]);
    argv.extend_from_slice(&[
        "--json",
        json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    argv.extend_from_slice(args);
    let began = Instant::now();
    let out = run_bounded(&mut ns.command(&argv), Duration::from_secs(duration + 10));
    finished(tag, out, began.elapsed(), &json, html)
}

/// A finished run: printed for people, its JSON (if any) read and validated.
pub fn finished(tag: &str, out: Output, wall: Duration, json: &Path, html: PathBuf) -> Run {
    eprintln!(
        "probe {tag}: {:.1} s, {}\n{}{}",
        wall.as_secs_f64(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Option<Value> = std::fs::read(json)
        .ok()
        .map(|b| serde_json::from_slice(&b).expect("the JSON parses"));
    if let Some(v) = &json {
        assert_valid(v);
    }
    let report = json.as_ref().map(crate::docs::from_value::<ProbeReport>);
    Run {
        out,
        json,
        report,
        wall,
        html,
    }
}

/// Validates a probe document against the schema checked into the repository.
pub fn assert_valid(doc: &Value) {
    let schema: Value = serde_json::from_str(include_str!(
        "../../linklab-results/schema/probe.schema.json"
    ))
    .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}

/// Every figure carries its range: samples between `low` and `high` (at least one each), the
/// value inside it; round trips between their quartiles; a knee's range from its low end up
/// past the confirmed limit (or none).
pub fn assert_ranges(run: &Run) {
    for f in &run.report().figures {
        let (value, low) = (f.value, f.low.unwrap_or_else(|| panic!("no low: {f:?}")));
        match f.spread {
            Some(SpreadKind::Samples) => {
                let high = f.high.unwrap_or_else(|| panic!("no high: {f:?}"));
                assert!(!f.samples.is_empty(), "{f:?}");
                assert!(f.samples.iter().all(|x| (low..=high).contains(x)), "{f:?}");
                assert!(low <= value && value <= high, "{f:?}");
            }
            Some(SpreadKind::Quartiles) => {
                let high = f.high.unwrap_or_else(|| panic!("no high: {f:?}"));
                assert!(low <= value && value <= high, "{f:?}");
                assert_eq!(f.unit, "us");
            }
            Some(SpreadKind::Bracket) => {
                assert!(low <= value, "{f:?}");
                if let Some(high) = f.high {
                    assert!(high > value, "{f:?}");
                }
            }
            None => panic!("no spread: {f:?}"),
        }
    }
}

/// A device on a TAP in a fresh namespace (`linklab serve` or `linklab emu`): starts it, puts
/// 198.18.0.1/24 on the host side, waits for it to answer ping.
pub fn tap_device(tag: &str, tap: &str, args: &[&str], boot: Duration) -> (Netns, ChildGuard) {
    let ns = Netns::new(tag);
    let bin = linklab_bin();
    let mut argv = vec![bin.to_str().unwrap()];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--tap", tap, "--ip", "198.18.0.2/24"]);
    let child = ns.spawn(&argv);
    assert!(
        ns.host_side_of(tap, "198.18.0.1/24", boot),
        "the TAP {tap} never appeared"
    );
    assert!(
        ns.answers_ping("198.18.0.2", boot),
        "the device never answered a ping"
    );
    (ns, child)
}

/// A host namespace `h` (198.18.40.1) and the prober's `p` (198.18.40.2) on one veth.
pub fn two_hosts(tag: &str) -> (Netns, Netns) {
    let h = Netns::new(&format!("{tag}h"));
    let p = Netns::new(&format!("{tag}p"));
    veth_pair(&h, "198.18.40.1/24", &p, "198.18.40.2/24");
    (h, p)
}

/// Starts stock `iperf3 -s` in `ns` and waits for it to listen.
pub fn stock_iperf3(ns: &Netns, prefix: &[&str]) -> ChildGuard {
    let mut argv = prefix.to_vec();
    argv.extend_from_slice(&["iperf3", "-s", "-p", "5201"]);
    let server = spawn_quiet(ns, &argv);
    let up = wait_until(Duration::from_secs(5), || {
        let out = ns
            .command(&["ss", "-Hltn", "sport", "= :5201"])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    });
    assert!(up, "iperf3 -s did not start");
    server
}

/// Starts `argv` in `ns` with its output discarded; killed on drop. A stock `iperf3 -s` writes
/// a report of every test, and a pipe nobody reads fills and stops it (`Netns::spawn` pipes:
/// such a server stopped answering at its 98th 1-second UDP test here, the baseline test's
/// three probe runs come near that).
pub fn spawn_quiet(ns: &Netns, argv: &[&str]) -> ChildGuard {
    let child = ns
        .command(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {argv:?}: {e}"));
    ChildGuard(Some(child))
}
