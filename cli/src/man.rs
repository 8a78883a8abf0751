//! One man page per binary from its clap definition: clap_mangen's title,
//! NAME, SYNOPSIS, DESCRIPTION and OPTIONS; a COMMANDS section holding each
//! subcommand (nested ones too) with its synopsis, description and options;
//! then the binary's own roff sections. clap_mangen's own subcommand
//! section is not used: it points at one page per subcommand
//! (`gpuslicectl-status(8)`), which the packages do not carry.

use clap_mangen::Man;

/// The section every page of gpuslice is in: system administration.
const SECTION: &str = "8";

/// The page of `cmd`, with `sections` (roff, each starting with `.SH`)
/// after its options and commands.
pub fn man_page(cmd: clap::Command, sections: &str) -> std::io::Result<Vec<u8>> {
    let name = cmd.get_name().to_owned();
    let mut cmd = cmd.bin_name(&name).disable_help_subcommand(true);
    cmd.build();
    let man = Man::new(cmd.clone());
    let mut out = format!(
        ".TH {} {SECTION} \"{}\" \"gpuslice {}\" \"System Administration\"\n",
        name.to_uppercase().replace('-', "\\-"),
        crate::DATE,
        crate::VERSION
    )
    .into_bytes();
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    let mut commands = Vec::new();
    for sub in visible_subcommands(&cmd) {
        render_command(sub, &mut commands)?;
    }
    if !commands.is_empty() {
        out.extend_from_slice(b".SH COMMANDS\n");
        out.extend_from_slice(&commands);
    }
    out.extend_from_slice(sections.as_bytes());
    if !sections.ends_with('\n') {
        out.push(b'\n');
    }
    Ok(without_repeated_preamble(&out))
}

/// Each clap_mangen part starts with the same two lines defining the `Aq`
/// string; the page keeps their first occurrence, at its top.
fn without_repeated_preamble(page: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(page);
    let preamble =
        |line: &str| line.starts_with(".ie \\n(.g .ds Aq") || line.starts_with(".el .ds Aq");
    let kept: Vec<&str> = text.lines().filter(|l| !preamble(l)).collect();
    let first: Vec<&str> = text.lines().filter(|l| preamble(l)).take(2).collect();
    let mut out = String::new();
    for line in first.iter().chain(&kept) {
        out.push_str(line);
        out.push('\n');
    }
    out.into_bytes()
}

fn visible_subcommands(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands().filter(|s| !s.is_hide_set())
}

/// `.SS <bin name>`, then its synopsis, description and options without
/// their `.SH` headings; then its own subcommands the same way.
fn render_command(cmd: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    let full = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    out.extend_from_slice(format!(".SS \"{}\"\n", full.replace('-', "\\-")).as_bytes());
    let man = Man::new(cmd.clone()).section(SECTION);
    let mut part = Vec::new();
    man.render_synopsis_section(&mut part)?;
    man.render_description_section(&mut part)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut part)?;
    }
    for line in String::from_utf8_lossy(&part).lines() {
        if line.starts_with(".SH ") {
            out.extend_from_slice(b".PP\n");
        } else {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
    }
    for sub in visible_subcommands(cmd) {
        render_command(sub, out)?;
    }
    Ok(())
}
