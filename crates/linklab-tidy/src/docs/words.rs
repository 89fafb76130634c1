//! Rule 2: no text names what a reader with only the clone cannot follow (the notes folder
//! beside the repository, the build machine, an issue tracker not in the repository, the
//! project's work history), and the front pages carry no dates and no run numbers.
//!
//! This file and the unit tests spell the words they catch, so they are not checked.

use std::path::Path;
use std::sync::LazyLock;

use fancy_regex::Regex;

use super::markdown;

/// Files whose words are not checked: the rules themselves, and data that is not text (the
/// fuzz corpus is random bytes and captures; lock files list other projects' packages).
const SKIPPED: &[&str] = &[
    r"^crates/linklab-tidy/src/docs/(words|tests)\.rs$",
    r"^fuzz/corpus/",
    r"(^|/)Cargo\.lock$",
    r"(^|/)package-lock\.json$",
    r"\.(elf|pcap|png|svg|bin)$",
];

/// The pages a newcomer reads first: no dates, no run numbers.
const FRONT_PAGES: &[&str] = &["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"];

const MONTHS: &str =
    "January|February|March|April|May|June|July|August|September|October|November|December";

/// (pattern, what it names); each applies to every line of every checked file.
const RULES: &[(&str, &str)] = &[
    (r"\.\./shared", "the notes folder beside the repository"),
    (r"/work/", "a path of the build machine"),
    (
        r"(?i)\bissues?\s+\d+",
        "an issue number of a tracker not in the repository",
    ),
    (
        r"(?i)\b(the|this|that|its)\s+issue's\b|\bthis\s+issue\b",
        "an issue of a tracker not in the repository",
    ),
    (
        r"(?i)\b(this|that|previous|last|next|earlier|later|first)\s+rounds?('s)?\s+(figures?|image|fixes|change|cuts|runs?|record|work)\b",
        "a work round of the project's history",
    ),
    (
        r"(?i)\b(this|that|the previous|the last|the next|a later|an earlier|each|the earlier|other)\s+rounds?('s?)?(?=[\s.,;:)]|$)(?!\s+(of|trip|runs|by|ticks|after round))",
        "a work round of the project's history",
    ),
    (
        r"(?i)\bround\s+\d+\b(?!\s*(ms|s|%|/))",
        "a work round of the project's history",
    ),
    (
        r"(?i)\b(measurement|issue)\s+rounds?\b",
        "a work round of the project's history",
    ),
    (
        r"(?i)\bstops?\s+\d+('s)?\b(?!\s*(s|ms|seconds?)\b)",
        "a stop of the project's history",
    ),
    (
        r"(?i)\bother\s+helpers\b|\bhelpers'|\bthis\s+helper's\b",
        "the build machine's other users",
    ),
];

/// `issue #N` / `PR #N` / `PRs #N`: allowed after another project's name.
const TRACKER_REF: &str = r"(?i)(\S+)\s+(issues?|prs?|pull\s+requests?)\s+#\d+";

/// Words before `issue #N` that name no project.
const NOT_A_PROJECT: &[&str] = &[
    "the", "this", "that", "our", "its", "an", "a", "of", "in", "see", "from", "and", "or", "by",
    "to", "linklab", "(", "—",
];

/// (pattern, what it names) on a front page, outside code.
fn front_rules() -> [(String, &'static str); 2] {
    [
        (
            format!(r"\b\d{{1,2}}\s+({MONTHS})\b|\b({MONTHS})\s+\d{{1,2}}\b"),
            "a date",
        ),
        (
            r"(?i)\bruns?\s+\d+\b(?!\s*(s|ms|times|seconds|minutes|%))".to_string(),
            "a run number",
        ),
    ]
}

/// `/tmp/` not glued to a word, a dot or a `$` before it.
const TMP_IN_PROSE: &str = r"(^|[^\w.$])/tmp/";

/// The compiled rules.
struct Compiled {
    skipped: Vec<Regex>,
    rules: Vec<(Regex, &'static str)>,
    tracker: regex::Regex,
    front: Vec<(Regex, &'static str)>,
    tmp: Regex,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let re = |p: &str| Regex::new(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    Compiled {
        skipped: SKIPPED.iter().map(|p| re(p)).collect(),
        rules: RULES.iter().map(|(p, w)| (re(p), *w)).collect(),
        tracker: regex::Regex::new(TRACKER_REF).unwrap(),
        front: front_rules().iter().map(|(p, w)| (re(p), *w)).collect(),
        tmp: re(TMP_IN_PROSE),
    }
});

/// True when the words of `rel` are checked.
pub fn checked(rel: &str) -> bool {
    !COMPILED
        .skipped
        .iter()
        .any(|r| r.is_match(rel).unwrap_or(false))
}

/// The first match of `rule` in `text`.
fn first<'t>(rule: &Regex, text: &'t str) -> Option<&'t str> {
    rule.find(text).ok().flatten().map(|m| m.as_str())
}

/// The forbidden words of one text file.
pub fn problems(root: &Path, rel: &str) -> Vec<String> {
    let c = &*COMPILED;
    let path = root.join(rel);
    let md = rel.ends_with(".md");
    let lines = if md {
        markdown::lines(&path)
    } else {
        let text = markdown::read(&path);
        markdown::split(&text)
            .into_iter()
            .enumerate()
            .map(|(i, l)| markdown::Line {
                number: i + 1,
                blanked: l.to_string(),
                raw: l.to_string(),
                in_code: false,
            })
            .collect()
    };
    let mut out = Vec::new();
    for line in lines {
        let n = line.number;
        for (rule, what) in &c.rules {
            if let Some(m) = first(rule, &line.raw) {
                out.push(format!("{rel}:{n}: {what}: \"{}\"", m.trim()));
            }
        }
        for m in c.tracker.captures_iter(&line.raw) {
            let word = m[1].to_lowercase();
            if NOT_A_PROJECT.contains(&word.trim_matches(|ch| ch == '(' || ch == ',')) {
                out.push(format!(
                    "{rel}:{n}: an issue number of a tracker not in the repository: \"{}\" \
                     (another project's: name it)",
                    &m[0]
                ));
            }
        }
        if md && !line.in_code && first(&c.tmp, &line.blanked).is_some() {
            out.push(format!(
                "{rel}:{n}: a /tmp path in prose (a command a reader runs goes in a code span \
                 or block)"
            ));
        }
        if FRONT_PAGES.contains(&rel) && !line.in_code {
            for (rule, what) in &c.front {
                if let Some(m) = first(rule, &line.blanked) {
                    out.push(format!("{rel}:{n}: {what} on a front page: \"{m}\""));
                }
            }
        }
    }
    out
}
