//! `--socket` and `--output`: on each command that uses them, and, as before,
//! before the command (`gpuslicectl --socket S status`), for the command that
//! follows. The socket also comes from `GPUSLICE_SOCKET`, else the packaged
//! path. Where a value is given more than once, the one nearest the end of
//! the command line wins; a flag given before the command while that
//! command does not take it (`--output` before `sim exec`) is refused.

use std::path::PathBuf;

use clap::ArgMatches;
use clap::parser::ValueSource;

/// The socket a packaged gpusliced serves on.
pub const DEFAULT_SOCKET: &str = "/run/gpuslice/gpusliced.sock";

/// `--socket`, for a command that talks to gpusliced.
#[derive(Debug, Clone, clap::Args)]
pub struct Conn {
    /// gpusliced's API socket (the config's `socket`).
    #[arg(long, value_name = "PATH", env = "GPUSLICE_SOCKET", default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
}

/// `--output`, for a command that prints a table or a JSON document.
#[derive(Debug, Clone, clap::Args)]
pub struct Out {
    /// Output format: aligned tables, or one JSON document for scripts
    /// (`advise` also prints ResourceClaimTemplates: yaml).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

/// What `--output` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Aligned tables.
    Table,
    /// One JSON document.
    Json,
    /// ResourceClaimTemplates (`advise` only).
    Yaml,
}

/// The `--socket` and `--output` given on the command line, wherever given;
/// the command's own values (`GPUSLICE_SOCKET` or the default, `table`)
/// apply where these are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    /// The socket given last.
    pub socket: Option<PathBuf>,
    /// The format given last.
    pub output: Option<Output>,
}

/// What the command line gave, from its parsed matches; an error names a
/// flag given before a command that does not take it.
pub fn given(matches: &ArgMatches) -> Result<Given, String> {
    let levels = chain(matches);
    let Some((leaf_name, leaf)) = levels.last() else {
        return Err("no command".to_owned());
    };
    let output = nearest(&levels, "output");
    if output.is_some() && !defines(leaf, "output") {
        return Err(format!(
            "--output does not apply to `{leaf_name}`; leave it out"
        ));
    }
    Ok(Given {
        socket: nearest(&levels, "socket").and_then(|m| m.get_one::<PathBuf>("socket").cloned()),
        output: output.and_then(|m| m.get_one::<Output>("output").copied()),
    })
}

/// The matches from the binary down to the command run, with the words
/// that name it ("" for the binary itself).
fn chain(matches: &ArgMatches) -> Vec<(String, &ArgMatches)> {
    let mut levels = vec![(String::new(), matches)];
    let mut name = String::new();
    let mut at = matches;
    while let Some((sub, next)) = at.subcommand() {
        name = format!("{name} {sub}").trim_start().to_owned();
        levels.push((name.clone(), next));
        at = next;
    }
    levels
}

/// The deepest level where `id` was given on the command line.
fn nearest<'a>(levels: &[(String, &'a ArgMatches)], id: &str) -> Option<&'a ArgMatches> {
    levels
        .iter()
        .rev()
        .map(|(_, m)| *m)
        .find(|m| defines(m, id) && m.value_source(id) == Some(ValueSource::CommandLine))
}

/// Whether the command of `matches` has the argument `id`.
fn defines(matches: &ArgMatches, id: &str) -> bool {
    matches.ids().any(|i| i.as_str() == id)
}

#[cfg(test)]
#[path = "flags_tests.rs"]
mod tests;
