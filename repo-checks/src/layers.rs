//! Floors: the layering of the daemon's modules.
//!
//! Each top-level module of a crate stands on a floor, and a module imports
//! only from modules on lower floors: never its own floor, never above. Inside
//! a module, a few rules name folders that must not import certain siblings
//! ([`Forbidden`]). Test code (`#[cfg(test)]` items and the files they
//! declare) is exempt: a test may reach anything.
//!
//! Owns: finding, in one Rust file's text, the paths into its own crate it
//! uses (`crate::`, `super::`, `self::`, in `use` items and in code, resolved
//! to absolute paths) and the modules it declares, without comments, docs,
//! attributes or test items ([`scan`]); judging those paths against a floor
//! table and the rules ([`judge`]); and reading the floors a `lib.rs` gives
//! in its reading order ([`reading_order`]). Pure: the caller reads the files
//! and follows the declared modules.

use std::fmt;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// A module path inside the crate, without `crate`: `["claims", "view"]`.
pub type ModulePath = Vec<String>;

/// A path into the crate that a file uses, made absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CratePath {
    /// The 1-based line where the path starts.
    pub line: usize,
    /// Its segments, without `crate`: `["gpu", "sim", "SimModel"]`.
    pub path: Vec<String>,
}

/// A module a file declares with `mod name;` outside test code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The module's name.
    pub name: String,
    /// Its `#[path = "..."]`, if it has one.
    pub path_attr: Option<String>,
}

/// What [`scan`] found in one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scanned {
    /// Every path into the crate outside test code, in order.
    pub paths: Vec<CratePath>,
    /// The modules declared outside test code, whose files follow.
    pub modules: Vec<Declared>,
}

/// The paths into its crate and the modules declared by the Rust source
/// `text` of module `module`; an error when the text does not lex.
pub fn scan(module: &[String], text: &str) -> Result<Scanned, proc_macro2::LexError> {
    let stream: TokenStream = text.parse()?;
    let mut found = Scanned::default();
    walk(module, stream, &mut found);
    Ok(found)
}

/// The floor of each top-level module, and the files that stand with
/// another module than the folder they sit in.
#[derive(Debug, Clone, Copy)]
pub struct FloorTable<'a> {
    /// `(floor, modules on it)`, from the ground up.
    pub floors: &'a [(u32, &'a [&'a str])],
    /// `(module pattern, top-level module)`: a module the pattern matches
    /// (`::`-separated, `*` for any one segment: `"claims::access::*::config"`)
    /// is judged as part of that top-level module, wherever its folder is: it
    /// may import only what that module may, and importing it is importing
    /// that module. This is how a kind of access keeps its config section in
    /// its own folder while `config` stays below the claim engine.
    pub parts: &'a [(&'a str, &'a str)],
}

impl FloorTable<'_> {
    /// The floor of top-level module `name`, if the table lists it.
    #[must_use]
    pub fn floor(&self, name: &str) -> Option<u32> {
        self.floors
            .iter()
            .find(|(_, names)| names.contains(&name))
            .map(|(floor, _)| *floor)
    }

    /// The top-level module `path` stands with: the one a part names if a
    /// part's pattern matches `path` or a module above it, else its first
    /// segment.
    #[must_use]
    pub fn stands_with<'p>(&'p self, path: &'p [String]) -> Option<&'p str> {
        self.parts
            .iter()
            .find(|(pattern, _)| matches(path, pattern))
            .map(|(_, with)| *with)
            .or_else(|| path.first().map(String::as_str))
    }
}

/// Whether `path` is the module `pattern` matches (`*` for any one segment)
/// or under it.
fn matches(path: &[String], pattern: &str) -> bool {
    let pattern: Vec<&str> = pattern.split("::").collect();
    path.len() >= pattern.len()
        && path
            .iter()
            .zip(&pattern)
            .all(|(segment, want)| *want == "*" || segment == want)
}

/// Modules under `within` must not import modules under any of `not`.
#[derive(Debug, Clone, Copy)]
pub struct Forbidden<'a> {
    /// A module path, `::`-separated: `"claims::view"`.
    pub within: &'a str,
    /// Module paths it must not import from: `"claims::prepare"`.
    pub not: &'a [&'a str],
    /// Why, for the message.
    pub why: &'a str,
}

/// An import that breaks a floor or a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A module imports from its own floor or a higher one.
    Climbs {
        /// The file, as the caller named it.
        file: String,
        /// The 1-based line.
        line: usize,
        /// The importing top-level module and its floor.
        from: (String, u32),
        /// The imported top-level module and its floor.
        to: (String, u32),
        /// The path, `crate::`-prefixed.
        path: String,
    },
    /// A module breaks a [`Forbidden`] rule.
    Forbidden {
        /// The file, as the caller named it.
        file: String,
        /// The 1-based line.
        line: usize,
        /// The rule's `within`.
        within: String,
        /// The path, `crate::`-prefixed.
        path: String,
        /// The rule's reason.
        why: String,
    },
    /// A top-level module the floor table does not list.
    Unlisted {
        /// The file, as the caller named it.
        file: String,
        /// The module.
        module: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Climbs {
                file,
                line,
                from,
                to,
                path,
            } => {
                let (from, from_floor) = from;
                let (to, to_floor) = to;
                let not = if to_floor == from_floor {
                    "its own floor"
                } else {
                    "a higher floor"
                };
                write!(
                    f,
                    "{file}:{line}: {from} (floor {from_floor}) uses {path} from {to} (floor \
                     {to_floor}), {not}; a module imports only from lower floors: move the item \
                     down, or change the floors in lib.rs's reading order and the table of the \
                     layers check together"
                )
            }
            Self::Forbidden {
                file,
                line,
                within,
                path,
                why,
            } => write!(f, "{file}:{line}: {within} must not use {path}: {why}"),
            Self::Unlisted { file, module } => write!(
                f,
                "{file}: the top-level module {module} has no floor; give it one in lib.rs's \
                 reading order and in the table of the layers check"
            ),
        }
    }
}

/// Every problem in the `paths` of `file`, module `module`.
#[must_use]
pub fn judge(
    file: &str,
    module: &[String],
    paths: &[CratePath],
    floors: &FloorTable<'_>,
    rules: &[Forbidden<'_>],
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let Some(top) = floors.stands_with(module) else {
        return problems;
    };
    let Some(from_floor) = floors.floor(top) else {
        problems.push(Problem::Unlisted {
            file: file.to_owned(),
            module: top.to_owned(),
        });
        return problems;
    };
    for used in paths {
        let shown = format!("crate::{}", used.path.join("::"));
        if let Some(to) = floors.stands_with(&used.path).filter(|to| *to != top)
            && let Some(to_floor) = floors.floor(to)
            && to_floor >= from_floor
        {
            problems.push(Problem::Climbs {
                file: file.to_owned(),
                line: used.line,
                from: (top.to_owned(), from_floor),
                to: (to.to_owned(), to_floor),
                path: shown.clone(),
            });
        }
        for rule in rules {
            if under(module, rule.within) && rule.not.iter().any(|not| under(&used.path, not)) {
                problems.push(Problem::Forbidden {
                    file: file.to_owned(),
                    line: used.line,
                    within: rule.within.to_owned(),
                    path: shown.clone(),
                    why: rule.why.to_owned(),
                });
            }
        }
    }
    problems
}

/// The floors a `lib.rs` gives in its reading order: each doc line
/// `//! <n>. …` opens floor n, and the modules it links (`` [`name`] ``), up
/// to the next numbered line or the end of the doc, stand on it.
#[must_use]
pub fn reading_order(lib_rs: &str) -> Vec<(u32, Vec<String>)> {
    let mut floors: Vec<(u32, Vec<String>)> = Vec::new();
    for line in lib_rs.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            if !floors.is_empty() {
                break;
            }
            continue;
        };
        let doc = doc.trim_start();
        if let Some((number, _)) = doc.split_once(". ")
            && let Ok(floor) = number.parse::<u32>()
        {
            floors.push((floor, Vec::new()));
        }
        if let Some((_, modules)) = floors.last_mut() {
            modules.extend(links(doc));
        }
    }
    floors
}

/// The names in `` [`name`] `` links of `text`.
fn links(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split("[`").skip(1).filter_map(|rest| {
        let (name, after) = rest.split_once('`')?;
        after.starts_with(']').then(|| name.to_owned())
    })
}

/// Whether `path` is `prefix` (`::`-separated) or under it.
fn under(path: &[String], prefix: &str) -> bool {
    let prefix: Vec<&str> = prefix.split("::").collect();
    path.len() >= prefix.len() && path.iter().zip(&prefix).all(|(a, b)| a == b)
}

/// Scans one token stream, standing in module `module`.
fn walk(module: &[String], stream: TokenStream, found: &mut Scanned) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut path_attr = None;
    let mut i = 0;
    while i < tokens.len() {
        // An attribute: `#[...]`, or `#![...]` inside what it applies to.
        if is_punct(&tokens[i], '#') {
            let inner = tokens.get(i + 1).is_some_and(|t| is_punct(t, '!'));
            let at = if inner { i + 2 } else { i + 1 };
            if let Some(TokenTree::Group(group)) = tokens.get(at)
                && group.delimiter() == Delimiter::Bracket
            {
                let attr: Vec<TokenTree> = group.stream().into_iter().collect();
                if is_cfg_test(&attr) {
                    if inner {
                        return;
                    }
                    i = skip_item(&tokens, at + 1);
                    path_attr = None;
                    continue;
                }
                if let Some(path) = path_attribute(&attr) {
                    path_attr = Some(path);
                }
                i = at + 1;
                continue;
            }
        }
        match &tokens[i] {
            TokenTree::Ident(ident) if ident == "mod" => {
                if let Some(TokenTree::Ident(name)) = tokens.get(i + 1) {
                    match tokens.get(i + 2) {
                        Some(TokenTree::Group(body)) if body.delimiter() == Delimiter::Brace => {
                            let mut inner = module.to_vec();
                            inner.push(name.to_string());
                            walk(&inner, body.stream(), found);
                            i += 3;
                        }
                        _ => {
                            found.modules.push(Declared {
                                name: name.to_string(),
                                path_attr: path_attr.take(),
                            });
                            i += 2;
                        }
                    }
                    continue;
                }
            }
            TokenTree::Ident(ident)
                if (ident == "crate" || ident == "super" || ident == "self")
                    && is_path_sep(&tokens, i + 1) =>
            {
                let line = ident.span().start().line;
                let start = vec![ident.to_string()];
                i = use_tree(module, &tokens, i + 1, start, line, found);
                continue;
            }
            TokenTree::Group(group) => {
                walk(module, group.stream(), found);
                if group.delimiter() == Delimiter::Brace {
                    path_attr = None;
                }
            }
            token if is_punct(token, ';') => path_attr = None,
            _ => {}
        }
        i += 1;
    }
}

/// Reads the rest of a path whose segments so far are `prefix`, from
/// `tokens[i]` (a `::` or the end), expanding `{a, b::c}` groups as a `use`
/// tree does; records each path and returns the index after it.
fn use_tree(
    module: &[String],
    tokens: &[TokenTree],
    mut i: usize,
    mut prefix: Vec<String>,
    line: usize,
    found: &mut Scanned,
) -> usize {
    while is_path_sep(tokens, i) {
        match tokens.get(i + 2) {
            Some(TokenTree::Ident(segment)) => {
                prefix.push(segment.to_string());
                i += 3;
            }
            Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                for part in inner.split(|t| is_punct(t, ',')) {
                    branch(module, part, &prefix, line, found);
                }
                return i + 3;
            }
            // `::*`, `::<T>` and the like end the path.
            _ => {
                i += 2;
                break;
            }
        }
    }
    found
        .paths
        .extend(resolve(module, &prefix).map(|path| CratePath { line, path }));
    i
}

/// One branch of a `use` group: `name`, `self`, `*`, `a::b`, `a::{..}`,
/// `a as b`.
fn branch(
    module: &[String],
    part: &[TokenTree],
    prefix: &[String],
    line: usize,
    found: &mut Scanned,
) {
    let mut path = prefix.to_vec();
    let rest = match part.first() {
        Some(TokenTree::Ident(first)) if first != "self" => {
            path.push(first.to_string());
            &part[1..]
        }
        Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
            let inner: Vec<TokenTree> = group.stream().into_iter().collect();
            for nested in inner.split(|t| is_punct(t, ',')) {
                branch(module, nested, prefix, line, found);
            }
            return;
        }
        Some(_) => &part[1..],
        None => return,
    };
    let line = part.first().map_or(line, |first| first.span().start().line);
    use_tree(module, rest, 0, path, line, found);
}

/// `path` made absolute from module `module`: `crate`, `self` and `super`
/// resolved. None when `super` climbs above the crate root.
fn resolve(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut out = module.to_vec();
    for (n, segment) in path.iter().enumerate() {
        match segment.as_str() {
            "crate" if n == 0 => out.clear(),
            "self" => {}
            "super" => {
                out.pop()?;
            }
            _ => out.push(segment.clone()),
        }
    }
    Some(out)
}

/// The index after the item that starts at `tokens[i]` (after further
/// attributes): a `use` item ends at its `;`, any other at its `;` or its
/// first `{...}` body.
fn skip_item(tokens: &[TokenTree], mut i: usize) -> usize {
    while is_punct_at(tokens, i, '#') {
        i += 2;
    }
    let is_use = tokens
        .get(i)
        .is_some_and(|t| matches!(t, TokenTree::Ident(ident) if ident == "use" || ident == "pub"))
        && tokens[i..]
            .iter()
            .take(4)
            .any(|t| matches!(t, TokenTree::Ident(ident) if ident == "use"));
    while let Some(token) = tokens.get(i) {
        i += 1;
        if is_punct(token, ';') {
            break;
        }
        if !is_use
            && let TokenTree::Group(group) = token
            && group.delimiter() == Delimiter::Brace
        {
            break;
        }
    }
    i
}

/// Whether an attribute's tokens are `cfg(test)`.
fn is_cfg_test(attr: &[TokenTree]) -> bool {
    match attr {
        [TokenTree::Ident(cfg), TokenTree::Group(args)] if cfg == "cfg" => {
            let args: Vec<TokenTree> = args.stream().into_iter().collect();
            matches!(args.as_slice(), [TokenTree::Ident(test)] if test == "test")
        }
        _ => false,
    }
}

/// The value of a `path = "..."` attribute.
fn path_attribute(attr: &[TokenTree]) -> Option<String> {
    match attr {
        [TokenTree::Ident(path), eq, TokenTree::Literal(value)]
            if path == "path" && is_punct(eq, '=') =>
        {
            Some(value.to_string().trim_matches('"').to_owned())
        }
        _ => None,
    }
}

/// Whether `tokens[i..]` starts with `::`.
fn is_path_sep(tokens: &[TokenTree], i: usize) -> bool {
    matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
        && is_punct_at(tokens, i + 1, ':')
}

fn is_punct_at(tokens: &[TokenTree], i: usize, c: char) -> bool {
    tokens.get(i).is_some_and(|t| is_punct(t, c))
}

fn is_punct(token: &TokenTree, c: char) -> bool {
    matches!(token, TokenTree::Punct(p) if p.as_char() == c)
}

#[cfg(test)]
#[path = "layers_tests.rs"]
mod tests;
