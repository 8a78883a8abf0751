//! gpusliced: the node-level GPU sharing daemon.
//!
//! Parses arguments, loads the config, starts logging and runs the daemon.
//! Exit status: 0 after SIGTERM/SIGINT, 1 on a runtime failure, 2 on a bad
//! config or command line (or, in test builds, a bad crash point setting;
//! see `gpuslice::crash`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use gpuslice::config::{Config, DEFAULT_PATH};

/// Node-level GPU sharing daemon for Kubernetes DRA: whole GPUs, MIG slices,
/// MPS and time-sliced shares per claim, CDI specs for containerd, a gRPC API
/// on a unix socket.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Config file (TOML). Every key is optional; see packaging/gpuslice.toml.
    #[arg(long, short, default_value = DEFAULT_PATH)]
    config: PathBuf,
    /// Validate the config file and exit.
    #[arg(long)]
    check_config: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match Config::load(&args.config) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("gpusliced: {err}");
            return ExitCode::from(2);
        }
    };
    if args.check_config {
        println!("{}: ok", args.config.display());
        return ExitCode::SUCCESS;
    }
    let crash_points = match gpuslice::crash::arm_from_env() {
        Ok(said) => said,
        Err(err) => {
            eprintln!("gpusliced: {err}");
            return ExitCode::from(2);
        }
    };
    match run(config, args.config, crash_points) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            eprintln!("gpusliced: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(config: Config, path: PathBuf, crash_points: Option<String>) -> anyhow::Result<()> {
    let sink = gpuslice::logging::init(&config.log.level)?;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        logs = sink,
        "gpusliced starting"
    );
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
