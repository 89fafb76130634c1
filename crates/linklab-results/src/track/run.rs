//! A run of a suite as `linklab track export` writes it and `linklab track import` reads it: a
//! label, the commit measured, and per entry its figures with every sample (or why it failed).
//! A run measured elsewhere (a user's own CI) is written in this form to be stored beside
//! track's own. The store keeps more (the run's stamp, each image's ELF and its hash); this
//! is what comparing needs.
//!
//! Version 1 is the first to carry `kind` and `schema_version`; a document without them (as
//! written before, or by hand) has the same fields and is read as version 1.

use serde::{Deserialize, Serialize};

use super::figure::Figure;

/// The document's `kind`.
pub const KIND: &str = "track-run";

/// The version of the document this crate writes (and the newest it reads).
pub const SCHEMA_VERSION: u32 = 1;

/// A run of a suite (`"kind": "track-run"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrackRun {
    /// Always [`KIND`] (a document without it is read as one).
    #[serde(default = "kind")]
    pub kind: String,
    /// [`SCHEMA_VERSION`] when written (a document without it is read as version 1).
    #[serde(default = "first_version")]
    pub schema_version: u32,
    /// The run's label (`linklab track compare` finds runs by it).
    pub label: String,
    /// The commit of the tree measured (empty when unknown).
    #[serde(default)]
    pub commit: String,
    /// Each entry of the suite.
    pub entries: Vec<TrackEntry>,
}

/// One entry of a run: its figures, or why it has none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrackEntry {
    /// The entry's name in the suite.
    pub name: String,
    /// What was measured: `image`, `device` or `sim` (`image` when left out).
    #[serde(default = "image")]
    pub kind: String,
    /// The board an image ran on (empty for the others).
    #[serde(default)]
    pub board: String,
    /// Why the entry has no figures, if it failed (`null` otherwise).
    #[serde(default)]
    pub failed: Option<String>,
    /// The figures, each with every sample.
    #[serde(default)]
    pub figures: Vec<Figure>,
}

fn kind() -> String {
    KIND.into()
}

fn first_version() -> u32 {
    1
}

fn image() -> String {
    "image".into()
}

impl TrackRun {
    /// A run labelled `label` of `commit` with `entries`, of this crate's version.
    pub fn new(label: &str, commit: &str, entries: Vec<TrackEntry>) -> TrackRun {
        TrackRun {
            kind: KIND.into(),
            schema_version: SCHEMA_VERSION,
            label: label.into(),
            commit: commit.into(),
            entries,
        }
    }

    /// Reads a run from its JSON text: an error (one line) for text that is not a run, a
    /// document of another kind, one newer than this crate reads, or a figure without samples.
    pub fn parse(text: &str) -> anyhow::Result<TrackRun> {
        let run: TrackRun =
            serde_json::from_str(text).map_err(|e| anyhow::anyhow!("not a track run: {e}"))?;
        if run.kind != KIND {
            anyhow::bail!("not a track run: its kind is {:?}", run.kind);
        }
        if run.schema_version > SCHEMA_VERSION {
            anyhow::bail!(
                "schema version {} is newer than this linklab's {SCHEMA_VERSION} (a newer linklab wrote it)",
                run.schema_version
            );
        }
        for e in &run.entries {
            if let Some(f) = e.figures.iter().find(|f| f.samples.is_empty()) {
                anyhow::bail!(
                    "{} {}: samples must be finite numbers, at least one",
                    e.name,
                    f.name
                );
            }
        }
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::track::figure::{Better, Rule};

    #[test]
    fn a_run_without_kind_and_version_reads_as_version_1() {
        let run = TrackRun::parse(
            r#"{ "label": "v1.2", "entries": [ { "name": "a",
            "figures": [ { "name": "f", "unit": "B", "better": "lower", "rule": "exact",
            "samples": [1.0] } ] } ] }"#,
        )
        .unwrap();
        assert_eq!((run.kind.as_str(), run.schema_version), (KIND, 1));
        assert_eq!(run.commit, "");
        assert_eq!(run.entries[0].kind, "image");
        assert_eq!(run.entries[0].failed, None);
        assert_eq!(run.entries[0].figures[0].better, Better::Lower);
    }

    #[test]
    fn written_in_the_order_import_has_always_read() {
        let f = Figure::new("f", "B", Better::Higher, Rule::Rate, vec![2.0]);
        let e = TrackEntry {
            name: "a".into(),
            kind: "image".into(),
            board: "b".into(),
            failed: None,
            figures: vec![f],
        };
        let text = serde_json::to_string(&TrackRun::new("l", "c", vec![e])).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"track-run","schema_version":1,"label":"l","commit":"c","entries":[{"name":"a","kind":"image","board":"b","failed":null,"figures":[{"name":"f","unit":"B","better":"higher","rule":"rate","samples":[2.0]}]}]}"#
        );
    }

    #[test]
    fn what_is_not_a_run_is_one_line() {
        let bad = [
            (r#"{"label": "x"}"#, "missing field `entries`"),
            (
                r#"{"label": "x", "entries": [], "colour": 1}"#,
                "unknown field `colour`",
            ),
            (
                r#"{"kind": "probe", "label": "x", "entries": []}"#,
                "its kind is \"probe\"",
            ),
            (
                r#"{"schema_version": 2, "label": "x", "entries": []}"#,
                "schema version 2 is newer",
            ),
            (
                r#"{"label": "x", "entries": [{"name": "a", "figures": [{"name": "f",
                "unit": "B", "better": "up", "rule": "exact", "samples": [1]}]}]}"#,
                "unknown variant `up`",
            ),
            (
                r#"{"label": "x", "entries": [{"name": "a", "figures": [{"name": "f",
                "unit": "B", "better": "lower", "rule": "exact", "samples": []}]}]}"#,
                "a f: samples must be finite numbers, at least one",
            ),
        ];
        for (text, expected) in bad {
            let e = TrackRun::parse(text).unwrap_err().to_string();
            assert!(e.contains(expected), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
