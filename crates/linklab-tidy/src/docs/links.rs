//! Rule 1: every relative link of a Markdown file resolves, anchors included.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::markdown;

/// What a link may lead to: the files a clone holds and their folders.
pub struct Tree<'a> {
    /// The repository's root.
    pub root: &'a Path,
    /// Its files (relative, `/`-separated).
    pub known: &'a BTreeSet<String>,
    /// Every folder holding one of them.
    pub dirs: &'a BTreeSet<String>,
}

/// The relative links of the Markdown file `rel` that lead nowhere.
pub fn problems(
    tree: &Tree,
    rel: &str,
    cache: &mut HashMap<PathBuf, BTreeSet<String>>,
) -> Vec<String> {
    static SCHEME: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)^[a-z][a-z0-9+.-]*:").unwrap());
    static LINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^L\d+(-L\d+)?$").unwrap());
    let mut out = Vec::new();
    let here = rel.rsplit_once('/').map_or("", |(d, _)| d);
    for line in markdown::lines(&tree.root.join(rel)) {
        if line.in_code {
            continue;
        }
        for target in markdown::link_targets(&line.blanked) {
            if SCHEME.is_match(&target) || target.starts_with("//") {
                continue; // https:, mailto:, ...
            }
            let (path, frag) = target.split_once('#').unwrap_or((&target, ""));
            let path = unquote(path);
            let full = if let Some(abs) = path.strip_prefix('/') {
                normpath(abs.trim_start_matches('/'))
            } else if !path.is_empty() {
                normpath(&format!("{here}/{path}"))
            } else {
                rel.to_string()
            };
            let at = format!("{rel}:{}: link {target}", line.number);
            if full == ".." || full.starts_with("../") {
                out.push(format!("{at}: points outside the repository"));
                continue;
            }
            let is_dir = full == "." || tree.dirs.contains(full.trim_end_matches('/'));
            if !tree.known.contains(&full) && !is_dir {
                let what = if tree.root.join(&full).exists() {
                    "not in the repository (ignored or untracked)"
                } else {
                    "no such file"
                };
                out.push(format!("{at}: {what}"));
                continue;
            }
            if frag.is_empty() || is_dir {
                continue;
            }
            if full.ends_with(".md") {
                let anchors = markdown::anchors(&tree.root.join(&full), cache);
                if !anchors.contains(&unquote(frag)) {
                    out.push(format!("{at}: no heading or <a id> #{frag} in {full}"));
                }
            } else if !LINE.is_match(frag) {
                out.push(format!(
                    "{at}: an anchor into a file that is not Markdown must be a line (#L12)"
                ));
            }
        }
    }
    out
}

/// A relative path with `.` and `..` resolved as far as they go (Python's
/// `os.path.normpath`): `a/./b/../c` is `a/c`, `../x` stays, and nothing is `.`.
pub fn normpath(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// `%XX` escapes decoded (a link's path and anchor).
fn unquote(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
