//! No circles: no two files of the repository import each other, directly or around a ring.
//! `layers.rs` holds the crates to their layers; this test holds the files inside them.
//!
//! The graph is read from every package's sources (the root workspace's members, the firmware
//! workspace, the board examples, the fuzz targets, the outside project): each `use` and each
//! path in the code that reaches another file of the repository is an arrow, tied by the names
//! it takes (the rules, and what is not read — most macro bodies — are in `file_graph/mod.rs`). A
//! circle is a set of files each reachable from every other; the test lists each with its
//! arrows, `a.rs -> b.rs: Name1, Name2`, which say what to move to break it.
//!
//! The graph's rules are tested on small trees written to a temporary folder, so an empty
//! answer on the repository means no circle, not a graph that saw nothing.

mod file_graph;

use std::path::Path;

use file_graph::Graph;

#[test]
fn the_repository_has_no_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let graph = Graph::of_tree(&root);
    assert!(
        graph.problems.is_empty(),
        "the import graph could not read all of the repository:\n{}",
        graph.problems.join("\n")
    );
    // Enough of the tree was read: every package (layers.rs counts them too) and their files.
    assert!(
        graph.packages.len() >= 30,
        "too few packages: {:?}",
        graph.packages
    );
    assert!(
        graph.files.len() >= 400,
        "too few files read: {}",
        graph.files.len()
    );
    assert!(
        graph.arrows.len() >= 500,
        "too few arrows: {}",
        graph.arrows.len()
    );
    eprintln!(
        "import graph: {} packages, {} files, {} arrows",
        graph.packages.len(),
        graph.files.len(),
        graph.arrows.len()
    );
    let circles = graph.circles();
    let mut text = String::new();
    for (i, circle) in circles.iter().enumerate() {
        text.push_str(&format!("circle {}: {circle}", i + 1));
    }
    assert!(
        circles.is_empty(),
        "the repository's files import each other around {} circle(s); each arrow says what \
         the first file takes from the second (move what both need into a module both can \
         import, or turn the arrow around):\n{text}",
        circles.len()
    );
}

/// Writes `files` under a new temporary folder and reads its graph.
fn graph_of(files: &[(&str, &str)]) -> Graph {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let graph = Graph::of_tree(dir.path());
    assert!(graph.problems.is_empty(), "{:?}", graph.problems);
    graph
}

/// The graph's arrows, one line each.
fn arrows(graph: &Graph) -> Vec<String> {
    let line = |((from, to), names): (&(String, String), &std::collections::BTreeSet<String>)| {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        format!("{from} -> {to}: {}", names.join(", "))
    };
    graph.arrows.iter().map(line).collect()
}

/// The graph's circles, as the repository test prints them.
fn circles(graph: &Graph) -> Vec<String> {
    graph.circles().iter().map(ToString::to_string).collect()
}

const PACKAGE_A: (&str, &str) = ("a/Cargo.toml", "[package]\nname = \"a\"\n");

#[test]
fn siblings_importing_each_other_through_super_close_a_circle_a_child_and_its_parent_do_not() {
    let graph = graph_of(&[
        PACKAGE_A,
        ("a/src/lib.rs", "pub mod m;\n"),
        (
            "a/src/m.rs",
            "mod x;\nmod y;\npub struct Cfg;\npub fn f() { x::g(); }\n",
        ),
        (
            "a/src/m/x.rs",
            "use super::Cfg;\npub fn g() { let _ = Cfg; super::y::h(); }\n",
        ),
        ("a/src/m/y.rs", "pub fn h() { super::x::g(); }\n"),
    ]);
    assert_eq!(
        arrows(&graph),
        [
            "a/src/m.rs -> a/src/m/x.rs: g",
            "a/src/m/x.rs -> a/src/m/y.rs: h",
            "a/src/m/y.rs -> a/src/m/x.rs: g",
        ],
        "x's `use super::Cfg` runs to its own parent: no arrow"
    );
    assert_eq!(
        circles(&graph),
        ["2 files: a/src/m/x.rs, a/src/m/y.rs\n  \
          a/src/m/x.rs -> a/src/m/y.rs: h\n  \
          a/src/m/y.rs -> a/src/m/x.rs: g\n"]
    );
}

#[test]
fn a_re_export_is_an_arrow_and_its_name_stays_where_it_was_reached() {
    let graph = graph_of(&[
        PACKAGE_A,
        ("a/src/lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        (
            "a/src/a.rs",
            "pub use crate::b::Thing;\npub fn helper() {}\n",
        ),
        (
            "a/src/b.rs",
            "pub struct Thing;\npub fn make() -> Thing { crate::a::helper(); Thing }\n",
        ),
        ("a/src/c.rs", "use crate::a::Thing;\n"),
    ]);
    assert_eq!(
        arrows(&graph),
        [
            "a/src/a.rs -> a/src/b.rs: Thing",
            "a/src/b.rs -> a/src/a.rs: helper",
            "a/src/c.rs -> a/src/a.rs: Thing",
        ]
    );
    assert_eq!(circles(&graph).len(), 1);
}

#[test]
fn a_crate_path_reaches_the_other_packages_files() {
    let graph = graph_of(&[
        ("one/Cargo.toml", "[package]\nname = \"one\"\n"),
        ("one/src/lib.rs", "pub mod a;\n"),
        ("one/src/a.rs", "pub fn f() { two_b::t(); }\n"),
        ("two-b/Cargo.toml", "[package]\nname = \"two-b\"\n"),
        ("two-b/src/lib.rs", "pub fn t() { ::one::a::f() }\n"),
        // An outside crate is no arrow.
        ("two-b/src/main.rs", "fn main() { std::process::exit(0) }\n"),
    ]);
    assert_eq!(
        arrows(&graph),
        [
            "one/src/a.rs -> two-b/src/lib.rs: t",
            "two-b/src/lib.rs -> one/src/a.rs: f",
        ]
    );
    assert_eq!(
        circles(&graph),
        ["2 files: one/src/a.rs, two-b/src/lib.rs\n  \
          one/src/a.rs -> two-b/src/lib.rs: t\n  \
          two-b/src/lib.rs -> one/src/a.rs: f\n"]
    );
}

#[test]
fn a_parent_using_its_children_and_tests_using_their_parent_make_no_circle() {
    let graph = graph_of(&[
        PACKAGE_A,
        (
            "a/src/lib.rs",
            "pub mod m;\nuse m::c;\npub fn top() { c::g(); }\n",
        ),
        (
            "a/src/m.rs",
            "pub mod c;\nmod inline { pub mod deep; }\npub struct S;\n\
             pub fn f() -> c::T { inline::deep::d(); c::g() }\n#[cfg(test)]\nmod tests;\n",
        ),
        (
            "a/src/m/c.rs",
            "pub struct T;\npub fn g() -> T { T }\nmacro_rules! s { () => { super::S } }\n",
        ),
        ("a/src/m/inline/deep.rs", "pub(in crate::m) fn d() {}\n"),
        (
            "a/src/m/tests.rs",
            "use super::*;\n#[test]\nfn t() { let _ = f(); c::g(); }\n",
        ),
    ]);
    assert_eq!(
        arrows(&graph),
        [
            "a/src/lib.rs -> a/src/m/c.rs: c, g",
            "a/src/m.rs -> a/src/m/c.rs: T, g",
            "a/src/m.rs -> a/src/m/inline/deep.rs: d",
            "a/src/m/tests.rs -> a/src/m/c.rs: g",
        ]
    );
    assert!(circles(&graph).is_empty());
}

#[test]
fn macro_arguments_that_read_as_expressions_are_code_other_macro_bodies_are_not() {
    let graph = graph_of(&[
        PACKAGE_A,
        ("a/src/lib.rs", "pub mod m;\npub mod n;\npub mod o;\n"),
        ("a/src/m.rs", "pub fn f() -> String { format!(\"{}\", crate::n::name(1)) }\n"),
        ("a/src/n.rs", "pub fn name(_: u8) { assert!(crate::m::f().is_empty(), \"{}\", 1) }\n"),
        (
            "a/src/o.rs",
            "macro_rules! m { () => { crate::m::f() } }\npub fn g() { let _ = vec![crate::n::name(0); 2]; }\n",
        ),
    ]);
    assert_eq!(
        arrows(&graph),
        [
            "a/src/m.rs -> a/src/n.rs: name",
            "a/src/n.rs -> a/src/m.rs: f"
        ]
    );
    assert_eq!(circles(&graph).len(), 1);
}

#[test]
fn a_path_attribute_mounts_a_file_from_anywhere() {
    let graph = graph_of(&[
        PACKAGE_A,
        (
            "a/src/lib.rs",
            "#[path = \"../elsewhere/imp.rs\"]\nmod imp;\nmod other;\nmod outer { mod inner; }\n\
             pub struct Root;\npub fn r() { imp::go() }\n",
        ),
        (
            "a/elsewhere/imp.rs",
            "mod deeper;\npub fn go() { let _ = crate::Root; crate::other::o(); deeper::d(); }\n",
        ),
        ("a/elsewhere/deeper.rs", "pub fn d() {}\n"),
        (
            "a/src/other.rs",
            "pub fn o() {}\npub fn p() { crate::imp::go() }\n",
        ),
        ("a/src/outer/inner.rs", "pub fn i() { super::super::r() }\n"),
        // A test target mounting the same file: one node, the arrows of both places.
        (
            "a/tests/t.rs",
            "#[path = \"../elsewhere/deeper.rs\"]\nmod deeper;\nfn x() { deeper::d() }\n",
        ),
    ]);
    assert_eq!(
        arrows(&graph),
        [
            "a/elsewhere/imp.rs -> a/elsewhere/deeper.rs: d",
            "a/elsewhere/imp.rs -> a/src/other.rs: o",
            "a/src/lib.rs -> a/elsewhere/imp.rs: go",
            "a/src/other.rs -> a/elsewhere/imp.rs: go",
            "a/tests/t.rs -> a/elsewhere/deeper.rs: d",
        ]
    );
    assert_eq!(
        circles(&graph),
        ["2 files: a/elsewhere/imp.rs, a/src/other.rs\n  \
          a/elsewhere/imp.rs -> a/src/other.rs: o\n  \
          a/src/other.rs -> a/elsewhere/imp.rs: go\n"]
    );
}

#[test]
fn a_ring_of_three_is_one_circle() {
    let graph = graph_of(&[
        PACKAGE_A,
        ("a/src/main.rs", "mod x;\nmod y;\nmod z;\nfn main() {}\n"),
        ("a/src/x.rs", "use crate::y::Y;\npub struct X;\n"),
        ("a/src/y.rs", "pub struct Y(pub crate::z::Z);\n"),
        (
            "a/src/z.rs",
            "pub fn z(_: &super::x::X) {}\npub struct Z;\n",
        ),
    ]);
    assert_eq!(
        circles(&graph),
        ["3 files: a/src/x.rs, a/src/y.rs, a/src/z.rs\n  \
          a/src/x.rs -> a/src/y.rs: Y\n  \
          a/src/y.rs -> a/src/z.rs: Z\n  \
          a/src/z.rs -> a/src/x.rs: X\n"]
    );
}
