//! A run measured elsewhere (a user's own CI, another bench), stored like one of track's own
//! so compare, walk and report treat it alike, and a stored run written back in that form (a
//! baseline kept in a repository): linklab-results' [`TrackRun`], the document of
//! `linklab track import` and `linklab track export`.
//!
//! ```json
//! { "label": "v1.2", "commit": "", "entries": [ { "name": "board-a", "kind": "image",
//!   "figures": [ { "name": "rx_instr_per_byte", "unit": "instr/B", "better": "lower",
//!                  "rule": "count", "samples": [3.51, 3.52] } ] } ] }
//! ```

use linklab_results::track::{TrackEntry, TrackRun};

use crate::run::{EntryResult, Run};
use crate::stamp::{now, Stamp};

/// `doc` as a run to store, read from `source` (a file's name: the stamp's suite is `import
/// SOURCE`); stamped now, with this linklab's version and no tools.
pub fn from_document(doc: TrackRun, source: &str) -> Run {
    let entries = doc
        .entries
        .into_iter()
        .map(|e| {
            let mut r = EntryResult::new(&e.name, &e.kind, &e.board);
            r.failed = e.failed;
            r.figures = e.figures;
            r
        })
        .collect();
    let t = now();
    Run {
        id: None,
        stamp: Stamp {
            label: doc.label,
            commit: doc.commit,
            started_unix: t,
            finished_unix: t,
            linklab_version: env!("CARGO_PKG_VERSION").into(),
            qemu_version: String::new(),
            tools: String::new(),
            host_load_start: 0.0,
            host_load_end: 0.0,
            suite: format!("import {source}"),
            repeat: 0,
        },
        entries,
    }
}

/// `run` as the document `import` reads.
pub fn to_document(run: &Run) -> TrackRun {
    let entries = run
        .entries
        .iter()
        .map(|e| TrackEntry {
            name: e.name.clone(),
            kind: e.kind.clone(),
            board: e.board.clone(),
            failed: e.failed.clone(),
            figures: e.figures.clone(),
        })
        .collect();
    TrackRun::new(&run.stamp.label, &run.stamp.commit, entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_stored_and_written_back_is_the_same() {
        let text = r#"{"kind": "track-run", "schema_version": 1, "label": "v1", "commit": "abc",
            "entries": [{"name": "a", "kind": "sim", "board": "", "failed": "boom", "figures": []},
            {"name": "b", "kind": "image", "board": "mps2-an385", "failed": null, "figures": [
            {"name": "f", "unit": "B", "better": "lower", "rule": "exact", "samples": [1.0]}]}]}"#;
        let doc = TrackRun::parse(text).unwrap();
        let run = from_document(doc.clone(), "x.json");
        assert_eq!(run.stamp.suite, "import x.json");
        assert_eq!(run.entries[0].failed.as_deref(), Some("boom"));
        assert_eq!(to_document(&run), doc);
    }
}
