//! CDI names: vendor, class, device name, `kind` ("vendor/class"), fully
//! qualified device names ("vendor/class=name") and transient spec file names.
//!
//! The rules are those of the CDI Go parser (`pkg/parser`), ASCII only:
//! * vendor and class: first character a letter, last a letter or digit,
//!   middle `[A-Za-z0-9_.-]`;
//! * device name: first and last a letter or digit, middle `[A-Za-z0-9_.:-]`
//!   (a digit first needs cdiVersion 0.5.0, which [`crate::version`] accounts for).
//!
//! One deliberate narrowing: a dot in the class needs cdiVersion 0.6.0, which
//! podman 4.3 and containerd 1.7 reject, so this module refuses it.
//!
//! Invariant: a [`Kind`] or [`QualifiedName`] value always holds valid parts;
//! its fields are private and every constructor validates. Pure: no I/O.

use std::fmt;
use std::str::FromStr;

/// Which part of a name an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamePart {
    /// The vendor, before the `/` of a kind.
    Vendor,
    /// The class, after the `/` of a kind.
    Class,
    /// The device name, after the `=` of a qualified name.
    Device,
    /// The id part of a transient spec file name.
    SpecId,
}

impl fmt::Display for NamePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Vendor => "vendor",
            Self::Class => "class",
            Self::Device => "device name",
            Self::SpecId => "spec file id",
        })
    }
}

/// A name that breaks the CDI rules. Positions are 0-based character indexes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The part is empty.
    #[error("{part} is empty")]
    Empty {
        /// The empty part.
        part: NamePart,
    },
    /// A character not allowed where it stands.
    #[error("invalid {part} {name:?}: character {ch:?} at index {pos} is not allowed; {allowed}")]
    BadChar {
        /// The part the character is in.
        part: NamePart,
        /// The whole part.
        name: String,
        /// The offending character.
        ch: char,
        /// Its 0-based character index.
        pos: usize,
        /// What the rule allows at that index.
        allowed: &'static str,
    },
    /// A dot in the class, which needs cdiVersion 0.6.0.
    #[error(
        "invalid class {name:?}: '.' at index {pos} needs cdiVersion 0.6.0, newer than the 0.5.0 this crate writes"
    )]
    DotInClass {
        /// The class.
        name: String,
        /// The dot's 0-based character index.
        pos: usize,
    },
    /// No `/` between vendor and class.
    #[error("invalid kind {input:?}: expected \"vendor/class\"")]
    NotAKind {
        /// The rejected input.
        input: String,
    },
    /// No `=` between kind and device name, or a host path.
    #[error("invalid qualified device name {input:?}: expected \"vendor/class=name\"")]
    NotQualified {
        /// The rejected input.
        input: String,
    },
}

const LETTER_FIRST: &str = "the first character must be an ASCII letter";
const ALNUM_FIRST: &str = "the first character must be an ASCII letter or digit";
const ALNUM_LAST: &str = "the last character must be an ASCII letter or digit";
const KIND_MIDDLE: &str = "only ASCII letters, digits, '_', '-' and '.' are allowed";
const DEVICE_MIDDLE: &str = "only ASCII letters, digits, '_', '-', '.' and ':' are allowed";

fn letter(c: char) -> bool {
    c.is_ascii_alphabetic()
}

fn alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn kind_middle(c: char) -> bool {
    alnum(c) || matches!(c, '_' | '-' | '.')
}

fn device_middle(c: char) -> bool {
    kind_middle(c) || c == ':'
}

/// What may stand first and in the middle; the last character is always
/// a letter or digit.
struct Rule {
    first: fn(char) -> bool,
    first_allowed: &'static str,
    middle: fn(char) -> bool,
    middle_allowed: &'static str,
}

fn rule(part: NamePart) -> Rule {
    match part {
        NamePart::Vendor | NamePart::Class => Rule {
            first: letter,
            first_allowed: LETTER_FIRST,
            middle: kind_middle,
            middle_allowed: KIND_MIDDLE,
        },
        NamePart::Device | NamePart::SpecId => Rule {
            first: alnum,
            first_allowed: ALNUM_FIRST,
            middle: device_middle,
            middle_allowed: DEVICE_MIDDLE,
        },
    }
}

/// Checks one part against its CDI rule.
pub fn validate_part(part: NamePart, name: &str) -> Result<(), NameError> {
    let rule = rule(part);
    let count = name.chars().count();
    if count == 0 {
        return Err(NameError::Empty { part });
    }
    for (pos, ch) in name.chars().enumerate() {
        let (ok, allowed) = if pos == 0 {
            ((rule.first)(ch), rule.first_allowed)
        } else if pos + 1 == count {
            (alnum(ch), ALNUM_LAST)
        } else {
            ((rule.middle)(ch), rule.middle_allowed)
        };
        if !ok {
            let name = name.to_owned();
            return Err(NameError::BadChar {
                part,
                name,
                ch,
                pos,
                allowed,
            });
        }
        if part == NamePart::Class && ch == '.' {
            let name = name.to_owned();
            return Err(NameError::DotInClass { name, pos });
        }
    }
    Ok(())
}

/// Checks a device name (the part after `=`).
pub fn validate_device_name(name: &str) -> Result<(), NameError> {
    validate_part(NamePart::Device, name)
}

/// A valid "vendor/class".
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Kind {
    vendor: String,
    class: String,
}

impl Kind {
    /// Builds a kind from its two parts, checking both.
    pub fn new(vendor: &str, class: &str) -> Result<Self, NameError> {
        validate_part(NamePart::Vendor, vendor)?;
        validate_part(NamePart::Class, class)?;
        Ok(Self {
            vendor: vendor.to_owned(),
            class: class.to_owned(),
        })
    }

    /// The vendor, e.g. "k8s.gpuslice.dev".
    pub fn vendor(&self) -> &str {
        &self.vendor
    }

    /// The class, e.g. "claim".
    pub fn class(&self) -> &str {
        &self.class
    }
}

impl FromStr for Kind {
    type Err = NameError;

    /// Splits at the first `/`, as the Go parser does.
    fn from_str(input: &str) -> Result<Self, NameError> {
        let (vendor, class) = input.split_once('/').ok_or_else(|| NameError::NotAKind {
            input: input.to_owned(),
        })?;
        Self::new(vendor, class)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.vendor, self.class)
    }
}

/// A valid fully qualified device name, "vendor/class=name".
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QualifiedName {
    kind: Kind,
    name: String,
}

impl QualifiedName {
    /// Qualifies `name` with `kind`, checking the name.
    pub fn new(kind: Kind, name: &str) -> Result<Self, NameError> {
        validate_device_name(name)?;
        Ok(Self {
            kind,
            name: name.to_owned(),
        })
    }

    /// Parses "vendor/class=name", splitting at the first `=` and then the
    /// first `/`, as the Go parser does. A leading `/` means a host path.
    pub fn parse(input: &str) -> Result<Self, NameError> {
        let not_qualified = || NameError::NotQualified {
            input: input.to_owned(),
        };
        if input.starts_with('/') {
            return Err(not_qualified());
        }
        let (kind, name) = input.split_once('=').ok_or_else(not_qualified)?;
        Self::new(kind.parse()?, name)
    }

    /// The kind.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The device name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl FromStr for QualifiedName {
    type Err = NameError;

    fn from_str(input: &str) -> Result<Self, NameError> {
        Self::parse(input)
    }
}

impl fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.kind, self.name)
    }
}

/// The file name of a transient (per-claim) spec: `vendor-class_<id>.json`,
/// as the Go library's `GenerateTransientSpecName` plus the extension. `id`
/// must follow the device-name rule (so it holds no `/`).
pub fn transient_spec_file_name(kind: &Kind, id: &str) -> Result<String, NameError> {
    validate_part(NamePart::SpecId, id)?;
    Ok(format!("{}-{}_{id}.json", kind.vendor, kind.class))
}

#[cfg(test)]
mod tests;
