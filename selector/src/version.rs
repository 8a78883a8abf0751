//! Semantic versions as Kubernetes' CEL `semver()` reads them. Pure.
//!
//! Strict by default (semver 2.0: three numbers, no leading zeros, no "v");
//! with `normalize` a leading "v" is dropped, missing minor and patch become
//! 0 and leading zeros are removed, as `semver(s, true)` does. Versions order
//! and compare equal by precedence, ignoring build metadata.

use std::cmp::Ordering;
use std::fmt;

/// A parsed version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(semver::Version);

/// Why a string is not a version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a semantic version ({reason}); write MAJOR.MINOR.PATCH, e.g. \"1.2.3\"")]
pub struct VersionError {
    /// The text.
    pub text: String,
    /// What the semver parser said.
    pub reason: String,
}

impl Version {
    /// Parses `text`, strictly or normalized.
    pub fn parse(text: &str, normalize: bool) -> Result<Self, VersionError> {
        let owned;
        let input = if normalize {
            owned = normalized(text);
            owned.as_str()
        } else {
            text
        };
        semver::Version::parse(input)
            .map(Self)
            .map_err(|e| VersionError {
                text: text.to_owned(),
                reason: e.to_string(),
            })
    }

    /// Precedence order (build metadata ignored).
    pub fn compare(&self, other: &Self) -> Ordering {
        self.0.cmp_precedence(&other.0)
    }

    /// The major number.
    pub fn major(&self) -> u64 {
        self.0.major
    }

    /// The minor number.
    pub fn minor(&self) -> u64 {
        self.0.minor
    }

    /// The patch number.
    pub fn patch(&self) -> u64 {
        self.0.patch
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// "v1.02" -> "1.2.0": the numeric core padded to three parts.
fn normalized(text: &str) -> String {
    let text = text.strip_prefix('v').unwrap_or(text);
    let split = text.find(['-', '+']).unwrap_or(text.len());
    let (core, rest) = text.split_at(split);
    let mut parts: Vec<String> = core
        .split('.')
        .map(|p| {
            let trimmed = p.trim_start_matches('0');
            if trimmed.is_empty() && !p.is_empty() {
                "0".to_owned()
            } else {
                trimmed.to_owned()
            }
        })
        .collect();
    while parts.len() < 3 {
        parts.push("0".to_owned());
    }
    format!("{}{rest}", parts.join("."))
}

#[cfg(test)]
mod tests {
    use super::Version;
    use std::cmp::Ordering;

    #[test]
    fn strict_and_normalized() {
        assert_eq!(
            Version::parse("1.2.3", false).map(|v| v.to_string()),
            Ok("1.2.3".to_owned())
        );
        for bad in ["1.2", "v1.2.3", "01.2.3", "1.2.3.4", "", "abc"] {
            assert!(Version::parse(bad, false).is_err(), "{bad}");
        }
        for (text, want) in [
            ("v1.2", "1.2.0"),
            ("1", "1.0.0"),
            ("01.02.03", "1.2.3"),
            ("v1.0.0-rc.1", "1.0.0-rc.1"),
        ] {
            assert_eq!(
                Version::parse(text, true).map(|v| v.to_string()),
                Ok(want.to_owned()),
                "{text}"
            );
        }
    }

    #[test]
    fn precedence() {
        let v = |t: &str| Version::parse(t, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v("1.10.0").compare(&v("1.9.0")), Ordering::Greater);
        assert_eq!(v("1.0.0-alpha").compare(&v("1.0.0")), Ordering::Less);
        assert_eq!(v("1.0.0+build.1").compare(&v("1.0.0")), Ordering::Equal);
        assert_eq!(
            (
                v("570.124.6").major(),
                v("570.124.6").minor(),
                v("570.124.6").patch()
            ),
            (570, 124, 6)
        );
    }
}
