//! `linklab track walk A..B`: `git bisect` for figures. Each commit from A to B is checked
//! out in a worktree of its own, built by the suite's `build` command (one cargo target
//! folder shared by every worktree, so a commit rebuilds only what changed), its suite run
//! and stored under the commit's short hash; then, per figure, the commits where it stepped
//! beyond its noise (compare's rule, each commit against the one measured before it) are
//! named. A commit that does not build is named `build failed` and the walk goes on.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use super::compare::{judge, Thresholds, Verdict};
use super::figure::Run;
use super::{measure, store, suite, tables};

/// Options of `linklab track walk`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The commits: A..B walks A, then every commit after it up to B (first parents).
    #[arg(value_name = "A..B")]
    range: String,
    /// The suite run at each commit (its `build` builds the commit's tree).
    #[arg(long, value_name = "SUITE")]
    suite: PathBuf,
    /// Samples per counted figure at each commit.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = linklab_results::values::ranged(1u32, 50))]
    repeat: u32,
    /// The cargo target folder every worktree's build shares (CARGO_TARGET_DIR).
    #[arg(long, value_name = "DIR")]
    target_dir: Option<PathBuf>,
    /// Percent of the earlier median a count figure must move by to be a step.
    #[arg(long, value_name = "PCT", default_value_t = super::DEFAULT_COUNT_PCT,
          value_parser = linklab_results::values::ranged(0.0, 1000.0))]
    count_threshold: f64,
    #[command(flatten)]
    db: store::DbArg,
}

/// Runs `linklab track walk`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let suite = suite::load(&args.suite)?;
    let Some((a, b)) = args.range.split_once("..") else {
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
    let target = match &args.target_dir {
        Some(d) => std::path::absolute(d)?,
        None => std::env::temp_dir().join("linklab-track-walk-target"),
    };
    // Every build and every image found by name uses the shared target folder.
    std::env::set_var("CARGO_TARGET_DIR", &target);
    let mut store = store::open(&args.db.db)?;
    let scratch = std::env::temp_dir().join(format!("linklab-track-walk-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let mut measured: Vec<(String, Run)> = Vec::new();
    for commit in &commits {
        let short: String = commit.chars().take(7).collect();
        let wt = scratch.join(&short);
        let outcome = at_commit(&repo, commit, &wt, &suite, &args, &short);
        let _ = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["worktree", "remove", "--force"])
            .arg(&wt)
            .output();
        match outcome {
            Ok(run) => {
                store.insert_run(&run)?;
                println!("{short}: measured ({})", summary(&run));
                measured.push((short, run));
            }
            Err(e) => println!("{short}: build failed: {e:#}"),
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let t = Thresholds {
        count_pct: args.count_threshold,
        rate_pct: 10.0,
    };
    print!("{}", steps(&measured, t));
    Ok(())
}

/// Checks `commit` out into `wt`, builds it and runs the suite there.
fn at_commit(
    repo: &Path,
    commit: &str,
    wt: &Path,
    suite: &suite::Suite,
    args: &Args,
    short: &str,
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
    let run = measure::measure(suite, Some(short), args.repeat);
    if let Some(e) = run.entries.iter().find(|e| e.failed.is_some()) {
        eprintln!(
            "{short}: {} failed: {}",
            e.name,
            e.failed.as_deref().unwrap_or("")
        );
    }
    let mut run = run;
    run.stamp.commit = commit.into();
    Ok(run)
}

/// `entry figure=value ...` of a run, for the walk's progress lines.
fn summary(run: &Run) -> String {
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
