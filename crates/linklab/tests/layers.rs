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

/// One row of the picture: a crate (or crates of one kind), its layer, whether it runs
/// without the standard library, and the rows it may use.
struct Row {
    /// As the picture names it.
    label: &'static str,
    /// The Cargo packages it stands for.
    packages: &'static [&'static str],
    /// Its layer: every row it uses is in a lower one.
    layer: u8,
    /// `std` or `no_std`.
    kind: &'static str,
    /// The rows it uses (by label), as its manifests have them: no more, no fewer.
    uses: &'static [&'static str],
}

/// The layers' titles, top first.
const LAYERS: [(u8, &str); 12] = [
    (11, "the CLI"),
    (10, "figures per build"),
    (9, "emulated boards"),
    (8, "measuring and serving a device from a host"),
    (7, "the page"),
    (6, "the documents"),
    (5, "images built on another image"),
    (4, "firmware images, board examples, fuzz targets"),
    (3, "where the siblings meet"),
    (2, "drivers and glue over one or two siblings"),
    (1, "siblings: none uses another"),
    (0, "what the device crates share"),
];

/// Who may depend on whom.
const ROWS: &[Row] = &[
    Row {
        label: "linklab (the CLI)",
        packages: &["linklab"],
        layer: 11,
        kind: "std",
        uses: &[
            "linklab-track",
            "linklab-emu",
            "linklab-measure",
            "linklab-serve",
            "linklab-report",
            "linklab-results",
            "linklab-serial",
            "linklab-perf-host",
            "linklab-perf",
        ],
    },
    Row {
        label: "linklab-track",
        packages: &["linklab-track"],
        layer: 10,
        kind: "std",
        uses: &["linklab-emu", "linklab-report", "linklab-results"],
    },
    Row {
        label: "linklab-emu",
        packages: &["linklab-emu"],
        layer: 9,
        kind: "std",
        uses: &[
            "linklab-measure",
            "linklab-serve",
            "linklab-results",
            "linklab-sim",
            "linklab-tap",
            "linklab-mac",
            "linklab-perf",
            "linklab-phy10",
        ],
    },
    Row {
        label: "linklab-measure",
        packages: &["linklab-measure"],
        layer: 8,
        kind: "std",
        uses: &[
            "linklab-results",
            "linklab-sim",
            "linklab-perf-host",
            "linklab-perf",
        ],
    },
    Row {
        label: "linklab-serve",
        packages: &["linklab-serve"],
        layer: 8,
        kind: "std",
        uses: &[
            "linklab-results",
            "linklab-sim",
            "linklab-perf-host",
            "linklab-tap",
            "linklab-serial",
            "linklab-mac",
            "linklab-perf",
        ],
    },
    Row {
        label: "linklab-report",
        packages: &["linklab-report"],
        layer: 7,
        kind: "std",
        uses: &["linklab-results"],
    },
    Row {
        label: "linklab-results",
        packages: &["linklab-results"],
        layer: 6,
        kind: "std",
        uses: &[],
    },
    Row {
        label: "fw-phy10-bench",
        packages: &["fw-phy10-bench"],
        layer: 5,
        kind: "no_std",
        uses: &["fw-riscv32-virt", "linklab-mac", "linklab-phy10"],
    },
    Row {
        label: "fw-mps2-an385",
        packages: &["fw-mps2-an385"],
        layer: 4,
        kind: "no_std",
        uses: &[
            "linklab-firmware",
            "linklab-lan9118",
            "linklab-mac",
            "linklab-perf",
        ],
    },
    Row {
        label: "fw-riscv32-virt",
        packages: &["fw-riscv32-virt"],
        layer: 4,
        kind: "no_std",
        uses: &[
            "linklab-firmware",
            "linklab-virtio-net",
            "linklab-mac",
            "linklab-perf",
            "linklab-phy10",
        ],
    },
    Row {
        label: "fw-zynq7000",
        packages: &["fw-zynq7000"],
        layer: 4,
        kind: "no_std",
        uses: &[
            "linklab-firmware",
            "linklab-cortex-a9",
            "linklab-mac",
            "linklab-perf",
        ],
    },
    Row {
        label: "fw-sabrelite",
        packages: &["fw-sabrelite"],
        layer: 4,
        kind: "no_std",
        uses: &[
            "linklab-firmware",
            "linklab-cortex-a9",
            "linklab-imx-enet",
            "linklab-mac",
            "linklab-perf",
        ],
    },
    Row {
        label: "examples/boards/*",
        packages: &[
            "esp32-p4",
            "nucleo-f429zi",
            "nucleo-h743zi",
            "w5500-evb-pico",
            "rp2040-two-cores-test",
        ],
        layer: 4,
        kind: "no_std",
        uses: &["linklab-perf"],
    },
    Row {
        label: "examples/boards/teensy41",
        packages: &["teensy41"],
        layer: 4,
        kind: "no_std",
        uses: &["linklab-imx-enet", "linklab-mac", "linklab-perf"],
    },
    Row {
        label: "examples/boards/rp2040-usb",
        packages: &["rp2040-usb"],
        layer: 4,
        kind: "no_std",
        uses: &["linklab-serial", "linklab-perf"],
    },
    Row {
        label: "examples/boards/*-soft-phy",
        packages: &["esp32-c6-soft-phy", "rp2040-soft-phy", "rp2350-soft-phy"],
        layer: 4,
        kind: "no_std",
        uses: &[
            "examples/boards/soft-phy",
            "linklab-mac",
            "linklab-perf",
            "linklab-phy10",
        ],
    },
    Row {
        label: "linklab-fuzz",
        packages: &["linklab-fuzz"],
        layer: 4,
        kind: "std",
        // linklab-sim: the seed tool's sample wire (fuzz/seed/corpus.rs), a dev-dependency.
        uses: &[
            "linklab-serial",
            "linklab-mac",
            "linklab-perf",
            "linklab-phy10",
            "linklab-sim",
        ],
    },
    Row {
        label: "linklab-firmware",
        packages: &["linklab-firmware"],
        layer: 3,
        kind: "no_std",
        uses: &[
            "linklab-app-gate",
            "linklab-serial",
            "linklab-mac",
            "linklab-perf",
            "linklab-memcpy",
            "linklab-small-builtins",
        ],
    },
    Row {
        label: "linklab-embassy-test",
        packages: &["linklab-embassy-test"],
        layer: 3,
        kind: "std",
        uses: &[
            "linklab-app-gate",
            "linklab-tap",
            "linklab-mac",
            "linklab-perf",
        ],
    },
    Row {
        label: "linklab-sim",
        packages: &["linklab-sim"],
        layer: 3,
        kind: "std",
        uses: &["linklab-mac", "linklab-perf", "linklab-phy10"],
    },
    Row {
        label: "examples/boards/soft-phy",
        packages: &["soft-phy-board"],
        layer: 3,
        kind: "no_std",
        uses: &["linklab-mac", "linklab-phy10"],
    },
    Row {
        label: "linklab-lan9118",
        packages: &["linklab-lan9118"],
        layer: 2,
        kind: "no_std",
        uses: &["linklab-mac", "linklab-mmio", "linklab-fmt"],
    },
    Row {
        label: "linklab-virtio-net",
        packages: &["linklab-virtio-net"],
        layer: 2,
        kind: "no_std",
        uses: &["linklab-mac", "linklab-mmio", "linklab-fmt"],
    },
    Row {
        label: "linklab-imx-enet",
        packages: &["linklab-imx-enet"],
        layer: 2,
        kind: "no_std",
        uses: &["linklab-mac", "linklab-mmio", "linklab-fmt"],
    },
    Row {
        label: "linklab-app-gate",
        packages: &["linklab-app-gate"],
        layer: 2,
        kind: "no_std",
        uses: &["linklab-mac", "linklab-perf"],
    },
    Row {
        label: "linklab-perf-host",
        packages: &["linklab-perf-host"],
        layer: 2,
        kind: "std",
        uses: &["linklab-perf"],
    },
    Row {
        label: "linklab-tap",
        packages: &["linklab-tap"],
        layer: 2,
        kind: "std",
        uses: &["linklab-mac"],
    },
    Row {
        label: "linklab-phy10",
        packages: &["linklab-phy10"],
        layer: 1,
        kind: "no_std",
        uses: &["linklab-fmt"],
    },
    Row {
        label: "linklab-mac",
        packages: &["linklab-mac"],
        layer: 1,
        kind: "no_std",
        uses: &["linklab-fmt"],
    },
    Row {
        label: "linklab-perf",
        packages: &["linklab-perf"],
        layer: 1,
        kind: "no_std",
        uses: &["linklab-fmt"],
    },
    Row {
        label: "linklab-serial",
        packages: &["linklab-serial"],
        layer: 1,
        kind: "no_std",
        uses: &[],
    },
    Row {
        label: "linklab-fmt",
        packages: &["linklab-fmt"],
        layer: 0,
        kind: "no_std",
        uses: &[],
    },
    Row {
        label: "linklab-mmio",
        packages: &["linklab-mmio"],
        layer: 0,
        kind: "no_std",
        uses: &[],
    },
    Row {
        label: "linklab-cortex-a9",
        packages: &["linklab-cortex-a9"],
        layer: 0,
        kind: "no_std",
        uses: &[],
    },
    Row {
        label: "linklab-memcpy",
        packages: &["linklab-memcpy"],
        layer: 0,
        kind: "no_std",
        uses: &[],
    },
    Row {
        label: "linklab-small-builtins",
        packages: &["linklab-small-builtins"],
        layer: 0,
        kind: "no_std",
        uses: &[],
    },
];

/// ARCHITECTURE.md: "phy10, mac, perf and serial are siblings: none uses another".
const SIBLINGS: [&str; 4] = [
    "linklab-phy10",
    "linklab-mac",
    "linklab-perf",
    "linklab-serial",
];

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
            "{} ({}): a package the layer table does not place (add a row to crates/linklab/tests/layers.rs and the README's picture)",
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
