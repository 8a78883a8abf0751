use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches};

use super::{Given, Output, given};
use crate::Args;

/// The flags given, or the refusal, for `words` after `gpuslicectl`.
fn parse(words: &[&str]) -> Result<Given, String> {
    let argv = std::iter::once("gpuslicectl").chain(words.iter().copied());
    let matches = Args::command()
        .try_get_matches_from(argv)
        .map_err(|e| e.to_string())?;
    Args::from_arg_matches(&matches).map_err(|e| e.to_string())?;
    given(&matches)
}

fn socket(path: &str) -> Option<PathBuf> {
    Some(PathBuf::from(path))
}

#[test]
fn the_flags_go_before_or_after_the_command_and_the_last_one_wins() {
    let none = Given::default();
    assert_eq!(parse(&["status"]), Ok(none));
    let before = parse(&["--socket", "/a", "--output", "json", "status"]).unwrap();
    assert_eq!(
        (before.socket, before.output),
        (socket("/a"), Some(Output::Json))
    );
    let after = parse(&["status", "--socket", "/b", "--output", "json"]).unwrap();
    assert_eq!(
        (after.socket, after.output),
        (socket("/b"), Some(Output::Json))
    );
    let both = parse(&["--socket", "/a", "status", "--socket", "/b"]).unwrap();
    assert_eq!(both.socket, socket("/b"));
    let nested = parse(&[
        "--socket", "/a", "health", "--socket", "/b", "clear", "gpu-0",
    ]);
    assert_eq!(nested.unwrap().socket, socket("/b"));
    let leaf = parse(&["health", "clear", "gpu-0", "--output", "json"]).unwrap();
    assert_eq!(leaf.output, Some(Output::Json));
}

#[test]
fn output_is_refused_where_the_command_prints_no_table() {
    let said = parse(&[
        "--output", "json", "sim", "exec", "--claim", "c", "--", "true",
    ]);
    assert_eq!(
        said,
        Err("--output does not apply to `sim exec`; leave it out".to_owned())
    );
    let after = parse(&[
        "sim", "exec", "--output", "json", "--claim", "c", "--", "true",
    ]);
    assert!(
        after
            .unwrap_err()
            .contains("unexpected argument '--output'")
    );
    let socket_ok = parse(&[
        "--socket", "/a", "sim", "exec", "--claim", "c", "--", "true",
    ]);
    assert_eq!(socket_ok.unwrap().socket, socket("/a"));
}

#[test]
fn each_command_shows_only_the_flags_it_uses() {
    let mut cmd = Args::command();
    cmd.build();
    let sim = cmd.find_subcommand("sim").unwrap();
    let exec = sim.find_subcommand("exec").unwrap();
    let ids: Vec<&str> = exec.get_arguments().map(|a| a.get_id().as_str()).collect();
    assert!(
        ids.contains(&"socket") && !ids.contains(&"output"),
        "{ids:?}"
    );
    let sim_ids: Vec<&str> = sim.get_arguments().map(|a| a.get_id().as_str()).collect();
    assert!(
        !sim_ids.contains(&"socket"),
        "`sim` itself dials nothing: {sim_ids:?}"
    );
    for name in [
        "status",
        "inventory",
        "claims",
        "top",
        "advise",
        "mig",
        "sharing",
        "domains",
        "health",
        "prepare",
        "unprepare",
        "match",
    ] {
        let sub = cmd.find_subcommand(name).unwrap();
        let ids: Vec<&str> = sub.get_arguments().map(|a| a.get_id().as_str()).collect();
        assert!(
            ids.contains(&"socket") && ids.contains(&"output"),
            "{name}: {ids:?}"
        );
    }
}

#[test]
fn the_commands_are_listed_in_the_order_an_operator_looks() {
    let names: Vec<String> = Args::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "status",
            "inventory",
            "gpus",
            "claims",
            "top",
            "advise",
            "mig",
            "sharing",
            "domains",
            "health",
            "prepare",
            "unprepare",
            "match",
            "sim"
        ]
    );
}

#[test]
fn every_socket_flag_reads_the_variable_then_the_packaged_path() {
    let mut cmd = Args::command();
    cmd.build();
    let mut seen = 0;
    let mut check = |c: &clap::Command| {
        for arg in c.get_arguments().filter(|a| a.get_id() == "socket") {
            seen += 1;
            assert_eq!(
                arg.get_env().and_then(|e| e.to_str()),
                Some("GPUSLICE_SOCKET")
            );
            assert_eq!(
                arg.get_default_values().first().and_then(|v| v.to_str()),
                Some("/run/gpuslice/gpusliced.sock")
            );
        }
    };
    check(&cmd);
    for sub in cmd.get_subcommands() {
        check(sub);
        sub.get_subcommands().for_each(&mut check);
    }
    assert_eq!(
        seen, 17,
        "the binary, 13 commands, health clear, domains members and sim exec"
    );
}

#[test]
fn the_completions_and_the_man_page_hold_every_command_and_flag() {
    let missing = gpuslice_cli::left_out(&Args::command()).unwrap();
    assert!(missing.is_empty(), "{missing:#?}");
}
