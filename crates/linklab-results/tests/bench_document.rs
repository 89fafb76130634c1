//! The bench document: a real one (`linklab bench --sizes 10kB --gets 1 --pings 4 --loss 0.2
//! --seed 4 --json`) matches its schema and is written back byte for byte; the same run's
//! file from before versions (written by `bench` when its JSON was built by hand) reads as
//! version 0 with the same content; a partial file reads with the rest at its defaults.

use linklab_results::bench::{BenchReport, Wire, SCHEMA_VERSION};

/// The real document, version 1.
const CURRENT: &str = include_str!("data/bench.json");
/// The same run written before versions.
const BEFORE_VERSIONS: &str = include_str!("data/bench-before-versions.json");

#[test]
fn a_real_document_matches_the_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema/bench.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let doc: serde_json::Value = serde_json::from_str(CURRENT).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
    // The schema refuses what is not a bench document of this version.
    let mut other = doc.clone();
    other["schema_version"] = 2.into();
    assert!(!validator.is_valid(&other));
    let mut unknown = doc;
    unknown["no_such_member"] = 1.into();
    assert!(!validator.is_valid(&unknown));
}

#[test]
fn a_real_document_is_written_back_byte_for_byte() {
    let report: BenchReport = serde_json::from_str(CURRENT).unwrap();
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    assert_eq!(serde_json::to_string_pretty(&report).unwrap(), CURRENT);
    // What the run was: one lost ping of four, one whole download, every frame accounted for.
    let lost = report.pings.iter().filter(|p| p.rtt_ms.is_none()).count();
    assert_eq!((report.pings.len(), lost), (4, 1));
    assert_eq!(report.downloads.len(), 1);
    assert!(report.downloads[0].crc_ok() && report.downloads[0].error.is_none());
    assert_eq!(report.conservation.as_deref(), Some("ok"));
    assert_eq!(report.link.phy, Wire::Bytes);
    assert!(report.counters.get("rx_packets").unwrap() > 0);
    let imp = report.impairment_counters.as_ref().unwrap();
    assert!(imp.to_device.lost + imp.to_host.lost > 0);
}

#[test]
fn a_file_from_before_versions_reads_as_version_0() {
    let old: BenchReport = serde_json::from_str(BEFORE_VERSIONS).unwrap();
    assert_eq!((old.kind.as_str(), old.schema_version), ("bench", 0));
    let current: BenchReport = serde_json::from_str(CURRENT).unwrap();
    assert_eq!(
        old,
        BenchReport {
            schema_version: 0,
            ..current
        }
    );
    // Its members, in their order, are version 1's after kind and schema_version.
    let written = serde_json::to_string_pretty(&old).unwrap();
    let expected = BEFORE_VERSIONS.replacen(
        "{\n  \"profile\"",
        "{\n  \"kind\": \"bench\",\n  \"schema_version\": 0,\n  \"profile\"",
        1,
    );
    assert_eq!(written, expected);
}

#[test]
fn a_partial_file_reads_with_the_rest_at_its_defaults() {
    let text = r#"{
        "profile": "niccle-esp32c6",
        "link": { "rate": "10BASE-T", "duplex": "half" },
        "limit_bytes_per_s": 620000,
        "pings": [ {"rtt_ms": 2.1}, {"rtt_ms": 1.9} ],
        "downloads": [
            {"path": "/1k.bin", "bytes": 1024, "seconds": 0.012, "bytes_per_s": 85333,
             "crc32": 2870908430, "expected_crc32": 2870908430}
        ],
        "counters": { "rx_packets": 1712, "tx_errors": 0 }
    }"#;
    let r: BenchReport = serde_json::from_str(text).unwrap();
    assert_eq!(r.schema_version, 0);
    assert_eq!(r.limit_bytes_per_s, Some(620000.0));
    assert_eq!(r.pings[1].rtt_ms, Some(1.9));
    assert!(r.downloads[0].crc_ok());
    assert_eq!(r.counters.get("tx_errors"), Some(0));
    assert_eq!(r.counters.0.len(), 2, "only the counters the file has");
    assert!(r.phy_counters.is_none() && r.impairment_counters.is_none());
    assert_eq!(r.conservation, None);
    // A download without its checksums is not a match.
    let r: BenchReport =
        serde_json::from_str(r#"{"profile": "x", "downloads": [{"path": "/a"}]}"#).unwrap();
    assert!(!r.downloads[0].crc_ok());
    // What is not a bench document is refused.
    assert!(serde_json::from_str::<BenchReport>(r#"{"pings": 3}"#).is_err());
    assert!(serde_json::from_str::<BenchReport>(r#"{"counters": {"a": -1}}"#).is_err());
}

#[test]
fn the_sample_wire_is_written_with_its_settings() {
    let wire = Wire::Samples {
        oversample: 8,
        drift_ppm: -5000,
        jitter_samples: 1,
        noise: 0.001,
    };
    let text = serde_json::to_string(&wire).unwrap();
    assert_eq!(
        text,
        r#"{"model":"samples","oversample":8,"drift_ppm":-5000,"jitter_samples":1,"noise":0.001}"#
    );
    assert_eq!(serde_json::from_str::<Wire>(&text).unwrap(), wire);
    assert_eq!(
        serde_json::to_string(&Wire::Bytes).unwrap(),
        r#"{"model":"bytes"}"#
    );
    assert!(serde_json::from_str::<Wire>(r#"{"model":"samples","oversample":8}"#).is_err());
    assert!(serde_json::from_str::<Wire>(r#"{"model":"light"}"#).is_err());
}
