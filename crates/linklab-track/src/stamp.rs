//! A run's stamp: what was measured, when, by which versions, on how loaded a host — so a
//! figure that moved can be told from a tool that changed.

use std::path::Path;
use std::process::Command;

/// Label, time, versions and host load of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Stamp {
    /// The run's name: `--label`, else the tree's commit (`-dirty` with changes).
    pub label: String,
    /// The full commit hash of the tree the suite is in (empty outside git).
    pub commit: String,
    /// When the run started, Unix seconds.
    pub started_unix: f64,
    /// When it ended, Unix seconds.
    pub finished_unix: f64,
    /// linklab's version.
    pub linklab_version: String,
    /// `qemu-system-arm --version`'s first line.
    pub qemu_version: String,
    /// The stock tools' versions (iperf3, iperf 2), one per line.
    pub tools: String,
    /// The 1-minute load average when the run started.
    pub host_load_start: f64,
    /// The 1-minute load average when it ended.
    pub host_load_end: f64,
    /// The suite file.
    pub suite: String,
    /// Samples per figure asked for (`--repeat`).
    pub repeat: u32,
}

impl Stamp {
    /// The stamp at the start of a run of `suite` with `repeat` samples per figure.
    pub fn start(suite: &Path, label: Option<&str>, repeat: u32) -> Stamp {
        let dir = suite.parent().unwrap_or(Path::new("."));
        let commit = git(dir, &["rev-parse", "HEAD"]).unwrap_or_default();
        let label = match label {
            Some(l) => l.to_string(),
            None => default_label(dir),
        };
        Stamp {
            label,
            commit,
            started_unix: now(),
            finished_unix: 0.0,
            linklab_version: env!("CARGO_PKG_VERSION").into(),
            qemu_version: first_line(&["qemu-system-arm", "--version"]),
            tools: [
                first_line(&["iperf3", "--version"]),
                first_line(&["iperf", "-v"]),
            ]
            .join("\n"),
            host_load_start: load(),
            host_load_end: 0.0,
            suite: suite.display().to_string(),
            repeat,
        }
    }

    /// Notes the end of the run.
    pub fn finish(&mut self) {
        self.finished_unix = now();
        self.host_load_end = load();
    }
}

/// The tree's commit, `git describe`-style (a tag when there is one, else the short hash),
/// with `-dirty` when tracked files have changes; `unlabelled` outside git.
pub fn default_label(dir: &Path) -> String {
    git(dir, &["describe", "--always", "--dirty", "--abbrev=7"])
        .unwrap_or_else(|| "unlabelled".into())
}

/// Seconds since the Unix epoch.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The 1-minute load average (0 where /proc has none).
fn load() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// `git -C dir ARGS`'s output, trimmed, if it succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The first line a tool prints about its version (stdout or stderr: iperf 2 writes it to
/// stderr), or `TOOL: not found`.
fn first_line(argv: &[&str]) -> String {
    match Command::new(argv[0]).args(&argv[1..]).output() {
        Ok(out) => {
            let text = [out.stdout, out.stderr].concat();
            String::from_utf8_lossy(&text)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string()
        }
        Err(_) => format!("{}: not found", argv[0]),
    }
}
