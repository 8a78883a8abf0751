//! The in-process fake against the transcript NVIDIA's daemon and the
//! stand-in answer (`tests/tools/fake-mps-control.transcript`): every
//! command a root client sends, and its answer. What the fake has no part
//! in (processes, files, other users' clients) is the end-to-end replay's.

use super::{DaemonModel, Reply, strtod};

const TRANSCRIPT: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/tools/fake-mps-control.transcript"
));

/// One client run of the transcript: the command and what it printed
/// (`Err`: the client found no daemon).
struct Step<'a> {
    line: usize,
    command: &'a str,
    answer: Result<String, String>,
}

#[test]
fn the_in_process_fake_answers_the_transcript() {
    let lines: Vec<&str> = TRANSCRIPT.lines().collect();
    let mut daemon: Option<DaemonModel> = None;
    let mut checked = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first().copied() {
            Some("daemon" | "again") => {
                let percentage = words[1..]
                    .iter()
                    .find_map(|w| w.strip_prefix("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="));
                daemon = Some(DaemonModel::new(percentage));
            }
            Some("kill") => daemon = None,
            _ => {}
        }
        let Some(command) = command_of(line) else {
            continue;
        };
        let mut printed = Vec::new();
        let mut refused = None;
        while let Some(next) = lines.get(i) {
            if let Some(text) = next.strip_prefix("< ") {
                printed.push(text);
            } else if let Some(text) = next.strip_prefix("! ") {
                refused = Some(text.to_owned());
            } else {
                break;
            }
            i += 1;
        }
        if line.starts_with("nobody>") {
            continue;
        }
        let step = Step {
            line: i,
            command,
            answer: refused.map_or_else(|| Ok(printed.join("\n")), Err),
        };
        let got = match daemon.as_mut().map(|d| d.reply(step.command)) {
            Some(Reply::Answer(answer)) => Ok(answer),
            Some(Reply::Quit) => {
                daemon = None;
                Ok(String::new())
            }
            None => Err("Cannot find MPS control daemon process".to_owned()),
        };
        assert_eq!(
            got, step.answer,
            "transcript line {}: {:?}",
            step.line, step.command
        );
        checked += 1;
    }
    assert!(checked > 80, "only {checked} commands in the transcript");
}

/// The command of a `> COMMAND` or `nobody> COMMAND` line.
fn command_of(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("nobody>")
        .or_else(|| line.strip_prefix('>'))?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

#[test]
fn numbers_are_read_as_c_reads_them() {
    for (text, want) in [
        ("50", 50.0),
        (" 50abc", 50.0),
        ("1e1", 10.0),
        ("1e", 1.0),
        ("0x10", 16.0),
        (".5", 0.5),
        ("-5", -5.0),
        ("abc", 0.0),
        ("", 0.0),
    ] {
        assert!((strtod(text) - want).abs() < 1e-9, "{text:?}");
    }
    assert!(strtod("inf").is_infinite() && strtod("nan").is_nan());
    let mut daemon = DaemonModel::new(Some("0"));
    assert_eq!(
        daemon.reply("get_default_active_thread_percentage"),
        Reply::Answer("100.0".to_owned())
    );
    daemon.reply("set_default_device_pinned_mem_limit 4294967296 3G");
    assert_eq!(
        daemon.reply("get_default_device_pinned_mem_limit 0"),
        Reply::Answer("3G".to_owned()),
        "an ordinal wider than an int wraps, as the daemon's does"
    );
    daemon.reply("set_default_device_pinned_mem_limit 6 -1G");
    assert_eq!(
        daemon.reply("get_default_device_pinned_mem_limit 6"),
        Reply::Answer("17179869183G".to_owned())
    );
}
