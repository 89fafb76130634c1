//! The CLI's integration tests stay a few harnesses: `crates/linklab/Cargo.toml` has
//! `autotests = false` and one `[[test]]` per harness (`tests/<harness>/main.rs`), so a test
//! file dropped beside them would not even be compiled. This test fails on such a file, on a
//! harness folder the manifest does not name, on a `[[test]]` whose file is missing, and on
//! a module file inside a harness folder that its `main.rs` does not declare.
//!
//! A new test goes into a harness as a module (CONTRIBUTING.md, "Adding a test").

use std::collections::BTreeSet;
use std::path::Path;

/// The `path`s of the `[[test]]` targets of the manifest text, or None when it lets cargo
/// find tests on its own (`autotests` not false).
fn harness_paths(manifest: &str) -> Option<BTreeSet<String>> {
    let mut autotests = true;
    let mut paths = BTreeSet::new();
    let mut section = String::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"').to_string();
        match (section.as_str(), key.trim()) {
            ("[package]", "autotests") => autotests = value != "false",
            ("[[test]]", "path") => {
                paths.insert(value);
            }
            _ => {}
        }
    }
    (!autotests).then_some(paths)
}

/// What is wrong with the test layout of the package at `dir`, one line each.
fn layout_problems(dir: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("the manifest");
    let Some(harnesses) = harness_paths(&manifest) else {
        return vec!["Cargo.toml: `autotests = false` missing from [package]".to_string()];
    };
    let mut out = Vec::new();
    for h in &harnesses {
        if !dir.join(h).is_file() {
            out.push(format!("[[test]] {h}: no such file"));
        }
    }
    let tests = dir.join("tests");
    let mut entries: Vec<_> = std::fs::read_dir(&tests)
        .expect("the tests folder")
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_file() && name.ends_with(".rs") {
            out.push(format!(
                "tests/{name}: a test file of its own is not compiled (autotests = false): \
                 make it a module of a harness (CONTRIBUTING.md, \"Adding a test\")"
            ));
        } else if path.join("main.rs").is_file() {
            let main = format!("tests/{name}/main.rs");
            if !harnesses.contains(&main) {
                out.push(format!(
                    "{main}: a harness Cargo.toml does not name (add a [[test]], or make it a \
                     module of a harness)"
                ));
                continue;
            }
            out.extend(undeclared_modules(&path, &format!("tests/{name}")));
        }
    }
    out
}

/// The `.rs` files directly in the harness folder `dir` that its `main.rs` does not declare
/// (`mod NAME;`).
fn undeclared_modules(dir: &Path, rel: &str) -> Vec<String> {
    let main = std::fs::read_to_string(dir.join("main.rs")).expect("main.rs");
    let declared: BTreeSet<&str> = main
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(module) = name.strip_suffix(".rs") {
            if module != "main" && !declared.contains(module) {
                out.push(format!(
                    "{rel}/{name}: not declared in {rel}/main.rs (`mod {module};`), so not compiled"
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_cli_s_tests_are_its_harnesses_and_their_modules() {
    let cli = linklab_tidy::repository_root().join("crates/linklab");
    let problems = layout_problems(&cli);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let manifest = std::fs::read_to_string(cli.join("Cargo.toml")).unwrap();
    let harnesses = harness_paths(&manifest).unwrap();
    assert!(
        (2..=6).contains(&harnesses.len()),
        "a handful of harnesses, not {harnesses:?}"
    );
}

#[test]
fn a_stray_test_file_a_stray_harness_and_an_undeclared_module_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "Cargo.toml",
        "[package]\nname = \"x\"\nautotests = false\n\n[[test]]\nname = \"a\"\npath = \"tests/a/main.rs\"\n\n[[test]]\nname = \"gone\"\npath = \"tests/gone/main.rs\"\n",
    );
    write("tests/a/main.rs", "//! A.\n\nmod one;\n");
    write("tests/a/one.rs", "");
    write("tests/a/two.rs", "");
    write("tests/b/main.rs", "mod x;\n");
    write("tests/new_area.rs", "");
    assert_eq!(
        layout_problems(dir.path())
            .iter()
            .map(|p| p.split(':').next().unwrap().to_string())
            .collect::<Vec<_>>(),
        [
            "[[test]] tests/gone/main.rs",
            "tests/a/two.rs",
            "tests/b/main.rs",
            "tests/new_area.rs"
        ]
    );
    write("Cargo.toml", "[package]\nname = \"x\"\n");
    assert_eq!(layout_problems(dir.path()).len(), 1, "autotests not off");
}
