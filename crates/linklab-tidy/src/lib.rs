//! The repository's invariants, in a crate that builds in seconds: `cargo test -p
//! linklab-tidy` checks them without building the CLI or any library of the workspace.
//!
//! Its tests hold the layer table (`tests/layers/`), the file and function bounds
//! (`tests/bounds.rs`), the import graph (`tests/import_graph.rs`), the layout of the CLI's
//! integration tests (`tests/harnesses.rs`) and the docs' rules (`tests/docs.rs`, over
//! [`docs`]).

pub mod docs;

use std::path::{Path, PathBuf};

/// The repository's root (this crate lives at `crates/linklab-tidy`).
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
