//! The encodings of how a device is used: enums whose variants name kinds of
//! access (a whole GPU, a MIG slice, MPS, time-slicing). The daemon has one,
//! `AccessKind`; a second (a table's shared mode, a view's claim kind, a
//! string tag) is how its spellings drifted apart before. Variants that
//! carry data (the record's sharing with its limits, advice's forms with
//! their sizes) say more than the kind and are not counted. Pure: the test
//! hands each file's text in.

use syn::{Fields, Item};

/// Variant names that name a kind of access, in any of the spellings the
/// code has used.
pub const KIND_WORDS: &[&str] = &[
    "Exclusive",
    "Whole",
    "Mig",
    "Mps",
    "TimeSlicing",
    "TimeSlice",
    "Timeslicing",
    "Shared",
];

/// A fieldless enum with two or more variants from [`KIND_WORDS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindEnum {
    /// The enum's name.
    pub name: String,
    /// Its 1-based line.
    pub line: usize,
    /// The variants that name kinds of access.
    pub kinds: Vec<String>,
}

/// Why a file could not be judged.
#[derive(Debug, thiserror::Error)]
#[error("not Rust that parses")]
pub struct ParseError(#[from] syn::Error);

/// The kind-naming enums of one file's `text`, test modules included (a
/// test may not keep a private encoding either).
pub fn kind_enums(text: &str) -> Result<Vec<KindEnum>, ParseError> {
    let file = syn::parse_file(text)?;
    let mut found = Vec::new();
    collect(&file.items, &mut found);
    Ok(found)
}

fn collect(items: &[Item], found: &mut Vec<KindEnum>) {
    for item in items {
        match item {
            Item::Enum(e) => {
                let fieldless = e.variants.iter().all(|v| matches!(v.fields, Fields::Unit));
                let kinds: Vec<String> = e
                    .variants
                    .iter()
                    .map(|v| v.ident.to_string())
                    .filter(|name| KIND_WORDS.contains(&name.as_str()))
                    .collect();
                if fieldless && kinds.len() >= 2 {
                    found.push(KindEnum {
                        name: e.ident.to_string(),
                        line: e.ident.span().start().line,
                        kinds,
                    });
                }
            }
            Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect(items, found);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
#[path = "access_words_tests.rs"]
mod tests;
