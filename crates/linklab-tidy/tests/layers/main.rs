//! The layer picture stays true: who may depend on whom, as a table ([`ROWS`]), checked
//! against every Cargo manifest of the repository (the workspace's crates, the firmware
//! workspace, the board examples, the fuzz targets) and against the README's picture, which
//! this test renders from the table and requires verbatim ("Layers").
//!
//! The rules (ARCHITECTURE.md, "The layers and the rule that holds them"): lower crates
//! never depend on higher ones — every arrow runs to a lower layer; phy10, mac, perf and
//! serial are siblings — they share a layer, so none may depend on another; linklab-sim and
//! the firmware join them; the CLI sits on top. A manifest with a dependency the table does
//! not draw (a back arrow among them) fails, and so does an arrow the table draws that no
//! manifest has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod table;

use table::{Row, LAYERS, ROWS, SIBLINGS};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One package's manifest: its name and every dependency it names (of any kind: normal,
/// dev, build, per target).
#[derive(Debug)]
struct Manifest {
    path: PathBuf,
    name: String,
    deps: BTreeSet<String>,
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
fn manifests() -> Vec<Manifest> {
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

fn row_of(package: &str) -> Option<&'static Row> {
    ROWS.iter().find(|r| r.packages.contains(&package))
}

fn row(label: &str) -> &'static Row {
    ROWS.iter()
        .find(|r| r.label == label)
        .unwrap_or_else(|| panic!("no row {label}"))
}

/// The picture, as the README holds it.
fn picture() -> String {
    let mut out = String::from("```\n");
    for (layer, title) in LAYERS {
        let head = format!(" ── {layer}: {title} ");
        out.push_str(&format!("{head:─<96}\n"));
        for r in ROWS.iter().filter(|r| r.layer == layer) {
            let line = if r.uses.is_empty() {
                format!(" {:<24} {}", r.label, r.kind)
            } else {
                format!(" {:<24} {:<7} ──► {}", r.label, r.kind, r.uses.join(", "))
            };
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out.push_str("```\n");
    out
}

#[test]
fn the_table_keeps_the_design_rules() {
    for r in ROWS {
        for u in r.uses {
            let used = row(u);
            assert!(
                used.layer < r.layer,
                "{} (layer {}) uses {u} (layer {}): a back arrow",
                r.label,
                r.layer,
                used.layer
            );
            if r.kind == "no_std" {
                assert_eq!(used.kind, "no_std", "{} (no_std) uses {u} (std)", r.label);
            }
        }
    }
    let layer = row(SIBLINGS[0]).layer;
    for s in SIBLINGS {
        assert_eq!(
            row(s).layer,
            layer,
            "{s} is not a sibling of {}",
            SIBLINGS[0]
        );
    }
    for title in LAYERS.map(|(l, _)| l) {
        assert!(
            ROWS.iter().any(|r| r.layer == title),
            "layer {title} is empty"
        );
    }
}

#[test]
fn every_manifest_depends_only_on_what_the_table_draws() {
    let found = manifests();
    // Every package has its row, every row's packages exist.
    for m in &found {
        assert!(
            row_of(&m.name).is_some(),
            "{} ({}): a package the layer table does not place (add a row to crates/linklab-tidy/tests/layers.rs and the README's picture)",
            m.name,
            m.path.display()
        );
    }
    let names: BTreeSet<&str> = found.iter().map(|m| m.name.as_str()).collect();
    for r in ROWS {
        for p in r.packages {
            assert!(
                names.contains(p),
                "row {}: no package {p} in the repository",
                r.label
            );
        }
    }
    // Each row's arrows are its packages' dependencies among ours: no more, no fewer.
    let mut drawn: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for m in &found {
        let r = row_of(&m.name).unwrap();
        let uses = drawn.entry(r.label).or_default();
        for d in &m.deps {
            if let Some(target) = row_of(d) {
                if target.label != r.label {
                    assert!(
                        r.uses.contains(&target.label),
                        "{} ({}) depends on {d}, which the layer table does not draw for {}{}",
                        m.name,
                        m.path.display(),
                        r.label,
                        if target.layer >= r.layer {
                            " (and it is not below it: a back arrow)"
                        } else {
                            ""
                        }
                    );
                    uses.insert(target.label);
                }
            }
        }
    }
    for r in ROWS {
        let had = drawn.get(r.label).cloned().unwrap_or_default();
        for u in r.uses {
            assert!(
                had.contains(u),
                "the layer table draws {} ──► {u}, which no manifest of {:?} has",
                r.label,
                r.packages
            );
        }
    }
}

#[test]
fn the_readme_draws_the_table() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let picture = picture();
    assert!(
        readme.contains(&picture),
        "README.md's layer picture (\"Layers\") is not the table's; paste this:\n{picture}"
    );
}
