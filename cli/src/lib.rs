//! What gpusliced, gpuslicectl and gpuslice-dra-plugin share at their
//! command line:
//!
//! * [`VERSION`]: `0.1.0 (abc1234)`, the workspace version and the git commit
//!   the build read (`build.rs`; `unknown` from a tarball without
//!   `GPUSLICE_GIT_COMMIT`). Each binary names itself before it
//!   (`#[command(name = "gpuslicectl", version = VERSION)]`).
//! * [`Generate`] and [`generate`]: the hidden `--generate KIND` of each
//!   binary, which writes its man page or a shell completion made from its
//!   clap definition (ripgrep's `rg --generate`). The package build runs it
//!   on the amd64 binaries (packaging/build.sh); the arm64 packages get the
//!   same files, the definitions being the same.
//!
//! The man page is one page per binary, section 8: NAME, SYNOPSIS,
//! DESCRIPTION and OPTIONS from clap_mangen, a COMMANDS section with each
//! subcommand's synopsis, description and options (every flag on the one
//! page `man gpuslicectl` opens), then the binary's own sections (EXIT
//! STATUS, FILES, ...), written in roff in `packaging/man/<binary>.roff`.
//! Writes only to the writer it is given.

mod man;

use std::io::Write;

pub use man::man_page;

/// What the generated files leave out of `cmd`: each visible subcommand
/// (nested ones by their last word) the bash completion does not mention,
/// and each visible flag (`--long`, or `-s` without a long form) the man
/// page does not name. Empty when both are complete; each binary's tests
/// call it on its own definition.
pub fn left_out(cmd: &clap::Command) -> std::io::Result<Vec<String>> {
    let mut bash = Vec::new();
    generate(Generate::CompleteBash, cmd.clone(), "", &mut bash)?;
    let man = man_page(cmd.clone(), "")?;
    Ok(gaps(
        cmd,
        &String::from_utf8_lossy(&bash),
        &String::from_utf8_lossy(&man).replace("\\-", "-"),
    ))
}

/// [`left_out`] on texts already made (the man page with `\-` read as `-`).
fn gaps(cmd: &clap::Command, bash: &str, man: &str) -> Vec<String> {
    let mut missing = Vec::new();
    let mut cmd = cmd.clone();
    cmd.build();
    every_command(&cmd, &mut |c, path| {
        if !path.is_empty() && !bash.contains(c.get_name()) {
            missing.push(format!("`{path}` is not in the bash completion"));
        }
        for arg in c.get_arguments().filter(|a| !a.is_hide_set()) {
            let flag = match (arg.get_long(), arg.get_short()) {
                (Some(long), _) => format!("--{long}"),
                (None, Some(short)) => format!("-{short}"),
                (None, None) => continue,
            };
            if !man.contains(&flag) {
                missing.push(format!("{flag} of `{path}` is not in the man page"));
            }
        }
    });
    missing
}

/// Calls `visit` on `cmd` and every visible subcommand under it but clap's
/// `help`, with the words after the binary's name ("" for the binary
/// itself).
fn every_command(cmd: &clap::Command, visit: &mut dyn FnMut(&clap::Command, &str)) {
    fn walk(c: &clap::Command, path: &str, visit: &mut dyn FnMut(&clap::Command, &str)) {
        visit(c, path);
        // clap's own `help` subcommands are its business.
        let subs = c
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help");
        for sub in subs {
            let path = format!("{path} {}", sub.get_name());
            walk(sub, path.trim_start(), visit);
        }
    }
    walk(cmd, "", visit);
}

/// The version every binary reports after its name: the workspace version
/// and the commit, e.g. `0.1.0 (1a8ab5c)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("GPUSLICE_GIT_COMMIT"),
    ")"
);

/// The git commit the binaries were built from (7 hex digits), or `unknown`.
pub const COMMIT: &str = env!("GPUSLICE_GIT_COMMIT");

/// The date of that commit (YYYY-MM-DD), for the man pages; empty when
/// unknown.
pub const DATE: &str = env!("GPUSLICE_GIT_DATE");

/// What `--generate` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Generate {
    /// The man page (roff, section 8).
    Man,
    /// The bash completion (for /usr/share/bash-completion/completions/NAME).
    CompleteBash,
    /// The zsh completion (for a `_NAME` file in a zsh fpath folder).
    CompleteZsh,
    /// The fish completion (for /usr/share/fish/vendor_completions.d/NAME.fish).
    CompleteFish,
}

/// Writes `kind` for the command `cmd` (its name is the binary's) to `out`;
/// `sections` are the man page's own sections, in roff.
pub fn generate(
    kind: Generate,
    cmd: clap::Command,
    sections: &str,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let name = cmd.get_name().to_owned();
    let mut cmd = cmd;
    let shell = match kind {
        Generate::Man => return out.write_all(&man_page(cmd, sections)?),
        Generate::CompleteBash => clap_complete::Shell::Bash,
        Generate::CompleteZsh => clap_complete::Shell::Zsh,
        Generate::CompleteFish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, name, out);
    Ok(())
}

#[cfg(test)]
mod tests;
