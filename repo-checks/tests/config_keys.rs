//! Every key the packaged configs show (set, or commented out with its
//! default) has its row in docs/configuration.md, so an operator who reads
//! a key in /etc/gpuslice finds what it means. gpusliced's keys
//! (packaging/gpuslice.toml) are rows of the table under their section's
//! heading (`### \`[imex]\``: `| \`rack_network\` |`), or rows naming the
//! section (`| \`[backend.sim] gpus\` |`) under the section they belong to;
//! the plugin's (packaging/gpuslice-dra-plugin.toml) are rows of its one
//! table, a section's key written `[section] key`.

use std::collections::BTreeSet;

use gpuslice_repo_checks::tree::repo_root;

/// The (section, key) pairs a packaged config shows: `key = value` lines,
/// commented out or not, under `[section]` lines, commented out or not.
fn shown_keys(text: &str) -> BTreeSet<(String, String)> {
    let mut section = String::new();
    let mut keys = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim_start_matches('#').trim();
        if let Some(name) = line.strip_prefix("[[").and_then(|l| l.strip_suffix("]]")) {
            section = format!("[{name}]");
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            continue;
        }
        let Some((key, _)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        let is_key = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if is_key {
            keys.insert((section.clone(), key.to_owned()));
        }
    }
    keys
}

/// The part of the reference between the heading starting with `from` and
/// the next heading of the same depth or above.
fn part<'a>(doc: &'a str, from: &str) -> &'a str {
    let start = doc
        .find(from)
        .unwrap_or_else(|| panic!("no heading {from:?}"));
    let depth = from.chars().take_while(|c| *c == '#').count();
    let rest = &doc[start + from.len()..];
    let end = rest
        .lines()
        .scan(0, |at, line| {
            let here = *at;
            *at += line.len() + 1;
            Some((here, line))
        })
        .find(|(_, line)| {
            let level = line.chars().take_while(|c| *c == '#').count();
            (1..=depth).contains(&level) && line.chars().nth(level) == Some(' ')
        })
        .map_or(rest.len(), |(at, _)| at);
    &rest[..end]
}

fn has_row(text: &str, name: &str) -> bool {
    text.contains(&format!("| `{name}` |"))
}

#[test]
fn every_key_of_the_packaged_configs_is_in_the_configuration_reference() {
    let root = repo_root();
    let doc = std::fs::read_to_string(root.join("docs/configuration.md")).expect("reference");
    let daemon_doc = part(&doc, "## gpusliced:");
    let plugin_doc = part(&doc, "## gpuslice-dra-plugin:");
    let read = |file: &str| std::fs::read_to_string(root.join(file)).expect(file);
    let mut missing = Vec::new();
    for (section, key) in shown_keys(&read("packaging/gpuslice.toml")) {
        let found = if section.is_empty() {
            has_row(part(daemon_doc, "### Top level"), &key)
        } else {
            let top = section
                .trim_start_matches('[')
                .split('.')
                .next()
                .unwrap_or_default();
            let top = top.trim_end_matches(']');
            let under = part(daemon_doc, &format!("### `[{top}]`"));
            has_row(under, &format!("[{section}] {key}"))
                || (section == top && has_row(under, &key))
        };
        if !found {
            missing.push(format!("gpuslice.toml [{section}] {key}"));
        }
    }
    for (section, key) in shown_keys(&read("packaging/gpuslice-dra-plugin.toml")) {
        let name = if section.is_empty() {
            key.clone()
        } else {
            format!("[{section}] {key}")
        };
        if !has_row(plugin_doc, &name) {
            missing.push(format!("gpuslice-dra-plugin.toml {name}"));
        }
    }
    assert!(
        missing.is_empty(),
        "keys the packaged configs show but docs/configuration.md has no row for: {missing:#?}"
    );
}

#[test]
fn shown_keys_are_read_commented_or_not() {
    let keys = shown_keys(
        "socket = \"a\"\n#[imex]\n# Prose = not a key.\n#rack_network = [\"10.0.0.0/8\"]\n\
         [log]\nlevel = \"info\"\n#[[mig.gpu]]\n#index = 0\n",
    );
    let want: BTreeSet<(String, String)> = [
        ("", "socket"),
        ("imex", "rack_network"),
        ("log", "level"),
        ("[mig.gpu]", "index"),
    ]
    .into_iter()
    .map(|(s, k)| (s.to_owned(), k.to_owned()))
    .collect();
    assert_eq!(keys, want);
}
