//! The links of a Markdown file, and which of them are dead.
//!
//! Owns: finding links as GitHub renders them (inline, reference and
//! autolinks, images; nothing inside code), resolving a relative target
//! against the file that holds it, and the verdict. Must not read files: the
//! caller says which repository paths exist.
//!
//! A target is checked when it is relative: http(s) and mailto links and
//! bare `#anchors` are not, `#fragment` and `?query` are cut off, `%XX` is
//! decoded, a leading `/` means the repository root. A checked target must
//! stay inside the repository and name a file or folder that exists in it.

use std::fmt;

use pulldown_cmark::{Event, Options, Parser, Tag};
use thiserror::Error;

use crate::line_of;

/// A link of a Markdown file: where it is and what it points at, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub line: usize,
    pub target: String,
}

/// Every link and image of `text`, in order.
#[must_use]
pub fn links(text: &str) -> Vec<Link> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    Parser::new_ext(text, options)
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => Some(Link {
                line: line_of(text, range.start),
                target: dest_url.into_string(),
            }),
            _ => None,
        })
        .collect()
}

/// What a link target points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A web or mail address: not checked here.
    External,
    /// A place in the same file: not checked here.
    Anchor,
    /// A path of the repository, relative to its root, `/`-separated, with
    /// no `.` or `..` left; empty for the root itself.
    Path(String),
}

/// Why a link is dead.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Why {
    #[error("the target is empty")]
    Empty,
    #[error("`{0}:` links are neither relative nor http(s)/mailto")]
    Scheme(String),
    #[error("it points outside the repository")]
    Outside,
    #[error("{0} is not a file or folder of the repository")]
    Missing(String),
}

/// A dead link, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dead {
    pub file: String,
    pub line: usize,
    pub target: String,
    pub why: Why,
}

impl fmt::Display for Dead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            file,
            line,
            target,
            why,
        } = self;
        write!(f, "{file}:{line}: dead link ({target}): {why}")
    }
}

/// Resolves `target`, written in the repository file `file` (a path relative
/// to the root, `/`-separated).
pub fn resolve(file: &str, target: &str) -> Result<Target, Why> {
    let target = target.trim();
    if target.is_empty() {
        return Err(Why::Empty);
    }
    if target.starts_with('#') {
        return Ok(Target::Anchor);
    }
    if let Some(scheme) = scheme(target) {
        return match scheme.to_ascii_lowercase().as_str() {
            "http" | "https" | "mailto" => Ok(Target::External),
            _ => Err(Why::Scheme(scheme.to_owned())),
        };
    }
    let path = target.split(['#', '?']).next().unwrap_or_default();
    let path = percent_decode(path);
    let (base, rest) = match path.strip_prefix('/') {
        Some(rest) => ("", rest),
        None => (
            file.rsplit_once('/').map_or("", |(dir, _)| dir),
            path.as_str(),
        ),
    };
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop().ok_or(Why::Outside)?;
            }
            name => parts.push(name),
        }
    }
    Ok(Target::Path(parts.join("/")))
}

/// The dead links of `text`, the contents of the repository file `file`;
/// `exists` says whether a repository path (a [`Target::Path`]) is a file or
/// folder of the repository.
pub fn dead_links(file: &str, text: &str, exists: impl Fn(&str) -> bool) -> Vec<Dead> {
    links(text)
        .into_iter()
        .filter_map(|Link { line, target }| {
            let why = match resolve(file, &target) {
                Ok(Target::External | Target::Anchor) => return None,
                Ok(Target::Path(path)) if path.is_empty() || exists(&path) => return None,
                Ok(Target::Path(path)) => Why::Missing(path),
                Err(why) => why,
            };
            Some(Dead {
                file: file.to_owned(),
                line,
                target,
                why,
            })
        })
        .collect()
}

/// The URI scheme of `target` (RFC 3986: a letter, then letters, digits,
/// `+`, `-` or `.`, then `:`), if it has one.
fn scheme(target: &str) -> Option<&str> {
    let (scheme, _) = target.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

/// `%XX` escapes decoded; anything that is not a valid escape, or that would
/// not decode to UTF-8, is kept as written.
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = bytes
            .get(i + 1..i + 3)
            .filter(|hex| bytes[i] == b'%' && hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        if let Some(byte) = escape {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
