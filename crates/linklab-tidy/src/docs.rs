//! The repository's text reads on its own, from a clone with nothing beside it.
//!
//! Two checks, over what a clone holds (`git ls-files`, plus new files not yet ignored):
//!
//! 1. **Links** ([`links`]). Every relative link and image of every Markdown file resolves:
//!    `[text](path)`, `[text](path#anchor)`, `[label]: path` definitions and
//!    `<a href>`/`<img src>` tags, outside code blocks and code spans. The path must be a file
//!    or folder of the repository (not an ignored build output, not outside the repository; a
//!    leading `/` is the repository's root, as on GitHub). An anchor into a Markdown file must
//!    be one of its headings, by GitHub's rule (lowercased; every character that is not a
//!    letter, a digit, `_`, `-` or a space dropped; spaces to `-`; the second heading of the
//!    same text gets `-1`, the third `-2`), or an `<a id>`/`<a name>` of it; an anchor into any
//!    other file must be a line (`#L12`, `#L12-L20`).
//! 2. **Words** ([`words`]). No tracked text file (sources, scripts, manifests and docs; not
//!    the fuzz corpus, lock files or binary files) names the notes folder beside the
//!    repository, a path of the build machine, an issue of a tracker that is not in the
//!    repository, or the project's work history; the front pages (README.md, ARCHITECTURE.md,
//!    CONTRIBUTING.md) carry no dates and no run numbers. `/tmp/...` may appear in a command a
//!    reader runs (a code block or span of a Markdown page) and in code, not in Markdown prose.
//!
//! `tests/docs.rs` runs both on the repository; the unit tests plant each fault in a scratch
//! repository and fail unless it is caught and the good lines pass.

mod links;
mod markdown;
#[cfg(test)]
mod tests;
mod words;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

/// Every problem of the tree at `root` (a git work tree), one line each (`FILE:LINE: what`),
/// and how many files were read.
pub fn check(root: &Path) -> (Vec<String>, usize) {
    let all = git_files(root);
    let known: BTreeSet<String> = all.iter().cloned().collect();
    let dirs = folders(&known);
    let files: Vec<&String> = all.iter().filter(|f| !root.join(f).is_symlink()).collect();
    let mut cache = HashMap::new();
    let mut problems = Vec::new();
    for rel in &files {
        let full = root.join(rel);
        if !full.is_file() {
            continue; // deleted in the work tree, not yet in the index
        }
        if rel.ends_with(".md") {
            let tree = links::Tree {
                root,
                known: &known,
                dirs: &dirs,
            };
            problems.extend(links::problems(&tree, rel, &mut cache));
        }
        if words::checked(rel) && is_text(&full) {
            problems.extend(words::problems(root, rel));
        }
    }
    (problems, files.len())
}

/// Tracked files and new files not ignored, as a clone (once committed) holds them.
fn git_files(root: &Path) -> Vec<String> {
    let out = Command::new("git")
        .args(["ls-files", "-co", "--exclude-standard", "-z"])
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("git ls-files in {}: {e}", root.display()));
    assert!(
        out.status.success(),
        "git ls-files in {}: {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let set: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect();
    set.into_iter().collect()
}

/// Every folder that holds a known file, at any depth.
fn folders(known: &BTreeSet<String>) -> BTreeSet<String> {
    let mut dirs = BTreeSet::new();
    for f in known {
        let mut at = f.as_str();
        while let Some((dir, _)) = at.rsplit_once('/') {
            dirs.insert(dir.to_string());
            at = dir;
        }
    }
    dirs
}

/// True for a file whose first 8 KiB hold no NUL byte.
fn is_text(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    match std::fs::File::open(path) {
        Ok(f) => f.take(8192).read_to_end(&mut head).is_ok() && !head.contains(&0),
        Err(_) => false,
    }
}
