//! linklab run by itself: `track` takes `probe`'s and `bench`'s figures from their `--json`
//! documents (a child process of this very binary), never from a second copy of their code.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;

/// A temporary file of this process for `tag` (`linklab-track-PID-TAG`), removed on drop.
pub struct TempFile(pub PathBuf);

impl TempFile {
    /// The file's path (not created here).
    pub fn new(tag: &str) -> TempFile {
        let safe = tag.replace(|c: char| !c.is_ascii_alphanumeric() && c != '.', "_");
        let name = format!("linklab-track-{}-{safe}", std::process::id());
        TempFile(std::env::temp_dir().join(name))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `linklab ARGS --json TMP` and returns the document it wrote, when its exit code is
/// one of `ok`. Otherwise the error is `what` and the child's last line on stderr.
pub fn json_of(args: Vec<OsString>, tag: &str, ok: &[i32], what: &str) -> anyhow::Result<Vec<u8>> {
    let exe = std::env::current_exe().context("cannot find linklab's own binary")?;
    let json = TempFile::new(&format!("{tag}.json"));
    let out = std::process::Command::new(exe)
        .args(args)
        .arg("--json")
        .arg(&json.0)
        .output()
        .with_context(|| format!("cannot run {what}"))?;
    if !out.status.code().is_some_and(|c| ok.contains(&c)) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        anyhow::bail!("{what}: {}", last.unwrap_or("failed without a word").trim());
    }
    std::fs::read(&json.0).with_context(|| format!("{what} wrote no JSON"))
}
