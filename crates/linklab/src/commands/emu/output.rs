//! How the measuring verbs give their documents: printed as JSON, and written to `--json
//! FILE` too if given.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;

/// Prints a document as JSON, and writes it to `path` too if given.
pub fn report(document: &impl Serialize, path: Option<&Path>) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(document)?);
    match path {
        Some(path) => write_json(document, path),
        None => Ok(()),
    }
}

/// Writes a document as JSON to `path`.
pub fn write_json(document: &impl Serialize, path: &Path) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(document)?;
    text.push(b'\n');
    std::fs::write(path, text).with_context(|| format!("--json: cannot write {}", path.display()))
}
