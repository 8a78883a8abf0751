//! gpuslice-dra-plugin's command line as a user and the package build meet
//! it: `--version` names the binary and the commit it was built from, and
//! the hidden `--generate` writes its man page and shell completions.

use std::process::Command;

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuslice-dra-plugin"))
        .args(args)
        .output()
        .expect("run gpuslice-dra-plugin");
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn the_version_names_the_binary_and_its_commit() {
    let out = run(&["--version"]);
    let rest = out
        .strip_prefix("gpuslice-dra-plugin ")
        .unwrap_or_else(|| panic!("{out:?}"));
    let (version, commit) = rest.trim_end().split_once(' ').expect("version (commit)");
    assert_eq!(version, env!("CARGO_PKG_VERSION"), "{out:?}");
    let commit = commit
        .strip_prefix('(')
        .and_then(|c| c.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{out:?}"));
    let hex = commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit());
    assert!(hex || commit == "unknown", "{out:?}");
}

#[test]
fn it_writes_its_man_page_and_completions() {
    let page = run(&["--generate", "man"]);
    for needed in [
        ".TH GPUSLICE\\-DRA\\-PLUGIN 8 ",
        ".SH OPTIONS",
        "\\-\\-check\\-config",
        ".SH FILES",
        "/etc/gpuslice/gpuslice-dra-plugin.toml",
    ] {
        assert!(page.contains(needed), "{needed}:\n{page}");
    }
    assert!(run(&["--generate", "complete-bash"]).contains("--check-config"));
    assert!(run(&["--generate", "complete-zsh"]).starts_with("#compdef gpuslice-dra-plugin"));
    assert!(run(&["--generate", "complete-fish"]).contains("complete -c gpuslice-dra-plugin"));
}
