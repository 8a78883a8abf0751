//! The repository stands alone: what a contributor gets from `git clone`,
//! with nothing beside it, has every file its Markdown links to, mentions no
//! folder beside the repository, and carries the upstream files the tests
//! compare against (`third_party/`), unchanged since they were fetched; and
//! no error type of the workspace prints its cause twice.
//!
//! The file list comes from git; outside a git checkout (or without git) the
//! tests skip, saying why, unless `GPUSLICE_REQUIRE_TOOLS=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gpuslice_repo_checks::error_messages::doubled_causes;
use gpuslice_repo_checks::lines_mentioning;
use gpuslice_repo_checks::markdown::dead_links;
use gpuslice_repo_checks::tree::{files, repo_root};
use gpuslice_repo_checks::vendored::{self, MANIFEST};

/// The repository's files, or None (after saying why) when git cannot list them.
fn repository_files(test: &str) -> Option<Vec<String>> {
    match files(&repo_root()) {
        Ok(files) => Some(files),
        Err(err) if std::env::var_os("GPUSLICE_REQUIRE_TOOLS").is_some_and(|v| v == "1") => {
            panic!("{test}: {err}")
        }
        Err(err) => {
            println!("skipping {test}: {err}");
            None
        }
    }
}

fn read(path: &str) -> Vec<u8> {
    let full = repo_root().join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("read {}: {e}", full.display()))
}

#[test]
fn every_relative_markdown_link_lands_on_a_repository_file() {
    let Some(files) = repository_files("the Markdown link check") else {
        return;
    };
    let known: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let exists = |path: &str| {
        known.contains(path)
            || known
                .range(format!("{path}/").as_str()..)
                .next()
                .is_some_and(|f| f.starts_with(&format!("{path}/")))
    };
    let markdown = files.iter().filter(|f| f.ends_with(".md"));
    let mut dead = Vec::new();
    for file in markdown {
        let bytes = read(file);
        let text = String::from_utf8_lossy(&bytes);
        dead.extend(dead_links(file, &text, exists));
    }
    let lines: Vec<String> = dead.iter().map(ToString::to_string).collect();
    assert!(
        lines.is_empty(),
        "{} dead relative link(s) in Markdown files; fix the target or the link:\n{}",
        lines.len(),
        lines.join("\n")
    );
}

#[test]
fn no_file_mentions_the_folder_beside_the_repository() {
    let Some(files) = repository_files("the outside-reference check") else {
        return;
    };
    // Spelled in two halves so that this file does not mention it.
    let needle = concat!("..", "/shared");
    let mut hits = Vec::new();
    for file in files.iter().filter(|f| *f != "Cargo.lock") {
        for line in lines_mentioning(&read(file), needle.as_bytes()) {
            hits.push(format!("{file}:{line}"));
        }
    }
    assert!(
        hits.is_empty(),
        "{} line(s) mention {needle}, which a clone of the repository does not have; \
         vendor what is needed into third_party/ (third_party/README.md) or link docs/:\n{}",
        hits.len(),
        hits.join("\n")
    );
}

#[test]
fn every_vendored_folder_matches_its_source_manifest() {
    let Some(files) = repository_files("the vendored-files check") else {
        return;
    };
    let mut folders: BTreeMap<&str, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
    for file in &files {
        let Some(rest) = file.strip_prefix("third_party/") else {
            continue;
        };
        if let Some((folder, name)) = rest.split_once('/') {
            folders
                .entry(folder)
                .or_default()
                .insert(name.to_owned(), read(file));
        }
    }
    assert!(
        folders.contains_key("cdi") && folders.contains_key("kubelet"),
        "third_party/ must hold cdi/ and kubelet/, the references the tests use; found {:?}",
        folders.keys().collect::<Vec<_>>()
    );
    let mut problems = Vec::new();
    for (folder, mut contents) in folders {
        let Some(source) = contents.remove(MANIFEST) else {
            problems.push(format!("third_party/{folder}: no {MANIFEST} manifest"));
            continue;
        };
        let text = String::from_utf8_lossy(&source);
        match vendored::parse(&text) {
            Err(err) => problems.push(format!("third_party/{folder}/{MANIFEST}: {err}")),
            Ok(manifest) => problems.extend(
                vendored::compare(&manifest, &contents)
                    .iter()
                    .map(|m| format!("third_party/{folder}/{m}")),
            ),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_refresh_script_is_executable() {
    let script = repo_root().join("third_party/refresh.sh");
    let mode = std::fs::metadata(&script)
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()))
        .permissions();
    assert!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o111 != 0,
        "{} must be executable (git update-index --chmod=+x)",
        Path::new("third_party/refresh.sh").display()
    );
}

#[test]
fn no_error_type_says_its_cause_twice() {
    let Some(files) = repository_files("the doubled-cause check") else {
        return;
    };
    let mut problems = Vec::new();
    for file in files.iter().filter(|f| f.ends_with(".rs")) {
        let bytes = read(file);
        let text = String::from_utf8_lossy(&bytes);
        match doubled_causes(file, &text) {
            Ok(found) => problems.extend(found.iter().map(ToString::to_string)),
            Err(err) => problems.push(format!("{file}: does not parse: {err}")),
        }
    }
    assert!(
        problems.is_empty(),
        "{} error message(s) print their cause twice under `{{:#}}`:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
