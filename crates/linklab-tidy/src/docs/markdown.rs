//! How the docs check reads a Markdown file: its lines outside code, its headings' anchors (by
//! GitHub's rule) and the link targets of a line.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use fancy_regex::Regex as Fancy;
use regex::Regex;

/// One line of a Markdown file.
pub struct Line {
    /// 1-based.
    pub number: usize,
    /// The line with its code spans blanked (each replaced by as many spaces).
    pub blanked: String,
    /// The line as written.
    pub raw: String,
    /// True inside a fenced code block (the fences too).
    pub in_code: bool,
}

/// The lines of a text, split as the docs check counts them.
pub fn split(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// The lines of a Markdown file: code blocks marked, code spans blanked.
pub fn lines(path: &Path) -> Vec<Line> {
    static OPEN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(`{3,}|~{3,})").unwrap());
    static SPAN: LazyLock<Fancy> = LazyLock::new(|| Fancy::new(r"(`+)(.+?)\1").unwrap());
    let text = read(path);
    let mut fence: Option<(char, usize)> = None;
    let mut out = Vec::new();
    for (i, s) in split(&text).into_iter().enumerate() {
        let line = |blanked: String, in_code| Line {
            number: i + 1,
            blanked,
            raw: s.to_string(),
            in_code,
        };
        if let (None, Some(m)) = (fence, OPEN.captures(s)) {
            let marks = &m[1];
            fence = Some((marks.chars().next().unwrap(), marks.chars().count()));
            out.push(line(s.to_string(), true));
            continue;
        }
        if let Some((mark, len)) = fence {
            let close = Regex::new(&format!(
                r"^\s*{}{{{len},}}\s*$",
                regex::escape(&mark.to_string())
            ))
            .unwrap();
            if close.is_match(s) {
                fence = None;
            }
            out.push(line(s.to_string(), true));
            continue;
        }
        let mut blanked = String::new();
        let mut at = 0;
        for span in SPAN.find_iter(s).flatten() {
            blanked.push_str(&s[at..span.start()]);
            blanked.push_str(&" ".repeat(span.as_str().chars().count()));
            at = span.end();
        }
        blanked.push_str(&s[at..]);
        out.push(line(blanked, false));
    }
    out
}

/// A file's text (invalid UTF-8 replaced).
pub fn read(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// GitHub's anchor of a heading's text (github-slugger).
pub fn slug(text: &str) -> String {
    static LINK: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"!?\[([^\]]*)\]\([^)]*\)").unwrap());
    static TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"<[^>]+>").unwrap());
    static KEPT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[\p{L}\p{M}\p{N}\p{Pc}]$").unwrap());
    let text = LINK.replace_all(text, "$1");
    let text = TAG.replace_all(&text, "");
    let text = text.replace(['`', '*'], "");
    let text = drop_emphasis_underscores(&text);
    let mut out = String::new();
    for ch in text.trim().to_lowercase().chars() {
        let mut buf = [0; 4];
        if ch == ' ' {
            out.push('-');
        } else if ch == '-' || KEPT.is_match(ch.encode_utf8(&mut buf)) {
            out.push(ch);
        }
    }
    out
}

/// `_emphasis_` loses its underscores, `snake_case` keeps them: a run of `_` goes unless a
/// word character stands on both sides of it.
fn drop_emphasis_underscores(text: &str) -> String {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '_' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let end = i + chars[i..].iter().take_while(|&&c| c == '_').count();
        let before = i.checked_sub(1).map(|j| chars[j]);
        if word(before) && word(chars.get(end).copied()) {
            out.extend(&chars[i..end]);
        }
        i = end;
    }
    out
}

/// The anchors of a Markdown file: its headings' slugs and its explicit ids.
pub fn anchors<'c>(
    path: &Path,
    cache: &'c mut HashMap<PathBuf, BTreeSet<String>>,
) -> &'c BTreeSet<String> {
    static ID: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"<a\s+(?:id|name)="([^"]+)""#).unwrap());
    static HEADING: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^ {0,3}#{1,6}\s+(.*?)(\s+#+\s*)?$").unwrap());
    cache.entry(path.to_path_buf()).or_insert_with(|| {
        let mut found = BTreeSet::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for line in lines(path).iter().filter(|l| !l.in_code) {
            found.extend(ID.captures_iter(&line.blanked).map(|c| c[1].to_string()));
            let Some(m) = HEADING.captures(&line.raw) else {
                continue;
            };
            let s = slug(&m[1]);
            let k = seen.entry(s.clone()).or_insert(0);
            found.insert(if *k == 0 {
                s.clone()
            } else {
                format!("{s}-{k}")
            });
            *k += 1;
        }
        found
    })
}

/// The link targets of one line (its code spans already blanked).
pub fn link_targets(text: &str) -> Vec<String> {
    static INLINE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)"#)
            .unwrap()
    });
    static DEFINITION: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)").unwrap());
    static TAG: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"<(?:a|img)\s[^>]*?(?:href|src)="([^"]+)""#).unwrap());
    let strip = |s: &str| s.trim_matches(|c| c == '<' || c == '>').to_string();
    let mut out: Vec<String> = INLINE.captures_iter(text).map(|c| strip(&c[1])).collect();
    if let Some(c) = DEFINITION.captures(text) {
        out.push(strip(&c[1]));
    }
    out.extend(TAG.captures_iter(text).map(|c| c[1].to_string()));
    out
}
