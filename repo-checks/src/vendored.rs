//! The `SOURCE` manifest of a `third_party/` folder, and the comparison of
//! the folder's files with it.
//!
//! Owns: the manifest format `third_party/refresh.sh` writes (one
//! `key value` per line, `#` comments):
//!
//! ```text
//! repository https://github.com/OWNER/NAME
//! ref TAG-BRANCH-OR-COMMIT
//! commit FULL-COMMIT-ID               (files fetched from the repository at that commit)
//! wheel FILE.whl SHA256               (or: files taken from the release wheel the
//!                                      project publishes on PyPI for that tag)
//! fetched YYYY-MM-DD
//! license SPDX-ID
//! file SHA256 NAME UPSTREAM/PATH      (one per vendored file, LICENSE among them;
//!                                      the path in the repository, or in the wheel)
//! patch NAME.patch                    (gpuslice's own change, applied by a build)
//! ```
//!
//! A folder has exactly one origin, `commit` or `wheel`: the wheel is for a
//! release whose commit cannot be reached from here (kubernetes-validate
//! 1.37.0), recorded by the wheel's own sha256 so it is as checkable.
//!
//! A NAME is a path inside the folder (`structured/allocator.go`): relative,
//! no empty, `.` or `..` part, no part starting with a dot. A `patch` is a
//! file of the folder's top level that gpuslice wrote, not upstream: a build
//! applies it to its own copy, so the vendored files stay byte-identical to
//! upstream; it is listed (so it is not a stray) but has no sha256.
//!
//! Must not read files: callers hand in the folder's contents. Invariant: a
//! folder passes only when every file but `SOURCE` is listed and every `file`
//! has the recorded sha256, so an edit by hand, a lost file or a stray one
//! fails.

use std::collections::BTreeMap;
use std::fmt;

use ring::digest::{SHA256, digest};
use thiserror::Error;

/// The manifest's name in each folder.
pub const MANIFEST: &str = "SOURCE";

/// One vendored file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Line of the manifest that lists it.
    pub line: usize,
    /// Lowercase hex.
    pub sha256: String,
    /// Its name in the folder.
    pub name: String,
    /// Its path in the upstream repository.
    pub upstream: String,
}

/// A gpuslice patch kept beside the vendored files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Line of the manifest that lists it.
    pub line: usize,
    /// Its name in the folder (top level, ends in `.patch`).
    pub name: String,
}

/// A parsed `SOURCE` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub repository: String,
    pub reference: String,
    pub origin: Origin,
    pub fetched: String,
    pub license: String,
    pub files: Vec<Entry>,
    pub patches: Vec<Patch>,
}

/// Where a folder's files were taken from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The repository at this full commit id.
    Commit(String),
    /// The release wheel the project publishes on PyPI: its file name and
    /// sha256 (lowercase hex).
    Wheel { file: String, sha256: String },
}

/// What is wrong with a `SOURCE` file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ManifestError {
    #[error(
        "line {line}: unknown key `{key}` (expected repository, ref, commit, wheel, fetched, license, file or patch)"
    )]
    UnknownKey { line: usize, key: String },
    #[error("line {line}: `{key}` given twice")]
    Duplicate { line: usize, key: String },
    #[error("line {line}: {what}")]
    Malformed { line: usize, what: String },
    #[error("no `{0}` line")]
    Missing(&'static str),
    #[error("no file line for LICENSE: vendored files travel with their license")]
    NoLicense,
    #[error(
        "give one origin: a `commit` line (files from the repository at that commit) or a \
         `wheel` line (files from that release wheel), not both"
    )]
    Origin,
}

const KEYS: [&str; 5] = ["repository", "ref", "commit", "fetched", "license"];

/// Parses a `SOURCE` file.
pub fn parse(text: &str) -> Result<Manifest, ManifestError> {
    let mut fields: BTreeMap<&str, String> = BTreeMap::new();
    let mut files: Vec<Entry> = Vec::new();
    let mut patches: Vec<Patch> = Vec::new();
    let mut wheel: Option<Origin> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let words: Vec<&str> = raw.split_whitespace().collect();
        let Some((&key, values)) = words.split_first() else {
            continue;
        };
        if key.starts_with('#') {
            continue;
        }
        if key == "file" || key == "patch" {
            let name = if key == "file" {
                let entry = file_entry(line, values)?;
                let name = entry.name.clone();
                files.push(entry);
                name
            } else {
                let patch = patch_entry(line, values)?;
                let name = patch.name.clone();
                patches.push(patch);
                name
            };
            let listed = files.iter().filter(|f| f.name == name).count()
                + patches.iter().filter(|p| p.name == name).count();
            if listed > 1 {
                return Err(ManifestError::Duplicate {
                    line,
                    key: format!("{key} {name}"),
                });
            }
            continue;
        }
        if key == "wheel" {
            if wheel.is_some() {
                return Err(ManifestError::Duplicate {
                    line,
                    key: key.to_owned(),
                });
            }
            wheel = Some(wheel_origin(line, values)?);
            continue;
        }
        let Some(&key) = KEYS.iter().find(|&&k| k == key) else {
            return Err(ManifestError::UnknownKey {
                line,
                key: key.to_owned(),
            });
        };
        let [value] = values else {
            return Err(malformed(line, format!("`{key}` takes one value")));
        };
        check_field(line, key, value)?;
        if fields.insert(key, (*value).to_owned()).is_some() {
            return Err(ManifestError::Duplicate {
                line,
                key: key.to_owned(),
            });
        }
    }
    if !files.iter().any(|f| f.name == "LICENSE") {
        return Err(ManifestError::NoLicense);
    }
    let origin = match (fields.remove("commit"), wheel) {
        (Some(commit), None) => Origin::Commit(commit),
        (None, Some(origin)) => origin,
        _ => return Err(ManifestError::Origin),
    };
    let mut take = |key: &'static str| fields.remove(key).ok_or(ManifestError::Missing(key));
    Ok(Manifest {
        repository: take("repository")?,
        reference: take("ref")?,
        origin,
        fetched: take("fetched")?,
        license: take("license")?,
        files,
        patches,
    })
}

/// `wheel FILE.whl SHA256`.
fn wheel_origin(line: usize, values: &[&str]) -> Result<Origin, ManifestError> {
    let [file, sha256] = values else {
        return Err(malformed(
            line,
            "a wheel line is `wheel FILE.whl SHA256`".to_owned(),
        ));
    };
    let plain = !file.contains('/') && !file.starts_with('.');
    if !plain || !file.ends_with(".whl") {
        return Err(malformed(
            line,
            format!("`{file}` must be a wheel's file name (NAME-VERSION-...whl)"),
        ));
    }
    if !is_hex(sha256, 64) {
        return Err(malformed(
            line,
            format!("`{sha256}` is not a sha256 (64 lowercase hex digits)"),
        ));
    }
    Ok(Origin::Wheel {
        file: (*file).to_owned(),
        sha256: (*sha256).to_owned(),
    })
}

fn malformed(line: usize, what: String) -> ManifestError {
    ManifestError::Malformed { line, what }
}

fn is_hex(value: &str, len: usize) -> bool {
    value.len() == len
        && value
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn check_field(line: usize, key: &str, value: &str) -> Result<(), ManifestError> {
    let ok = match key {
        "repository" => value
            .strip_prefix("https://github.com/")
            .is_some_and(|slug| slug.split('/').filter(|p| !p.is_empty()).count() == 2),
        "commit" => is_hex(value, 40),
        "fetched" => {
            value.len() == 10
                && value.bytes().enumerate().all(|(i, b)| match i {
                    4 | 7 => b == b'-',
                    _ => b.is_ascii_digit(),
                })
        }
        _ => true,
    };
    if ok {
        return Ok(());
    }
    let expected = match key {
        "repository" => "https://github.com/OWNER/NAME",
        "commit" => "a full commit id (40 lowercase hex digits)",
        _ => "a date YYYY-MM-DD",
    };
    Err(malformed(
        line,
        format!("`{key} {value}`: expected {expected}"),
    ))
}

fn file_entry(line: usize, values: &[&str]) -> Result<Entry, ManifestError> {
    let [sha256, name, upstream] = values else {
        return Err(malformed(
            line,
            "a file line is `file SHA256 NAME UPSTREAM/PATH`".to_owned(),
        ));
    };
    if !is_hex(sha256, 64) {
        return Err(malformed(
            line,
            format!(
                "`{sha256}` is not a sha256 (64 lowercase hex digits); run third_party/refresh.sh"
            ),
        ));
    }
    if !is_folder_path(name) || *name == MANIFEST {
        return Err(malformed(
            line,
            format!(
                "`{name}` must be a relative path in the folder (no empty, `.` or `..` part, \
                 none starting with a dot), other than {MANIFEST}"
            ),
        ));
    }
    if upstream.starts_with('/') || upstream.split('/').any(|p| p.is_empty() || p == "..") {
        return Err(malformed(
            line,
            format!("`{upstream}` must be a relative path of the upstream repository"),
        ));
    }
    Ok(Entry {
        line,
        sha256: (*sha256).to_owned(),
        name: (*name).to_owned(),
        upstream: (*upstream).to_owned(),
    })
}

fn patch_entry(line: usize, values: &[&str]) -> Result<Patch, ManifestError> {
    let [name] = values else {
        return Err(malformed(
            line,
            "a patch line is `patch NAME.patch`".to_owned(),
        ));
    };
    if name.contains('/') || name.starts_with('.') || !name.ends_with(".patch") {
        return Err(malformed(
            line,
            format!("`{name}` must be a file name of the folder's top level ending in .patch"),
        ));
    }
    Ok(Patch {
        line,
        name: (*name).to_owned(),
    })
}

/// Whether `name` is a path inside a folder: relative, every part non-empty
/// and not starting with a dot (which also refuses `.` and `..`).
fn is_folder_path(name: &str) -> bool {
    name.split('/')
        .all(|part| !part.is_empty() && !part.starts_with('.'))
}

/// The sha256 of `bytes`, lowercase hex.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    digest(&SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How a folder differs from its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The file is not what was fetched.
    Changed { entry: Entry, actual: String },
    /// A listed file is not in the folder.
    Absent { entry: Entry },
    /// A listed patch is not in the folder.
    PatchAbsent { patch: Patch },
    /// A file of the folder is not listed.
    Unlisted { name: String },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Changed { entry, actual } => write!(
                f,
                "{} has sha256 {actual}, but {MANIFEST} line {} records {} (from upstream {}): \
                 vendored files are never edited; restore it, or run third_party/refresh.sh",
                entry.name, entry.line, entry.sha256, entry.upstream
            ),
            Self::Absent { entry } => write!(
                f,
                "{} is listed on {MANIFEST} line {} but missing; run third_party/refresh.sh",
                entry.name, entry.line
            ),
            Self::PatchAbsent { patch } => write!(
                f,
                "{} is listed on {MANIFEST} line {} as a patch but missing; restore it from git, \
                 or drop the line if the build no longer needs it",
                patch.name, patch.line
            ),
            Self::Unlisted { name } => write!(
                f,
                "{name} is not listed in {MANIFEST}: add a file line and run \
                 third_party/refresh.sh, or remove it"
            ),
        }
    }
}

/// Compares a folder's files (name to contents, `SOURCE` left out) with its
/// manifest; empty when they agree.
#[must_use]
pub fn compare(manifest: &Manifest, files: &BTreeMap<String, Vec<u8>>) -> Vec<Mismatch> {
    let mut mismatches: Vec<Mismatch> = manifest
        .files
        .iter()
        .filter_map(|entry| {
            let Some(bytes) = files.get(&entry.name) else {
                return Some(Mismatch::Absent {
                    entry: entry.clone(),
                });
            };
            let actual = sha256_hex(bytes);
            (actual != entry.sha256).then(|| Mismatch::Changed {
                entry: entry.clone(),
                actual,
            })
        })
        .collect();
    mismatches.extend(
        manifest
            .patches
            .iter()
            .filter(|patch| !files.contains_key(&patch.name))
            .map(|patch| Mismatch::PatchAbsent {
                patch: patch.clone(),
            }),
    );
    mismatches.extend(
        files
            .keys()
            .filter(|name| {
                !manifest.files.iter().any(|e| &e.name == *name)
                    && !manifest.patches.iter().any(|p| &p.name == *name)
            })
            .map(|name| Mismatch::Unlisted { name: name.clone() }),
    );
    mismatches
}

#[cfg(test)]
#[path = "vendored_tests.rs"]
mod tests;
