use clap::{Arg, ArgAction, Command};

use super::{COMMIT, Generate, VERSION, gaps, generate, left_out, man_page};

fn sample() -> Command {
    Command::new("tool")
        .about("A tool for tests")
        .arg(Arg::new("socket").long("socket").help("The socket"))
        .arg(
            Arg::new("secret")
                .long("secret")
                .hide(true)
                .action(ArgAction::SetTrue),
        )
        .subcommand(
            Command::new("status")
                .about("Show the status")
                .arg(Arg::new("output").long("output").help("Output format")),
        )
        .subcommand(
            Command::new("health").about("Health").subcommand(
                Command::new("clear")
                    .about("Clear a fault")
                    .arg(Arg::new("device").required(true))
                    .arg(Arg::new("force").short('f').action(ArgAction::SetTrue)),
            ),
        )
}

fn text(kind: Generate) -> String {
    let mut out = Vec::new();
    generate(
        kind,
        sample(),
        ".SH \"EXIT STATUS\"\n0 on success.\n",
        &mut out,
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_version_is_the_workspace_version_and_a_commit() {
    assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")), "{VERSION}");
    assert!(VERSION.ends_with(&format!(" ({COMMIT})")), "{VERSION}");
    let hex = COMMIT.len() >= 7 && COMMIT.chars().all(|c| c.is_ascii_hexdigit());
    assert!(hex || COMMIT == "unknown", "{COMMIT}");
}

#[test]
fn the_man_page_holds_every_command_flag_and_the_own_sections() {
    let page = text(Generate::Man);
    assert!(page.contains("\n.TH TOOL 8 \""), "{page}");
    assert_eq!(
        page.matches(".ds Aq").count(),
        2,
        "the preamble once:\n{page}"
    );
    for needed in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH OPTIONS",
        ".SH COMMANDS",
        ".SS \"tool status\"",
        ".SS \"tool health clear\"",
        "\\-\\-socket",
        "\\-\\-output",
        "Clear a fault",
        ".SH \"EXIT STATUS\"\n0 on success.\n",
    ] {
        assert!(page.contains(needed), "{needed:?} missing:\n{page}");
    }
    assert!(
        !page.contains("secret"),
        "a hidden flag is left out:\n{page}"
    );
    assert!(
        !page.contains("tool-status(8)"),
        "no page per command:\n{page}"
    );
    assert!(
        page.find(".SH COMMANDS") < page.find(".SH \"EXIT STATUS\""),
        "{page}"
    );
}

#[test]
fn each_shell_gets_a_completion_naming_the_commands() {
    for (kind, marker) in [
        (Generate::CompleteBash, "complete -F"),
        (Generate::CompleteZsh, "#compdef tool"),
        (Generate::CompleteFish, "complete -c tool"),
    ] {
        let script = text(kind);
        assert!(script.contains(marker), "{kind:?}:\n{script}");
        for word in ["status", "health", "clear", "socket"] {
            assert!(script.contains(word), "{kind:?} lacks {word}:\n{script}");
        }
    }
}

#[test]
fn left_out_is_empty_for_a_complete_definition_and_names_what_is_missing() {
    assert_eq!(left_out(&sample()).unwrap(), Vec::<String>::new());
    // The check itself: texts that lack them are caught, each named.
    let page = String::from_utf8(man_page(sample(), "").unwrap()).unwrap();
    let page = page.replace("\\-", "-");
    let without_commands = &page[..page.find(".SH COMMANDS").unwrap()];
    assert_eq!(
        gaps(&sample(), "status health", without_commands),
        [
            "--output of `status` is not in the man page",
            "`health clear` is not in the bash completion",
            "-f of `health clear` is not in the man page",
        ]
    );
    let with_hidden_command = sample().subcommand(Command::new("internal").hide(true));
    assert_eq!(
        left_out(&with_hidden_command).unwrap(),
        Vec::<String>::new()
    );
}
