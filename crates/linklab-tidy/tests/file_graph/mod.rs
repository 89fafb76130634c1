//! The import graph of a tree of Rust packages, file by file: which file takes which names from
//! which other file, and the circles those arrows make.
//!
//! What it reads, with `syn` (no parser of our own):
//! - **packages**: every `Cargo.toml` with a `[package]` under the root (directories named
//!   `target`, `node_modules` or starting with `.` are skipped);
//! - **targets**: each package's library (`[lib] path` or `src/lib.rs`), its binaries
//!   (`[[bin]] path`, `src/main.rs`, `src/bin/*.rs`, `src/bin/*/main.rs`), its tests, benches and
//!   examples (their `[[…]] path`, `DIR/*.rs`, `DIR/*/main.rs`) and its build script;
//! - **the module tree** of each target, from its root: `mod x;` loads `x.rs` or `x/mod.rs` as
//!   rustc does (a non-`mod.rs` file's children live in the folder named after it; inline
//!   modules add a folder each), `#[path = "…"]` loads the named file (whose own children then
//!   live beside it), an inline `mod x { … }` belongs to its file, and an item-level
//!   `include!("file.rs")` makes that file part of the module that includes it. A `mod`
//!   declaration alone is not an arrow. A file mounted in several places (a `#[path]` helper
//!   shared by tests) is one node with the arrows of every place;
//! - **arrows**: every `use` tree (globs and `pub use` re-exports too) and every path of two
//!   segments or more in the code (a call `crate::report::probe_page(..)`, a type
//!   `super::Config`, a pattern, a trait bound) whose first segment is `crate`, `self`, `super`,
//!   a module declared in the current module, a module the current module imported by `use`, or
//!   a repository library's crate name (`-` read as `_`). The path is walked segment by segment
//!   as far as the segments name modules; the arrow runs to the file of the last module reached
//!   and is tied by the next segment (the item's name), by `*` for a glob, or by the module's
//!   own name when the path ends at a module. An item name stays in the file of the module it
//!   was reached through: `use super::X` runs to the parent's file even where the parent only
//!   re-exports X. Arrows within one file and paths into outside crates are left out;
//!   visibilities (`pub(crate)`, `pub(in super::x)`) are not arrows.
//! - **a module and its children are one unit**: an arrow from a file to the file of one of its
//!   own ancestor modules (a child's `use super::Config`, a test module's `use super::*`) is
//!   left out, as Rust's privacy treats a module's children as part of it. Circles between
//!   sibling files, between modules of different parents and between crates count.
//!
//! Macro bodies are opaque, with one exception: a macro whose arguments read as Rust
//! expressions separated by commas (`format!`, `write!`, `assert!`, `vec![…]`, `anyhow!`) has
//! them read like any code, since a call into another module often sits in a message. Other
//! macro bodies (`macro_rules!` patterns and bodies, `vec![x; n]`, a macro's own syntax) draw no
//! arrow. A glob is one arrow, tied by `*` (`use super::*;` runs to the parent's file), and the
//! modules it brings in are followed (after it, `sibling::f()` runs to the sibling's file).
//! `cfg` is ignored: every module of every configuration is in the graph.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use syn::ext::IdentExt;
use syn::visit::{self, Visit};

mod walk;
use walk::*;

/// The graph of one tree: its files, its arrows and what could not be read.
pub struct Graph {
    /// The packages found (their manifests, relative to the root).
    pub packages: Vec<String>,
    /// The files of every module tree, relative to the root.
    pub files: BTreeSet<String>,
    /// Each arrow `(from, to)` between two files, with the names that tie it.
    pub arrows: BTreeMap<(String, String), BTreeSet<String>>,
    /// Module declarations whose file is missing, and files that do not parse.
    pub problems: Vec<String>,
}

/// One circle: a strongly connected set of files and the arrows among them.
pub struct Circle {
    /// Its files, sorted.
    pub files: Vec<String>,
    /// Its arrows, sorted: from, to, the names.
    pub arrows: Vec<(String, String, Vec<String>)>,
}

impl fmt::Display for Circle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} files: {}", self.files.len(), self.files.join(", "))?;
        for (from, to, names) in &self.arrows {
            writeln!(f, "  {from} -> {to}: {}", names.join(", "))?;
        }
        Ok(())
    }
}

impl Graph {
    /// Reads every package under `root`.
    pub fn of_tree(root: &Path) -> Graph {
        let root = root
            .canonicalize()
            .unwrap_or_else(|e| panic!("{}: {e}", root.display()));
        let mut tree = Tree::default();
        let mut manifests = Vec::new();
        find_manifests(&root, &mut manifests);
        manifests.sort();
        let mut packages = Vec::new();
        for manifest in &manifests {
            let Some(package) = read_package(manifest, &mut tree.problems) else {
                continue;
            };
            packages.push(relative(&root, manifest));
            for (root_file, is_lib) in &package.targets {
                let id = tree.mount_crate(root_file);
                if let (true, Some(name)) = (is_lib, &package.lib_name) {
                    tree.crates.insert(name.clone(), id);
                }
            }
        }
        tree.collect_aliases();
        let arrows = tree.collect_arrows();
        let name = |f: usize| relative(&root, &tree.files[f]);
        let mut graph = Graph {
            packages,
            files: tree.mountings.iter().map(|&(f, _)| name(f)).collect(),
            arrows: BTreeMap::new(),
            problems: tree.problems.clone(),
        };
        for ((from, to), names) in arrows {
            graph
                .arrows
                .entry((name(from), name(to)))
                .or_default()
                .extend(names);
        }
        graph
    }

    /// The circles: every strongly connected set of more than one file.
    pub fn circles(&self) -> Vec<Circle> {
        let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (from, to) in self.arrows.keys() {
            next.entry(from).or_default().push(to);
            next.entry(to).or_default();
        }
        let mut circles: Vec<Circle> = strongly_connected(&next)
            .into_iter()
            .filter(|set| set.len() > 1)
            .map(|set| {
                let arrows = self
                    .arrows
                    .iter()
                    .filter(|((from, to), _)| {
                        set.contains(from.as_str()) && set.contains(to.as_str())
                    })
                    .map(|((from, to), names)| {
                        (from.clone(), to.clone(), names.iter().cloned().collect())
                    })
                    .collect();
                Circle {
                    files: set.into_iter().map(str::to_string).collect(),
                    arrows,
                }
            })
            .collect();
        circles.sort_by(|a, b| a.files.cmp(&b.files));
        circles
    }
}

/// Tarjan's algorithm: the strongly connected sets of a graph, each sorted.
fn strongly_connected<'a>(next: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<BTreeSet<&'a str>> {
    struct State<'a> {
        index: HashMap<&'a str, usize>,
        low: HashMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        sets: Vec<BTreeSet<&'a str>>,
    }
    fn visit<'a>(v: &'a str, next: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in &next[v] {
            if !s.index.contains_key(w) {
                visit(w, next, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut set = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                set.insert(w);
                if w == v {
                    break;
                }
            }
            s.sets.push(set);
        }
    }
    let mut s = State {
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        sets: Vec::new(),
    };
    for &v in next.keys() {
        if !s.index.contains_key(v) {
            visit(v, next, &mut s);
        }
    }
    s.sets
}

fn relative(root: &Path, path: &Path) -> String {
    let path = path.strip_prefix(root).unwrap_or(path);
    path.to_string_lossy().replace('\\', "/")
}

/// Every `Cargo.toml` under `dir`, past build output, dependencies and hidden folders.
fn find_manifests(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            if name != "target" && name != "node_modules" && !name.starts_with('.') {
                find_manifests(&path, out);
            }
        } else if name == "Cargo.toml" {
            out.push(path);
        }
    }
}

/// A package: its library's crate name (if it has one) and its targets' root files, each
/// marked when it is the library's.
struct Package {
    lib_name: Option<String>,
    targets: Vec<(PathBuf, bool)>,
}

/// The targets of the package whose manifest is `manifest`; None for a workspace's manifest.
fn read_package(manifest: &Path, problems: &mut Vec<String>) -> Option<Package> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            problems.push(format!("{}: {e}", manifest.display()));
            return None;
        }
    };
    let package = table.get("package")?.as_table()?;
    let dir = manifest.parent()?;
    let name = package.get("name")?.as_str()?.replace('-', "_");
    let path_of = |v: &toml::Value| v.get("path").and_then(|p| p.as_str()).map(|p| dir.join(p));
    let mut targets: Vec<(PathBuf, bool)> = Vec::new();
    let mut add = |path: PathBuf, is_lib: bool| {
        if path.is_file() && !targets.iter().any(|(p, _)| *p == path) {
            targets.push((path, is_lib));
        }
    };
    let lib = table.get("lib");
    let lib_path = lib
        .and_then(path_of)
        .unwrap_or_else(|| dir.join("src/lib.rs"));
    let lib_name = lib_path.is_file().then(|| {
        lib.and_then(|l| l.get("name"))
            .and_then(|n| n.as_str())
            .map(|n| n.replace('-', "_"))
            .unwrap_or(name)
    });
    add(lib_path, true);
    for kind in ["bin", "test", "bench", "example"] {
        for target in table
            .get(kind)
            .and_then(|t| t.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(path) = path_of(target) {
                add(path, false);
            }
        }
    }
    if let Some(build) = package.get("build").and_then(|b| b.as_str()) {
        add(dir.join(build), false);
    }
    add(dir.join("build.rs"), false);
    add(dir.join("src/main.rs"), false);
    for folder in ["src/bin", "tests", "benches", "examples"] {
        let Ok(entries) = std::fs::read_dir(dir.join(folder)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        found.sort();
        for path in found {
            if path.is_dir() {
                add(path.join("main.rs"), false);
            } else if path.extension().is_some_and(|e| e == "rs") {
                add(path, false);
            }
        }
    }
    Some(Package { lib_name, targets })
}

/// One module of one crate.
struct Module {
    name: String,
    parent: Option<usize>,
    /// Its crate's root module.
    root: usize,
    /// The file that holds it (an inline module's is its parent's).
    file: usize,
    /// Its modules by name (several where `cfg_attr` picks one of several files).
    children: HashMap<String, Vec<usize>>,
    /// Names the module imported by `use` that name modules; `*`: the modules it globbed.
    aliases: HashMap<String, BTreeSet<usize>>,
}

/// Every crate's modules, the files they come from and where each file is mounted.
#[derive(Default)]
struct Tree {
    files: Vec<PathBuf>,
    file_ids: HashMap<PathBuf, usize>,
    parsed: HashMap<usize, Option<Rc<syn::File>>>,
    modules: Vec<Module>,
    /// (file, module): the file's items are that module's (or, for an included file, part of
    /// them).
    mountings: Vec<(usize, usize)>,
    /// Library crates by name: their root modules.
    crates: HashMap<String, usize>,
    problems: Vec<String>,
}

impl Tree {
    fn file_id(&mut self, path: &Path) -> usize {
        let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if let Some(&id) = self.file_ids.get(&path) {
            return id;
        }
        self.files.push(path.clone());
        self.file_ids.insert(path, self.files.len() - 1);
        self.files.len() - 1
    }

    fn parse(&mut self, file: usize) -> Option<Rc<syn::File>> {
        if let Some(parsed) = self.parsed.get(&file) {
            return parsed.clone();
        }
        let path = &self.files[file];
        let parsed = match std::fs::read_to_string(path).map(|text| syn::parse_file(&text)) {
            Ok(Ok(ast)) => Some(Rc::new(ast)),
            Ok(Err(e)) => {
                self.problems
                    .push(format!("{}: does not parse: {e}", path.display()));
                None
            }
            Err(e) => {
                self.problems.push(format!("{}: {e}", path.display()));
                None
            }
        };
        self.parsed.insert(file, parsed.clone());
        parsed
    }

    fn new_module(&mut self, name: String, parent: Option<usize>, file: usize) -> usize {
        let id = self.modules.len();
        let root = parent.map_or(id, |p| self.modules[p].root);
        self.modules.push(Module {
            name: name.clone(),
            parent,
            root,
            file,
            children: HashMap::new(),
            aliases: HashMap::new(),
        });
        if let Some(p) = parent {
            self.modules[p].children.entry(name).or_default().push(id);
        }
        id
    }

    /// Mounts a crate whose root file is `path`; returns its root module.
    fn mount_crate(&mut self, path: &Path) -> usize {
        let file = self.file_id(path);
        let root = self.new_module("crate".into(), None, file);
        let base = self.files[file].parent().unwrap().to_path_buf();
        self.mount_file(file, root, &base, &mut Vec::new());
        root
    }

    /// Makes `file`'s items part of `module`; its child modules' files are under `base`.
    fn mount_file(&mut self, file: usize, module: usize, base: &Path, chain: &mut Vec<usize>) {
        if chain.contains(&file) {
            return;
        }
        let Some(ast) = self.parse(file) else {
            return;
        };
        self.mountings.push((file, module));
        chain.push(file);
        self.mount_items(&ast.items, file, module, base, false, chain);
        chain.pop();
    }

    fn mount_items(
        &mut self,
        items: &[syn::Item],
        file: usize,
        module: usize,
        base: &Path,
        inline: bool,
        chain: &mut Vec<usize>,
    ) {
        let dir = self.files[file].parent().unwrap().to_path_buf();
        for item in items {
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.unraw().to_string();
                    let paths = path_attributes(&m.attrs);
                    if let Some((_, inner)) = &m.content {
                        let child = self.new_module(name.clone(), Some(module), file);
                        let folder = paths.into_iter().next().unwrap_or(name);
                        self.mount_items(inner, file, child, &base.join(folder), true, chain);
                        continue;
                    }
                    // (file, the folder of its children) for each file the module may be.
                    let mut targets: Vec<(PathBuf, PathBuf)> = Vec::new();
                    for p in &paths {
                        let target = if inline { base.join(p) } else { dir.join(p) };
                        let folder = target.parent().unwrap().to_path_buf();
                        targets.push((target, folder));
                    }
                    let flat = base.join(format!("{name}.rs"));
                    let folder = base.join(&name).join("mod.rs");
                    let default = if flat.is_file() { flat } else { folder };
                    if paths.is_empty() || default.is_file() {
                        targets.push((default, base.join(&name)));
                    }
                    if let Some((missing, _)) = targets.iter().find(|(t, _)| !t.is_file()) {
                        self.problems.push(format!(
                            "{}: `mod {name};` has no file ({})",
                            self.files[file].display(),
                            missing.display()
                        ));
                        continue;
                    }
                    for (target, folder) in targets {
                        let target = self.file_id(&target);
                        let child = self.new_module(name.clone(), Some(module), target);
                        self.mount_file(target, child, &folder, chain);
                    }
                }
                syn::Item::Macro(m) if m.mac.path.is_ident("include") => {
                    if let Ok(lit) = m.mac.parse_body::<syn::LitStr>() {
                        let target = self.file_id(&dir.join(lit.value()));
                        self.mount_file(target, module, base, chain);
                    }
                }
                _ => {}
            }
        }
    }

    /// Where a path leads: for each module it may reach (one, unless a module is one of
    /// several files by `cfg_attr`), the module, the name that ties the arrow, and whether
    /// every segment named a module. Empty when it does not start in this repository.
    fn resolve(
        &self,
        from: usize,
        segments: &[String],
        global: bool,
    ) -> Vec<(usize, String, bool)> {
        let mut reached = Vec::new();
        let Some((first, rest)) = segments.split_first() else {
            return reached;
        };
        let here = &self.modules[from];
        let crate_root = self.crates.get(first).copied();
        let mut at: Vec<usize> = match first.as_str() {
            _ if global => crate_root.into_iter().collect(),
            "crate" => vec![here.root],
            "self" => vec![from],
            "super" => here.parent.into_iter().collect(),
            name => {
                let mut found = self.named(from, name);
                if found.is_empty() {
                    found.extend(crate_root);
                }
                found
            }
        };
        for segment in rest {
            let mut next = Vec::new();
            for &m in &at {
                match segment.as_str() {
                    "self" => next.push(m),
                    "super" => next.extend(self.modules[m].parent),
                    name => {
                        let found = self.named(m, name);
                        if found.is_empty() {
                            reached.push((m, name.to_string(), false));
                        }
                        next.extend(found);
                    }
                }
            }
            at = next;
        }
        reached.extend(
            at.into_iter()
                .map(|m| (m, self.modules[m].name.clone(), true)),
        );
        reached
    }

    /// The modules `name` names inside module `m`: its child modules, or a module it imported.
    fn named(&self, m: usize, name: &str) -> Vec<usize> {
        let own = |m: usize| {
            let module = &self.modules[m];
            match module.children.get(name) {
                Some(children) => children.clone(),
                None => module
                    .aliases
                    .get(name)
                    .into_iter()
                    .flatten()
                    .copied()
                    .collect(),
            }
        };
        let found = own(m);
        if !found.is_empty() {
            return found;
        }
        // What a glob brought in: the modules the globbed module has by that name.
        let globbed = self.modules[m].aliases.get("*").into_iter().flatten();
        globbed.flat_map(|&g| own(g)).collect()
    }

    /// Fills every module's `aliases` from its `use` items (twice, so an alias may go
    /// through another).
    fn collect_aliases(&mut self) {
        for _ in 0..2 {
            let mut found = Vec::new();
            for &(file, module) in &self.mountings {
                let Some(Some(ast)) = self.parsed.get(&file) else {
                    continue;
                };
                let mut walk = Walk::new(self, file, module, false);
                walk.visit_file(ast);
                found.extend(walk.aliases);
            }
            for (module, name, target) in found {
                self.modules[module]
                    .aliases
                    .entry(name)
                    .or_default()
                    .insert(target);
            }
        }
    }

    /// Every arrow between two files: (from, to) → names.
    /// The files of `module`'s ancestors (its parent's, the parent's parent's, ... the crate
    /// root's).
    fn ancestor_files(&self, module: usize) -> BTreeSet<usize> {
        let mut files = BTreeSet::new();
        let mut at = self.modules[module].parent;
        while let Some(m) = at {
            files.insert(self.modules[m].file);
            at = self.modules[m].parent;
        }
        files
    }

    fn collect_arrows(&self) -> BTreeMap<(usize, usize), BTreeSet<String>> {
        let mut arrows: BTreeMap<(usize, usize), BTreeSet<String>> = BTreeMap::new();
        for &(file, module) in &self.mountings {
            let Some(Some(ast)) = self.parsed.get(&file) else {
                continue;
            };
            let mut walk = Walk::new(self, file, module, true);
            walk.visit_file(ast);
            let ancestors = self.ancestor_files(module);
            for (to, name) in walk.arrows {
                if to != file && !ancestors.contains(&to) {
                    arrows.entry((file, to)).or_default().insert(name);
                }
            }
        }
        arrows
    }
}
