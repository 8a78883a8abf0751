//! One encoding of how a device is used: in the daemon's sources, the only
//! fieldless enum whose variants name kinds of access is `AccessKind`
//! (`daemon/src/state/access_kind.rs`). Adding a kind of access adds its
//! variant there, and every label, table column and API word follows from
//! it. The lowercase word "timeslicing" is written only there and in the
//! claim record's on-disk form. (The DRA plugin's claim-status entries keep
//! the published schema's own enum: a format, in a crate that does not link
//! the daemon; a test's scenario list is not an encoding.)

use gpuslice_repo_checks::access_words::kind_enums;
use gpuslice_repo_checks::lines_mentioning;
use gpuslice_repo_checks::tree::{files, repo_root};

const THE_ONE: (&str, &str) = ("daemon/src/state/access_kind.rs", "AccessKind");

/// Where the word may be written: the enum's text, and the record's on-disk
/// field name (a format, not an encoding of the kind).
/// Enums that name kinds of access without saying how a device is used,
/// and why.
const NOT_AN_ENCODING: &[(&str, &str, &str)] = &[(
    "daemon/src/features.rs",
    "Feature",
    "what a GPU can do (its MPS client limits and time-slice settings have no kind)",
)];

const WORD_ALLOWED: &[&str] = &[
    "daemon/src/state/access_kind.rs",
    "daemon/src/state/record/",
];

fn rust_sources() -> Vec<(String, String)> {
    let root = repo_root();
    files(&root)
        .expect("git ls-files")
        .into_iter()
        .filter(|path| path.starts_with("daemon/src/") && path.ends_with(".rs"))
        .filter(|path| !path.contains("test"))
        .filter_map(|path| {
            let text = std::fs::read_to_string(root.join(&path)).ok()?;
            Some((path, text))
        })
        .collect()
}

#[test]
fn access_kind_is_the_one_enum_of_the_kinds_of_access() {
    let mut found = Vec::new();
    for (path, text) in rust_sources() {
        let enums = kind_enums(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        for e in enums {
            if NOT_AN_ENCODING
                .iter()
                .any(|&(p, name, _)| (p, name) == (path.as_str(), e.name.as_str()))
            {
                continue;
            }
            found.push(format!(
                "{path}:{}: enum {} ({})",
                e.line,
                e.name,
                e.kinds.join(", ")
            ));
            if (path.as_str(), e.name.as_str()) == THE_ONE {
                found.pop();
                found.insert(0, format!("{path}: enum {}", e.name));
            }
        }
    }
    assert!(
        found
            .first()
            .is_some_and(|f| f.ends_with("enum AccessKind")),
        "AccessKind not found in {}: {found:?}",
        THE_ONE.0
    );
    assert_eq!(
        found.len(),
        1,
        "a second encoding of how a device is used; use gpuslice::state::AccessKind \
         instead:\n{}",
        found[1..].join("\n")
    );
}

#[test]
fn the_word_timeslicing_is_written_in_one_place() {
    let mut problems = Vec::new();
    for (path, text) in rust_sources() {
        if WORD_ALLOWED.iter().any(|allowed| path.starts_with(allowed)) {
            continue;
        }
        for line in lines_mentioning(text.as_bytes(), b"\"timeslicing\"") {
            problems.push(format!("{path}:{line}"));
        }
    }
    assert!(
        problems.is_empty(),
        "\"timeslicing\" spelt out; take it from AccessKind::TimeSlicing:\n{}",
        problems.join("\n")
    );
}
