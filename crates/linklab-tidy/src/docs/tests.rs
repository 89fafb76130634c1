//! The docs check catches what it must and passes what it may: each fault planted in a scratch
//! repository is named, and the good lines pass.

use super::check;
use super::links::normpath;
use super::markdown::slug;

/// The planted tree: good pages, and one bad page and one bad source naming each fault.
const PLANTED: &[(&str, &str)] = &[
    (
        "README.md",
        "# Top\n\n## Two commands: `a` and b\n\n## Top\n\n\
         [ok](docs/page.md#the-page) [ok2](#top-1) [ok3](#two-commands-a-and-b)\n\
         [ok4](docs/) [ok5](src/lib.rs#L3) `[not a link](nowhere.md)`\n\
         bbqueue issue #129, owner/repo#4 and zephyr PRs #93965 are upstream.\n\
         ```sh\ncp x /tmp/y   # a command\n```\n",
    ),
    (
        "docs/page.md",
        "# The page\n\n<a id=\"kept\"></a>[back](../README.md#top)\n[kept](#kept)\n",
    ),
    ("src/lib.rs", "// one\n// two\n// three\n"),
    (
        "docs/bad.md",
        "# Bad\n\n[dead](missing.md)\n[dead anchor](page.md#no-such)\n\
         [out](../../elsewhere.md)\n[line](../src/lib.rs#here)\n\
         See issue 12, and the issue #12 of ours.\nFound in this round's runs.\n\
         Built in /work/x; notes in ../shared.\nSaved as /tmp/x.\n",
    ),
    ("src/main.rs", "// the issue's goal, stop 44\n"),
    (
        "CONTRIBUTING.md",
        "# Guide\n\nMeasured on 28 November, in run 12.\n\nIt takes 12 s; run 3 times.\n",
    ),
];

/// Each fault the check must name (a prefix or part of its line).
const EXPECTED: &[&str] = &[
    "docs/bad.md:3: link missing.md: no such file",
    "docs/bad.md:4: link page.md#no-such: no heading",
    "docs/bad.md:5: link ../../elsewhere.md: points outside",
    "docs/bad.md:6: link ../src/lib.rs#here: an anchor into a file that is not Markdown",
    "docs/bad.md:7: an issue number of a tracker not in the repository: \"issue 12\"",
    "docs/bad.md:7: an issue number of a tracker not in the repository: \"the issue #12\"",
    "docs/bad.md:8: a work round",
    "docs/bad.md:9: a path of the build machine",
    "docs/bad.md:9: the notes folder",
    "docs/bad.md:10: a /tmp path in prose",
    "src/main.rs:1: an issue of a tracker",
    "src/main.rs:1: a stop of the project's history",
    "CONTRIBUTING.md:3: a date on a front page: \"28 November\"",
    "CONTRIBUTING.md:3: a run number on a front page: \"run 12\"",
];

#[test]
fn every_planted_fault_is_caught_and_the_good_lines_pass() {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in PLANTED {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(git.success());
    let (problems, files) = check(dir.path());
    assert_eq!(files, PLANTED.len());
    let names = |p: &str, e: &str| p.starts_with(e) || p.contains(e);
    let missed: Vec<_> = EXPECTED
        .iter()
        .filter(|e| !problems.iter().any(|p| names(p, e)))
        .collect();
    let extra: Vec<_> = problems
        .iter()
        .filter(|p| !EXPECTED.iter().any(|e| names(p, e)))
        .collect();
    assert!(
        missed.is_empty() && extra.is_empty(),
        "not caught: {missed:#?}\na good line failed: {extra:#?}"
    );
}

#[test]
fn anchors_follow_github_s_rule() {
    assert_eq!(slug("Two commands: `a` and b"), "two-commands-a-and-b");
    assert_eq!(slug("The `--json` document"), "the---json-document");
    assert_eq!(slug("_emphasis_ and snake_case"), "emphasis-and-snake_case");
    assert_eq!(slug("[A link](x.md) and <b>bold</b>"), "a-link-and-bold");
    assert_eq!(slug("Größe, 10 µs"), "größe-10-µs");
}

#[test]
fn paths_resolve_as_python_s_normpath() {
    assert_eq!(normpath("docs/../README.md"), "README.md");
    assert_eq!(normpath("docs/./x/../y.md"), "docs/y.md");
    assert_eq!(normpath("docs/../../x.md"), "../x.md");
    assert_eq!(normpath("docs/.."), ".");
    assert_eq!(normpath("a//b/"), "a/b");
}
