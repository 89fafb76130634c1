//! The walk of one file's syntax: its `#[path]` attributes, its `use` leaves, and the
//! visitor that records what it takes from other modules.

use super::*;

/// The files a module's attributes name: `#[path = "…"]`, and each
/// `#[cfg_attr(…, path = "…")]` (every configuration's).
pub(super) fn path_attributes(attrs: &[syn::Attribute]) -> Vec<String> {
    fn path_of(meta: &syn::Meta) -> Option<String> {
        match meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        }
    }
    let mut paths = Vec::new();
    for attr in attrs {
        if attr.path().is_ident("cfg_attr") {
            let metas = attr.parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            );
            // The first is the condition, the rest the attributes it applies.
            paths.extend(
                metas
                    .into_iter()
                    .flatten()
                    .skip(1)
                    .filter_map(|m| path_of(&m)),
            );
        } else {
            paths.extend(path_of(&attr.meta));
        }
    }
    paths
}

/// A `use` tree's leaves: each one's path (a glob's ends in `*`) and the name it brings in.
pub(super) fn use_leaves(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.unraw().to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.unraw().to_string());
            out.push((path, None));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.unraw().to_string());
            out.push((path, Some(r.rename.unraw().to_string())));
        }
        syn::UseTree::Glob(_) => {
            let mut path = prefix.clone();
            path.push("*".into());
            out.push((path, None));
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_leaves(t, prefix, out);
            }
        }
    }
}

/// Whether `tokens` hold a `::` anywhere (a macro's arguments without one hold no path this
/// graph follows, and need not be parsed).
pub(super) fn has_path_separator(tokens: proc_macro2::TokenStream) -> bool {
    let mut colon = false;
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' => {
                if colon {
                    return true;
                }
                colon = p.spacing() == proc_macro2::Spacing::Joint;
            }
            proc_macro2::TokenTree::Group(g) => {
                if has_path_separator(g.stream()) {
                    return true;
                }
                colon = false;
            }
            _ => colon = false,
        }
    }
    false
}

/// Walks one mounted file, tracking the module each item is in; gathers the module aliases
/// of its `use` items, or its arrows.
pub(super) struct Walk<'t> {
    pub(super) tree: &'t Tree,
    pub(super) file: usize,
    pub(super) module: usize,
    pub(super) arrows_wanted: bool,
    pub(super) aliases: Vec<(usize, String, usize)>,
    pub(super) arrows: Vec<(usize, String)>,
}

impl<'t> Walk<'t> {
    pub(super) fn new(tree: &'t Tree, file: usize, module: usize, arrows_wanted: bool) -> Self {
        Walk {
            tree,
            file,
            module,
            arrows_wanted,
            aliases: Vec::new(),
            arrows: Vec::new(),
        }
    }

    fn arrow(&mut self, segments: &[String], global: bool) {
        let glob = segments.last().is_some_and(|s| s == "*");
        let walked = if glob {
            &segments[..segments.len() - 1]
        } else {
            segments
        };
        for (module, name, _) in self.tree.resolve(self.module, walked, global) {
            let name = if glob { "*".to_string() } else { name };
            self.arrows.push((self.tree.modules[module].file, name));
        }
    }
}

impl<'ast> Visit<'ast> for Walk<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let Some((_, items)) = &m.content else {
            return;
        };
        let outer = self.module;
        let name = m.ident.unraw().to_string();
        let mut children = self.tree.modules[outer]
            .children
            .get(&name)
            .into_iter()
            .flatten();
        if let Some(&inner) = children.find(|&&c| self.tree.modules[c].file == self.file) {
            self.module = inner;
        }
        for item in items {
            self.visit_item(item);
        }
        self.module = outer;
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
        let global = u.leading_colon.is_some();
        for (segments, rename) in leaves {
            if self.arrows_wanted {
                self.arrow(&segments, global);
            } else {
                // A glob is kept under `*`: the names of the module it reaches.
                let glob = segments.last().is_some_and(|s| s == "*");
                let walked = if glob {
                    &segments[..segments.len() - 1]
                } else {
                    &segments
                };
                for (target, name, whole) in self.tree.resolve(self.module, walked, global) {
                    if whole {
                        let name = if glob {
                            "*".into()
                        } else {
                            rename.clone().unwrap_or(name)
                        };
                        self.aliases.push((self.module, name, target));
                    }
                }
            }
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if self.arrows_wanted && (p.segments.len() > 1 || p.leading_colon.is_some()) {
            let segments: Vec<String> = p
                .segments
                .iter()
                .map(|s| s.ident.unraw().to_string())
                .collect();
            self.arrow(&segments, p.leading_colon.is_some());
        }
        visit::visit_path(self, p);
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item_macro(&mut self, m: &'ast syn::ItemMacro) {
        // A `macro_rules!` body is a pattern, not code: opaque.
        if m.ident.is_none() {
            self.visit_macro(&m.mac);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        if !self.arrows_wanted || !has_path_separator(mac.tokens.clone()) {
            return;
        }
        // Arguments that read as Rust expressions (`format!`, `write!`, `assert!`, `vec!`,
        // `anyhow!` and the like) are read as such; other macros stay opaque.
        let arguments = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(exprs) = mac.parse_body_with(arguments) {
            for expr in &exprs {
                self.visit_expr(expr);
            }
        }
    }
}
