//! gpusliced: the node-level GPU sharing daemon.
//!
//! Parses arguments, loads the config, starts logging and runs the daemon.
//! Exit status: 0 after SIGTERM/SIGINT (or a `--check-config` that finds
//! nothing), 1 on a runtime failure (or a config that loads but has a
//! problem `--check-config` finds: see `gpuslice::preflight`), 2 on a bad
//! config or command line (or, in test builds, a bad crash point setting;
//! see `gpuslice::crash`).
//!
//! A failure is said once: on stderr before logging is up, as the last
//! ERROR log line after (the journal under systemd), never both.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, Parser};
use gpuslice::config::{Config, DEFAULT_PATH};
use gpuslice_cli::{Generate, VERSION};

/// Node-level GPU sharing daemon for Kubernetes DRA: whole GPUs, MIG slices,
/// MPS and time-sliced shares per claim, CDI specs for containerd, a gRPC API
/// on a unix socket.
///
/// gpusliced owns the node's NVIDIA GPUs and, for each ResourceClaim the
/// kubelet prepares through gpuslice-dra-plugin, writes a per-claim CDI spec
/// (vendor/class k8s.gpuslice.dev/claim) that containerd, CRI-O or podman
/// inject into the container. It runs as the systemd service
/// gpusliced.service, Type=notify: READY=1 is sent once claim records and CDI
/// specs are reconciled and the socket is open; the watchdog is fed while
/// the engine answers.
#[derive(Debug, Parser)]
#[command(name = "gpusliced", version = VERSION)]
struct Args {
    /// Config file (TOML). Every key is optional; the packaged
    /// /etc/gpuslice/gpuslice.toml shows each default.
    #[arg(long, short, default_value = DEFAULT_PATH, value_name = "FILE")]
    config: PathBuf,
    /// Check the config file and exit: 0 when fine; 1 naming each problem
    /// start-up would only warn about or meet later (a MIG layout that
    /// cannot be placed, a tool that does not exist); 2 when it does not load.
    #[arg(long)]
    check_config: bool,
    /// Write the man page or a shell completion to stdout (packaging).
    #[arg(long, hide = true, value_enum, value_name = "KIND")]
    generate: Option<Generate>,
}

/// The man page's own sections (gpuslice_cli::man_page).
const MAN: &str = include_str!("../../../packaging/man/gpusliced.roff");

fn main() -> ExitCode {
    // The IMEX daemon's launcher (gpuslice::compute_domains::runner::launch): a
    // fresh, single-threaded process, before anything else runs.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv
        .get(1)
        .is_some_and(|a| a == gpuslice::compute_domains::runner::launch::LAUNCH_FLAG)
    {
        let err = gpuslice::compute_domains::runner::launch::run(&argv[2..]);
        eprintln!(
            "gpusliced {}: {err}",
            gpuslice::compute_domains::runner::launch::LAUNCH_FLAG
        );
        return ExitCode::FAILURE;
    }
    let args = Args::parse();
    if let Some(kind) = args.generate {
        return generate(kind);
    }
    let config = match Config::load(&args.config) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("gpusliced: {err}");
            return ExitCode::from(2);
        }
    };
    if args.check_config {
        return check_config(&config, &args.config);
    }
    let crash_points = match gpuslice::crash::arm_from_env() {
        Ok(said) => said,
        Err(err) => {
            eprintln!("gpusliced: {err}");
            return ExitCode::from(2);
        }
    };
    let sink = match gpuslice::logging::init(&config.log.level) {
        Ok(sink) => sink,
        Err(err) => {
            eprintln!("gpusliced: {err}");
            return ExitCode::FAILURE;
        }
    };
    match run(config, args.config, crash_points, sink) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if tracing::enabled!(tracing::Level::ERROR) {
                tracing::error!("{err:#}");
            } else {
                eprintln!("gpusliced: {err:#}");
            }
            ExitCode::FAILURE
        }
    }
}

/// `--check-config`: what a loaded config would still run into.
fn check_config(config: &Config, path: &Path) -> ExitCode {
    let report = gpuslice::preflight::check(config);
    for problem in &report.problems {
        eprintln!("gpusliced: {problem}");
    }
    if !report.problems.is_empty() {
        eprintln!(
            "gpusliced: {}: {} problem(s); fix them and check again",
            path.display(),
            report.problems.len()
        );
        return ExitCode::FAILURE;
    }
    println!("{}: ok", path.display());
    for what in &report.unchecked {
        println!("not checked: {what}");
    }
    ExitCode::SUCCESS
}

fn generate(kind: Generate) -> ExitCode {
    match gpuslice_cli::generate(kind, Args::command(), MAN, &mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("gpusliced: cannot write {kind:?}: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(
    config: Config,
    path: PathBuf,
    crash_points: Option<String>,
    sink: &str,
) -> anyhow::Result<()> {
    tracing::info!(version = VERSION, logs = sink, "gpusliced starting");
    if let Some(said) = crash_points {
        tracing::warn!("crash points: {said}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(gpuslice::run::run(config, Some(path)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Args;

    #[test]
    fn the_completions_and_the_man_page_hold_every_flag() {
        let missing = gpuslice_cli::left_out(&Args::command()).unwrap();
        assert!(missing.is_empty(), "{missing:#?}");
    }

    #[test]
    fn the_help_names_no_repository_path() {
        let help = Args::command().render_long_help().to_string();
        assert!(!help.contains("packaging/"), "{help}");
        assert!(help.contains("/etc/gpuslice/gpuslice.toml"), "{help}");
    }
}
