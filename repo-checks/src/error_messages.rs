//! Error messages that say their cause twice.
//!
//! A `thiserror` variant either shows its cause in its own message
//! (`#[error("cannot read {path}: {error}")]`) or hands it on as its source
//! (`#[source]`, `#[from]`, or a field named `source`), never both: the
//! binaries print an error with its chain of sources (`{:#}`), so a cause in
//! both places is printed twice (`… (os error 98): … (os error 98)`).
//!
//! Owns: finding such variants in one Rust file's text, with the file, line,
//! type and variant. Pure: the caller reads the files.

use std::fmt;

use syn::spanned::Spanned;
use syn::{Attribute, Fields, Item, Meta};

/// A variant (or struct) whose message shows the field it also gives as
/// its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoubledCause {
    /// The file, as the caller named it.
    pub file: String,
    /// The 1-based line of the `#[error(...)]` attribute.
    pub line: usize,
    /// `Enum::Variant`, or the struct's name.
    pub item: String,
    /// The field shown and sourced (`source`, `0`, ...).
    pub field: String,
}

impl fmt::Display for DoubledCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {} shows `{}` in its message and also gives it as its source; keep one \
             (show it and rename the field so it is no source, or drop it from the message)",
            self.file, self.line, self.item, self.field
        )
    }
}

/// Every doubled cause in the Rust source `text` of `file`; an error when
/// the text does not parse.
pub fn doubled_causes(file: &str, text: &str) -> Result<Vec<DoubledCause>, syn::Error> {
    let parsed = syn::parse_file(text)?;
    let mut found = Vec::new();
    visit(file, &parsed.items, &mut found);
    Ok(found)
}

fn visit(file: &str, items: &[Item], found: &mut Vec<DoubledCause>) {
    for item in items {
        match item {
            Item::Enum(e) if derives_error(&e.attrs) => {
                for v in &e.variants {
                    let name = format!("{}::{}", e.ident, v.ident);
                    check(file, &name, &v.attrs, &v.fields, found);
                }
            }
            Item::Struct(s) if derives_error(&s.attrs) => {
                check(file, &s.ident.to_string(), &s.attrs, &s.fields, found);
            }
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    visit(file, inner, found);
                }
            }
            _ => {}
        }
    }
}

fn derives_error(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && matches!(&a.meta, Meta::List(list)
                if words(&list.tokens.to_string()).any(|w| w == "Error"))
    })
}

fn check(
    file: &str,
    item: &str,
    attrs: &[Attribute],
    fields: &Fields,
    found: &mut Vec<DoubledCause>,
) {
    let Some(attr) = attrs.iter().find(|a| a.path().is_ident("error")) else {
        return;
    };
    let Meta::List(list) = &attr.meta else {
        return;
    };
    let Some(source) = source_field(fields) else {
        return;
    };
    let tokens: Vec<proc_macro2::TokenTree> = list.tokens.clone().into_iter().collect();
    let Some(proc_macro2::TokenTree::Literal(first)) = tokens.first() else {
        return; // transparent
    };
    let Ok(format) = syn::parse_str::<syn::LitStr>(&first.to_string()) else {
        return;
    };
    let args: String = tokens[1..].iter().map(ToString::to_string).collect();
    let shown =
        placeholders(&format.value()).any(|p| p == source) || words(&args).any(|w| w == source);
    if shown {
        found.push(DoubledCause {
            file: file.to_owned(),
            line: attr.span().start().line,
            item: item.to_owned(),
            field: source,
        });
    }
}

/// The field thiserror makes the source: one marked `#[source]` or
/// `#[from]`, else one named `source`. Tuple fields by index.
fn source_field(fields: &Fields) -> Option<String> {
    let name = |i: usize, f: &syn::Field| {
        f.ident
            .as_ref()
            .map_or_else(|| i.to_string(), ToString::to_string)
    };
    let marked = fields.iter().enumerate().find(|(_, f)| {
        f.attrs
            .iter()
            .any(|a| a.path().is_ident("source") || a.path().is_ident("from"))
    });
    match marked {
        Some((i, f)) => Some(name(i, f)),
        None => fields
            .iter()
            .enumerate()
            .map(|(i, f)| name(i, f))
            .find(|n| n == "source"),
    }
}

/// The names in a format string's `{name}` / `{name:?}` / `{0}` (not `{{`).
fn placeholders(format: &str) -> impl Iterator<Item = String> + '_ {
    format
        .split('{')
        .skip(1)
        .filter(|piece| !piece.is_empty())
        .filter_map(|piece| {
            let inner = piece.split('}').next()?;
            let name = inner.split(':').next()?.trim();
            (!name.is_empty()).then(|| name.to_owned())
        })
}

/// The identifier-like words of `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::doubled_causes;

    fn fields_found(text: &str) -> Vec<(String, String)> {
        doubled_causes("x.rs", text)
            .unwrap()
            .into_iter()
            .map(|d| (d.item, d.field))
            .collect()
    }

    #[test]
    fn a_source_shown_in_the_message_is_found_in_each_spelling() {
        let text = r#"
            #[derive(Debug, thiserror::Error)]
            enum E {
                #[error("cannot read {path}: {source}")]
                Named { path: String, source: std::io::Error },
                #[error("cannot bind: {0}")]
                From(#[from] std::io::Error),
                #[error("step {step}: {err:?}")]
                Marked { step: u8, #[source] err: std::io::Error },
                #[error("lock {}: {}", path.display(), source)]
                Args { path: std::path::PathBuf, source: nix::Error },
            }
            mod inner {
                #[derive(Debug, Error)]
                #[error("inner: {0}")]
                struct S(#[source] std::io::Error);
            }
        "#;
        assert_eq!(
            fields_found(text),
            [
                ("E::Named".into(), "source".into()),
                ("E::From".into(), "0".into()),
                ("E::Marked".into(), "err".into()),
                ("E::Args".into(), "source".into()),
                ("S".into(), "0".into()),
            ]
        );
    }

    #[test]
    fn one_place_for_the_cause_is_fine() {
        let text = r#"
            #[derive(Debug, thiserror::Error)]
            enum E {
                #[error("cannot read {path}: {error}")]
                Shown { path: String, error: std::io::Error },
                #[error("GPU backend {backend}")]
                Chained { backend: String, #[source] source: std::io::Error },
                #[error(transparent)]
                Transparent(#[from] std::io::Error),
                #[error("a {{source}} in braces: {reason}")]
                Escaped { reason: String },
                #[error("no source at all: {0}")]
                Plain(String),
            }
            #[derive(Debug)]
            enum NotAnError { #[allow(dead_code)] A }
        "#;
        assert_eq!(fields_found(text), []);
    }

    #[test]
    fn the_line_is_the_attribute_s() {
        let text = "#[derive(Error)]\nenum E {\n    #[error(\"x: {source}\")]\n    A { source: std::io::Error },\n}\n";
        let found = doubled_causes("f.rs", text).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, 3);
        assert!(
            found[0]
                .to_string()
                .starts_with("f.rs:3: E::A shows `source`")
        );
    }

    #[test]
    fn text_that_does_not_parse_is_an_error() {
        doubled_causes("f.rs", "enum {").unwrap_err();
    }
}
