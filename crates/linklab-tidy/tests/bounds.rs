//! The house's bounds stay true, as `tests/layers/` keeps the layer picture: no Rust file of
//! the repository (every workspace: the crates, firmware/, examples/, fuzz/) is over
//! [`MAX_FILE_LINES`] lines, and no function is over [`MAX_FN_LINES`] (the project's style:
//! one concept per file and per function).
//!
//! Functions are found by a small lexer, not by text patterns: it skips comments, strings
//! (raw and byte strings too) and character literals, so a brace or an `fn` in them counts
//! for nothing; a function is the `fn` keyword followed by a name, its length the lines from
//! that keyword to the brace that closes its body (doc comments and attributes not counted;
//! a declaration without a body, `fn f();`, has none). The unit tests below hold the scan to
//! samples, so it can fail.
//!
//! `cargo test -p linklab --test bounds -- --nocapture` prints the longest functions.

use std::path::{Path, PathBuf};

/// The most lines a source or test file may have.
const MAX_FILE_LINES: usize = 600;

/// The most lines a function may have (from its `fn` to its closing brace).
const MAX_FN_LINES: usize = 120;

/// Over the bounds for now, by name, each with why: the lead removes an entry once the work
/// that ends it is merged. Only what another branch is splitting at the time may stand here.
const ALLOWED: &[(&str, Option<&str>)] = &[];

/// One function the scan found.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Function {
    name: String,
    /// 1-based line of its `fn` keyword.
    line: usize,
    /// Lines from the `fn` keyword's to the closing brace's, both counted.
    lines: usize,
}

/// What the lexer sees at each byte: code, or something to skip.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Code,
    Skipped,
}

/// Classifies each byte of Rust `src`: comments (line, block, nested), string, raw string,
/// byte string and character literals are [`Class::Skipped`], the rest code. A lifetime
/// (`'a`) is code.
fn classify(src: &[u8]) -> Vec<Class> {
    let mut class = vec![Class::Code; src.len()];
    let mut i = 0;
    let skip = |class: &mut Vec<Class>, from: usize, to: usize| {
        for c in &mut class[from..to.min(src.len())] {
            *c = Class::Skipped;
        }
    };
    while i < src.len() {
        let rest = &src[i..];
        let prev_ident = i > 0 && is_ident(src[i - 1]);
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(src.len(), |p| i + p);
            skip(&mut class, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < src.len() && depth > 0 {
                if src[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if src[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            skip(&mut class, i, j);
            i = j;
        } else if let Some(end) = (!prev_ident).then(|| raw_string_end(src, i)).flatten() {
            skip(&mut class, i, end);
            i = end;
        } else if rest[0] == b'"' || (!prev_ident && rest.starts_with(b"b\"")) {
            let mut j = i + if rest[0] == b'"' { 1 } else { 2 };
            while j < src.len() && src[j] != b'"' {
                j += if src[j] == b'\\' { 2 } else { 1 };
            }
            skip(&mut class, i, j + 1);
            i = j + 1;
        } else if rest[0] == b'\'' {
            let end = char_literal_end(src, i);
            if let Some(end) = end {
                skip(&mut class, i, end);
                i = end;
            } else {
                i += 1; // a lifetime or label
            }
        } else {
            i += 1;
        }
    }
    class
}

/// True for a byte that may be part of an identifier.
fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Where the raw string (`r"…"`, `r#"…"#`, `br##"…"##`) starting at `i` ends, if one does.
fn raw_string_end(src: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if src.get(j) == Some(&b'b') {
        j += 1;
    }
    if src.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = src[j..].iter().take_while(|&&b| b == b'#').count();
    j += hashes;
    if src.get(j) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let body = j + 1;
    let at = src[body..].windows(close.len()).position(|w| w == close)?;
    Some(body + at + close.len())
}

/// Where the character literal starting at `i` (`'x'`, `'\n'`, `'\u{1F600}'`, `b'x'` from
/// its quote) ends, or None for a lifetime or label (`'a`, `'outer:`).
fn char_literal_end(src: &[u8], i: usize) -> Option<usize> {
    let rest = &src[i + 1..];
    if rest.first() == Some(&b'\\') {
        let close = rest.iter().skip(2).position(|&b| b == b'\'')?;
        return Some(i + 1 + 2 + close + 1);
    }
    // One character (UTF-8: up to four bytes), then the closing quote.
    let len = match rest.first()? {
        b if *b < 0x80 => 1,
        b if *b >= 0xF0 => 4,
        b if *b >= 0xE0 => 3,
        _ => 2,
    };
    (rest.get(len) == Some(&b'\'')).then_some(i + 1 + len + 1)
}

/// Every function of Rust `src` with its length (see the module's doc).
fn functions(src: &str) -> Vec<Function> {
    let bytes = src.as_bytes();
    let class = classify(bytes);
    let code = |i: usize| class[i] == Class::Code;
    let line_of = |i: usize| bytes[..i].iter().filter(|&&b| b == b'\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    while i + 2 < bytes.len() {
        let keyword = code(i)
            && bytes[i..].starts_with(b"fn")
            && (i == 0 || !is_ident(bytes[i - 1]))
            && bytes[i + 2].is_ascii_whitespace();
        if !keyword {
            i += 1;
            continue;
        }
        let name_at = i
            + 2
            + bytes[i + 2..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
        let name_len = bytes[name_at..]
            .iter()
            .take_while(|&&b| is_ident(b))
            .count();
        if name_len == 0 {
            i += 2;
            continue;
        }
        let name = src[name_at..name_at + name_len].to_string();
        if let Some(end) = body_end(bytes, &class, name_at + name_len) {
            found.push(Function {
                name,
                line: line_of(i),
                lines: line_of(end) - line_of(i) + 1,
            });
        }
        // Nested functions are found (and measured) too.
        i = name_at + name_len;
    }
    found
}

/// The closing brace of the body of the function whose signature goes on from `from`, or
/// None when a `;` ends it first (a declaration). The body's `{` is the first brace outside
/// the signature's parentheses, brackets and angle brackets (a const generic `{ N }` is in
/// those).
fn body_end(bytes: &[u8], class: &[Class], from: usize) -> Option<usize> {
    let (mut nest, mut j) = (0i32, from);
    let open = loop {
        if j >= bytes.len() {
            return None;
        }
        if class[j] == Class::Code {
            match bytes[j] {
                b'(' | b'[' | b'<' => nest += 1,
                b')' | b']' => nest -= 1,
                // `->` and `=>` are no closing angle bracket.
                b'>' if j > 0 && !matches!(bytes[j - 1], b'-' | b'=') => nest -= 1,
                b';' if nest == 0 => return None,
                b'{' if nest == 0 => break j,
                _ => {}
            }
        }
        j += 1;
    };
    let mut depth = 0;
    for (k, &b) in bytes.iter().enumerate().skip(open) {
        if class[k] != Class::Code {
            continue;
        }
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Every `.rs` file below `dir`, but build output (`target`) and hidden folders.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// True when `file` (relative to the root) and function `name` (None: the file's length)
/// stand in [`ALLOWED`].
fn allowed(file: &str, name: Option<&str>) -> bool {
    ALLOWED.iter().any(|&(f, n)| f == file && n == name)
}

/// What breaks the bounds in the Rust file `rel` with text `src`: one line each.
fn breaches(rel: &str, src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines = src.lines().count();
    if lines > MAX_FILE_LINES && !allowed(rel, None) {
        out.push(format!("{rel}: {lines} lines (at most {MAX_FILE_LINES})"));
    }
    for f in functions(src) {
        if f.lines > MAX_FN_LINES && !allowed(rel, Some(&f.name)) {
            out.push(format!(
                "{rel}:{}: fn {} is {} lines (at most {MAX_FN_LINES})",
                f.line, f.name, f.lines
            ));
        }
    }
    out
}

#[test]
fn no_file_and_no_function_is_over_its_bound() {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    // Every workspace is scanned: a wrong root would pass with nothing to scan.
    for must in [
        "crates/linklab/src/main.rs",
        "firmware/common/src/lib.rs",
        "fuzz/Cargo.toml",
        "examples/boards",
    ] {
        assert!(
            root.join(must).exists(),
            "{must} missing under {}",
            root.display()
        );
    }
    assert!(files.len() > 300, "only {} Rust files found", files.len());
    let mut all = Vec::new();
    let mut longest = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let src = std::fs::read_to_string(path).unwrap();
        all.extend(breaches(&rel, &src));
        longest.extend(
            functions(&src)
                .into_iter()
                .map(|f| (f.lines, rel.clone(), f)),
        );
    }
    longest.sort_by_key(|l| std::cmp::Reverse(l.0));
    println!("the longest functions of {} files:", files.len());
    for (lines, rel, f) in longest.iter().take(15) {
        println!("{lines:5}  {rel}:{} fn {}", f.line, f.name);
    }
    // An allowance that no longer allows anything goes.
    for (file, name) in ALLOWED {
        let src = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        let over = match name {
            None => src.lines().count() > MAX_FILE_LINES,
            Some(n) => functions(&src)
                .iter()
                .any(|f| f.name == *n && f.lines > MAX_FN_LINES),
        };
        if !over {
            all.push(format!(
                "{file} {name:?}: allowed, but within the bounds: remove it from ALLOWED"
            ));
        }
    }
    assert!(all.is_empty(), "over the bounds:\n{}", all.join("\n"));
}

/// A function `name` whose body has `body` lines (so `body + 2` in all), indented by `indent`.
fn sample_fn(name: &str, body: usize, indent: &str) -> String {
    let mut s = format!("{indent}pub fn {name}(x: &[u8; 4]) -> Option<Vec<u8>> {{\n");
    for i in 0..body {
        s.push_str(&format!("{indent}    let _v{i} = x.len();\n"));
    }
    s.push_str(&format!("{indent}}}\n"));
    s
}

#[test]
fn a_function_is_measured_from_its_fn_to_its_closing_brace() {
    let src = format!(
        "/// doc\n#[inline]\n{}\nimpl X {{\n{}}}\n",
        sample_fn("short", 3, ""),
        sample_fn("method", 119, "    ")
    );
    let found = functions(&src);
    let summary: Vec<_> = found
        .iter()
        .map(|f| (f.name.as_str(), f.line, f.lines))
        .collect();
    assert_eq!(summary, [("short", 3, 5), ("method", 10, 121)]);
    let breaches = breaches("sample.rs", &src);
    assert_eq!(
        breaches,
        ["sample.rs:10: fn method is 121 lines (at most 120)"]
    );
    assert!(fits_the_bounds(&sample_fn("fits", 118, "")));
}

/// True when a sample breaks no bound.
fn fits_the_bounds(src: &str) -> bool {
    breaches("sample.rs", src).is_empty()
}

#[test]
fn a_file_over_its_bound_is_named() {
    let src = "// line\n".repeat(MAX_FILE_LINES + 1);
    assert_eq!(
        breaches("big.rs", &src),
        ["big.rs: 601 lines (at most 600)"]
    );
    assert!(fits_the_bounds(&"// line\n".repeat(MAX_FILE_LINES)));
}

#[test]
fn braces_and_fn_in_comments_strings_and_chars_count_for_nothing() {
    let src = concat!(
        "fn outer<'a>(s: &'a str) -> [u8; 2] {\n",
        "    // fn not_one() {\n",
        "    /* a } brace /* nested } */ } */\n",
        "    let a = \"} fn nor_this() {\";\n",
        "    let b = r#\"}\" fn raw() {\"#;\n",
        "    let c = ['}', '\\'', '{', b'}' as char];\n",
        "    let f: fn(u8) -> u8 = |x| x;\n",
        "    'label: loop { break 'label; }\n",
        "    fn inner() -> Inline<{ N }> { todo!() }\n",
        "    [0; 2]\n",
        "}\n",
        "trait T { fn declared(&self) -> [u8; 3]; }\n",
        "fn after() {}\n",
    );
    let found = functions(src);
    let summary: Vec<_> = found
        .iter()
        .map(|f| (f.name.as_str(), f.line, f.lines))
        .collect();
    assert_eq!(
        summary,
        [("outer", 1, 11), ("inner", 9, 1), ("after", 13, 1)]
    );
}

#[test]
fn the_allowance_names_only_the_latency_helper_s_files() {
    // Only the latency helper's files may stand in the allowance, each by name.
    assert!(ALLOWED.iter().all(|(f, n)| n.is_some()
        && (f.starts_with("crates/linklab/src/probe")
            || f.starts_with("crates/linklab/src/report/probe_")
            || f.starts_with("crates/linklab/tests/probe"))));
}
