//! `linklab emu`'s documents read back through their types: real documents written by the
//! verbs before they were typed (`tests/data/emu-*.json`, each the output of one run) come
//! out of the types byte for byte the same, but for the two members every document now starts
//! with (`kind`, `schema_version`); and the documents written now satisfy their schemas.

use linklab_results::emu::{blast, chips, cost, phy10, throughput};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// The text a verb writes (`to_string_pretty`), without the lines of `kind` and
/// `schema_version`.
fn without_header(text: &str) -> String {
    text.lines()
        .filter(|l| {
            let l = l.trim_start();
            !(l.starts_with("\"kind\": \"emu-") || l.starts_with("\"schema_version\": "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads `old` (a document written before the types) as `T`, writes it again, and checks
/// the text is the same but for the header; returns the document as now written (the
/// header's version the current one).
fn round_trip<T: DeserializeOwned + Serialize>(old: &str, upgrade: impl Fn(&mut T)) -> Value {
    let mut doc: T = serde_json::from_str(old).expect("the old document reads");
    upgrade(&mut doc);
    let again = serde_json::to_string_pretty(&doc).unwrap();
    assert_eq!(without_header(&again), old.trim_end());
    serde_json::to_value(&doc).unwrap()
}

/// Validates `doc` against `schema/NAME.schema.json`.
fn assert_valid(doc: &Value, schema: &str) {
    let schema: Value = serde_json::from_str(schema).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}

#[test]
fn cost() {
    let old = include_str!("data/emu-cost.json");
    let doc = round_trip::<cost::CostReport>(old, |d| {
        assert_eq!((d.kind.as_str(), d.schema_version), ("emu-cost", 0));
        d.schema_version = cost::SCHEMA_VERSION;
    });
    assert_valid(&doc, include_str!("../schema/emu-cost.schema.json"));
}

#[test]
fn blast() {
    let old = include_str!("data/emu-blast.json");
    let doc = round_trip::<blast::BlastReport>(old, |d| {
        assert_eq!(d.ceiling.len(), 2);
        d.schema_version = blast::SCHEMA_VERSION;
    });
    assert_valid(&doc, include_str!("../schema/emu-blast.schema.json"));
}

#[test]
fn throughput() {
    let old = include_str!("data/emu-throughput.json");
    let doc = round_trip::<throughput::ThroughputReport>(old, |d| {
        d.schema_version = throughput::SCHEMA_VERSION;
    });
    assert_valid(&doc, include_str!("../schema/emu-throughput.schema.json"));
}

#[test]
fn phy10() {
    let old = include_str!("data/emu-phy10.json");
    let doc = round_trip::<phy10::Phy10Report>(old, |d| {
        assert_eq!(d.frames_not_decoded(), 0);
        d.schema_version = phy10::SCHEMA_VERSION;
    });
    assert_valid(&doc, include_str!("../schema/emu-phy10.schema.json"));
}

#[test]
fn chips() {
    let old = include_str!("data/emu-chips.json");
    let doc = round_trip::<chips::ChipsReport>(old, |d| {
        d.schema_version = chips::SCHEMA_VERSION;
        for isa in &mut d.isas {
            isa.bench.schema_version = phy10::SCHEMA_VERSION;
        }
    });
    assert_valid(&doc, include_str!("../schema/emu-chips.schema.json"));
}

/// A document that does not fit its schema is refused: the check can fail.
#[test]
fn the_schemas_refuse_what_does_not_fit() {
    let mut doc: Value = serde_json::from_str(include_str!("data/emu-cost.json")).unwrap();
    let schema: Value =
        serde_json::from_str(include_str!("../schema/emu-cost.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    // Without its header (a document written before the types): not version 1.
    assert!(!validator.is_valid(&doc));
    doc["kind"] = "emu-cost".into();
    doc["schema_version"] = 1.into();
    assert!(validator.is_valid(&doc));
    doc["rx_instr_per_byte"] = "many".into();
    assert!(!validator.is_valid(&doc));
}
