//! The repository's Cargo manifests as the layer test reads them: each package's name and
//! the names of the dependencies it lists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::root;

/// One package's manifest: its name and every dependency it names (of any kind: normal,
/// dev, build, per target).
#[derive(Debug)]
pub struct Manifest {
    pub path: PathBuf,
    pub name: String,
    pub deps: BTreeSet<String>,
}

/// Reads the package name and dependency names of a Cargo manifest: the keys of its
/// `[*dependencies]` tables and the names of its `[*dependencies.NAME]` tables (enough for
/// the repository's manifests, which keep one dependency a line). None for a manifest
/// without a package (a workspace's).
fn manifest(path: &Path) -> Option<Manifest> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut name = None;
    let mut deps = BTreeSet::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
            if let Some((table, dep)) = section.rsplit_once('.') {
                if table.ends_with("dependencies") && !table.starts_with("workspace") {
                    deps.insert(dep.to_string());
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if section == "package" && key == "name" {
            name = Some(value.trim().trim_matches('"').to_string());
        } else if section.ends_with("dependencies") && !section.starts_with("workspace") {
            let dep = key.split('.').next().unwrap_or(key).trim();
            if !dep.is_empty() && !dep.starts_with('#') {
                deps.insert(dep.to_string());
            }
        }
    }
    Some(Manifest {
        path: path.to_path_buf(),
        name: name?,
        deps,
    })
}

/// Every package manifest of the repository.
pub fn manifests() -> Vec<Manifest> {
    let root = root();
    let mut paths = vec![root.join("fuzz/Cargo.toml")];
    for dir in ["crates", "firmware", "examples/boards"] {
        let entries = std::fs::read_dir(root.join(dir)).unwrap();
        for e in entries {
            let p = e.unwrap().path().join("Cargo.toml");
            if p.is_file() {
                paths.push(p);
            }
        }
    }
    let found: Vec<Manifest> = paths.iter().filter_map(|p| manifest(p)).collect();
    assert!(found.len() >= 20, "too few manifests found: {found:?}");
    found
}
