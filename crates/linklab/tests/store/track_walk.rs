//! `linklab track walk` over a short range of this repository's own history: the compact
//! image's flash fell from 36 464 to 35 868 B at 70bbdba (socket slots written with
//! `SocketStorage::default()`, `--icf=all`). The walk builds each commit in a worktree of
//! its own with one shared cargo target folder, measures the image's sizes (no boot), and
//! must name 70bbdba; a commit whose build fails is named `build failed` and the walk goes
//! on. Needs the repository's history (a full clone) and the thumbv7m target.

use std::path::Path;
use std::process::Command;

use linklab_testkit::linklab_bin;
use linklab_testkit::track::{labels, stderr, stdout};

/// The commit two before the step (36 464 B), one that changes nothing in the image (its
/// build made to fail below), and the step.
const RANGE: &str = "05d3db6..70bbdba";

const BUILD: &str = "cd firmware && cargo build -q --profile minimal -p fw-mps2-an385 \
    --target thumbv7m-none-eabi --no-default-features --features compact \
    --bin fw-mps2-an385-compact";

#[test]
fn a_walk_names_the_commit_where_flash_stepped() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let known = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["cat-file", "-e", "70bbdba^{commit}"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        known,
        "the repository's history is needed (a full clone, not a shallow one)"
    );
    let dir = linklab_testkit::tempdir("track-walk");
    // The commit in the middle does not build (its build command says so): named, skipped.
    let suite = dir.join("sizes.toml");
    let build = format!("git rev-parse --short=7 HEAD | grep -qv 40d32cd && {BUILD}");
    std::fs::write(
        &suite,
        format!(
            "build = {build:?}\n\n[[image]]\nname = \"compact\"\nboard = \"mps2-an385\"\nimage = \"compact\"\nfigures = [\"flash\", \"static_ram\"]\n"
        ),
    )
    .unwrap();
    let db = dir.join("walk.sqlite");
    // Kept between runs of the test: a later walk rebuilds only what changed.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("track-walk-target");
    let out = Command::new(linklab_bin())
        .current_dir(&repo)
        .args(["track", "walk", RANGE, "--suite"])
        .arg(&suite)
        .arg("--target-dir")
        .arg(&target)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(
        text.contains("05d3db6: measured (compact flash_bytes 36464"),
        "{text}"
    );
    assert!(text.contains("40d32cd: build failed: "), "{text}");
    assert!(
        text.contains("compact flash_bytes: stepped at 70bbdba (36464 -> 35868 B, better)"),
        "{text}"
    );
    let steps = text.split("steps:\n").nth(1).unwrap_or("");
    assert_eq!(
        steps.lines().filter(|l| l.contains("flash_bytes")).count(),
        1,
        "{text}"
    );
    assert_eq!(labels(&db), ["05d3db6", "70bbdba"]);
    // The worktrees are gone.
    let list = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["worktree", "list"])
        .output()
        .unwrap();
    assert!(
        !stdout(&list).contains("linklab-track-walk-"),
        "{}",
        stdout(&list)
    );
}
