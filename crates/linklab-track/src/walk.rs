//! `linklab track walk A..B`: `git bisect` for figures. Each commit from A to B is checked
//! out in a worktree of its own, built by the suite's `build` command (one cargo target
//! folder shared by every worktree, so a commit rebuilds only what changed), its suite run
//! and stored under the commit's short hash; then, per figure, the commits where it stepped
//! beyond its noise (compare's rule, each commit against the one measured before it) are
//! named. A commit that does not build is named `build failed` and the walk goes on.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use crate::compare::{judge, Thresholds, Verdict};
use crate::instruments::Instruments;
use crate::measure::{self, Progress, RunOptions};
use crate::run::Run;
use crate::store::Store;
use crate::suite::Suite;
use crate::tables;

/// How a walk goes.
#[derive(Clone, Debug)]
pub struct WalkOptions {
    /// The commits: `A..B` walks A, then every commit after it up to B (first parents).
    pub range: String,
    /// Samples per counted figure at each commit (at least 1).
    pub repeat: u32,
    /// The cargo target folder every worktree's build shares (`CARGO_TARGET_DIR`); by
    /// default one of the walk's own, removed at its end.
    pub target_dir: Option<PathBuf>,
}

/// What a walk tells as it goes.
#[derive(Debug)]
pub enum WalkEvent<'a> {
    /// An entry of the suite is about to be measured at the commit being walked.
    Measuring(Progress<'a>),
    /// A commit measured (its run stored under its short hash).
    Measured {
        /// The commit's short hash.
        commit: &'a str,
        /// Its run.
        run: &'a Run,
    },
    /// A commit that could not be checked out or built (the walk goes on).
    BuildFailed {
        /// The commit's short hash.
        commit: &'a str,
        /// Why.
        error: &'a anyhow::Error,
    },
}

/// Walks `options.range` in this process's git repository (the current folder's): each
/// commit checked out in a worktree of its own (in a folder of the walk's, made fresh with
/// mode 0700 and removed at the end), built by `suite`'s `build` command, measured by the
/// suite and stored in `store` under its short hash; `events` hears of each. The commits
/// measured, in order, with their runs (for [`steps`]).
pub fn walk(
    suite: &Suite,
    options: &WalkOptions,
    store: &mut dyn Store,
    instruments: &mut dyn Instruments,
    events: &mut dyn FnMut(WalkEvent<'_>),
) -> anyhow::Result<Vec<(String, Run)>> {
    let Some((a, b)) = options.range.split_once("..") else {
        linklab_results::bail_usage!("track walk: the range is A..B (two commits)");
    };
    let repo = git_out(Path::new("."), &["rev-parse", "--show-toplevel"])?;
    let repo = PathBuf::from(repo);
    let first = git_out(
        &repo,
        &["rev-parse", "--verify", &format!("{a}^{{commit}}")],
    )?;
    let rest = git_out(
        &repo,
        &[
            "rev-list",
            "--reverse",
            "--first-parent",
            &format!("{a}..{b}"),
        ],
    )?;
    let commits: Vec<String> = std::iter::once(first)
        .chain(rest.lines().map(String::from))
        .collect();
    let scratch = tempfile::Builder::new()
        .prefix("linklab-track-walk-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .context("cannot make the walk's folder under the temporary folder")?;
    let target = match &options.target_dir {
        Some(d) => std::path::absolute(d)?,
        None => scratch.path().join("target"),
    };
    // Every build and every image found by name uses the shared target folder.
    std::env::set_var("CARGO_TARGET_DIR", &target);
    let mut measured: Vec<(String, Run)> = Vec::new();
    for commit in &commits {
        let short: String = commit.chars().take(7).collect();
        let wt = scratch.path().join(&short);
        let outcome = at_commit(&repo, commit, &wt, suite, options, instruments, events);
        let _ = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["worktree", "remove", "--force"])
            .arg(&wt)
            .output();
        match outcome {
            Ok(run) => {
                store.insert_run(&run)?;
                events(WalkEvent::Measured {
                    commit: &short,
                    run: &run,
                });
                measured.push((short, run));
            }
            Err(error) => events(WalkEvent::BuildFailed {
                commit: &short,
                error: &error,
            }),
        }
    }
    drop(scratch);
    Ok(measured)
}

/// Checks `commit` out into `wt`, builds it and runs the suite there (labelled by the
/// commit's short hash).
fn at_commit(
    repo: &Path,
    commit: &str,
    wt: &Path,
    suite: &Suite,
    options: &WalkOptions,
    instruments: &mut dyn Instruments,
    events: &mut dyn FnMut(WalkEvent<'_>),
) -> anyhow::Result<Run> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["worktree", "add", "--detach", "--quiet"])
        .arg(wt)
        .arg(commit)
        .output()
        .context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "git worktree add: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    if let Some(build) = &suite.build {
        let out = Command::new("sh")
            .args(["-c", build])
            .current_dir(wt)
            .output()
            .context("cannot run sh")?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let line = err
                .lines()
                .rev()
                .find(|l| l.starts_with("error"))
                .or(err.lines().last())
                .unwrap_or("");
            bail!("{build}: {}", line.trim());
        }
    }
    std::env::set_var("LINKLAB_FIRMWARE_DIR", wt.join("firmware"));
    let run_options = RunOptions {
        label: Some(commit.chars().take(7).collect()),
        repeat: options.repeat,
    };
    let mut run = measure::measure(suite, &run_options, instruments, &mut |p| {
        events(WalkEvent::Measuring(p))
    });
    run.stamp.commit = commit.into();
    Ok(run)
}

/// `entry figure value, ...` of a run (each figure's median), for the walk's progress lines.
pub fn summary(run: &Run) -> String {
    let mut parts = Vec::new();
    for e in &run.entries {
        match &e.failed {
            Some(_) => parts.push(format!("{}: failed", e.name)),
            None => {
                for f in &e.figures {
                    parts.push(format!("{} {} {}", e.name, f.name, tables::num(f.median())));
                }
            }
        }
    }
    parts.join(", ")
}

/// Per figure, each commit where it stepped against the commit measured before it.
pub fn steps(measured: &[(String, Run)], t: Thresholds) -> String {
    let mut out = String::from("steps:\n");
    let mut any = false;
    for pair in measured.windows(2) {
        let ((_, before), (commit, after)) = (&pair[0], &pair[1]);
        for e in &after.entries {
            for f in &e.figures {
                let Some(old) = before.entry(&e.name).and_then(|b| b.figure(&f.name)) else {
                    continue;
                };
                let v = judge(old, f, t);
                if matches!(v, Verdict::Worse | Verdict::Better) {
                    any = true;
                    out.push_str(&format!(
                        "  {} {}: stepped at {commit} ({} -> {} {}, {})\n",
                        e.name,
                        f.name,
                        tables::figure_text(Some(old)),
                        tables::figure_text(Some(f)),
                        f.unit,
                        v.word()
                    ));
                }
            }
        }
    }
    if !any {
        out.push_str("  none: every figure stayed within its noise\n");
    }
    out
}

/// `git -C dir ARGS`'s output, trimmed; an error with its stderr.
fn git_out(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
