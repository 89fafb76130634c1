//! The run document of `linklab track export` and `import`: the repository's baseline (a real
//! export) is valid against schema/track-run.schema.json and reads as version 1; written again
//! it is the same text (with the kind and version in front, had it been written before the
//! document carried them), and valid too.

use linklab_results::track::{Rule, TrackRun, KIND, SCHEMA_VERSION};
use serde_json::Value;

const BASELINE: &str = include_str!("../../../track/baseline.json");

/// The schema's violations by `doc`, one line each.
fn violations(doc: &Value) -> Vec<String> {
    let schema: Value = serde_json::from_str(include_str!("../schema/track-run.schema.json"))
        .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn the_repositorys_baseline_is_a_valid_run_and_writes_back_the_same() {
    let doc: Value = serde_json::from_str(BASELINE).unwrap();
    assert_eq!(violations(&doc), Vec::<String>::new());
    let run = TrackRun::parse(BASELINE).unwrap();
    assert_eq!((run.kind.as_str(), run.schema_version), (KIND, 1));
    assert_eq!(run.label, "baseline");
    let main = run.entries.iter().find(|e| e.name == "main").unwrap();
    let rx = main
        .figures
        .iter()
        .find(|f| f.name == "rx_instr_per_byte")
        .unwrap();
    assert_eq!((rx.rule, rx.samples.len()), (Rule::Count, 5));

    let written = serde_json::to_string_pretty(&run).unwrap() + "\n";
    let header = format!("{{\n  \"kind\": \"{KIND}\",\n  \"schema_version\": {SCHEMA_VERSION},\n");
    let expected = if BASELINE.starts_with(&header) {
        BASELINE.to_string()
    } else {
        BASELINE.replacen("{\n", &header, 1)
    };
    assert_eq!(written, expected);
    let again: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(violations(&again), Vec::<String>::new());
}

#[test]
fn the_schema_refuses_what_import_refuses() {
    let bad = [
        r#"{"label": "x"}"#,
        r#"{"label": "x", "entries": [], "colour": 1}"#,
        r#"{"kind": "probe", "label": "x", "entries": []}"#,
        r#"{"label": "x", "entries": [{"name": "a", "figures": [{"name": "f", "unit": "B",
            "better": "up", "rule": "exact", "samples": [1]}]}]}"#,
        r#"{"label": "x", "entries": [{"name": "a", "figures": [{"name": "f", "unit": "B",
            "better": "lower", "rule": "exact", "samples": []}]}]}"#,
    ];
    for text in bad {
        let doc: Value = serde_json::from_str(text).unwrap();
        assert!(!violations(&doc).is_empty(), "{text}");
        assert!(TrackRun::parse(text).is_err(), "{text}");
    }
}
