//! `linklab track`'s document: a run of a suite as `linklab track export` writes it and
//! `linklab track import` reads it (`"kind": "track-run"`, schema/track-run.schema.json), and
//! its figures' words: which way is better, and the rule that compares two runs of a figure.

pub mod figure;
pub mod run;

pub use figure::{Better, Figure, Rule};
pub use run::{TrackEntry, TrackRun, KIND, SCHEMA_VERSION};
