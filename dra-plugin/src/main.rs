//! gpuslice-dra-plugin: parses the command line, loads the config, sets up
//! logging and runs [`gpuslice_dra_plugin::run::run`]. Exit status 0 after
//! SIGTERM/SIGINT, 1 on any failure (including a refused registration), 2 on
//! a bad config.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, Parser};
use gpuslice_cli::{Generate, VERSION};
use gpuslice_dra_plugin::config::{self, Config, Environment};
use tracing_subscriber::EnvFilter;

/// The kubelet's DRA plugin for gpuslice: forwards to gpusliced.
///
/// gpuslice-dra-plugin registers with the kubelet as a Dynamic Resource
/// Allocation driver, publishes the node's ResourceSlices from gpusliced's
/// inventory (republished as soon as the inventory changes or the slices are
/// deleted or edited, and compared in full every resync_seconds), and
/// forwards the kubelet's NodePrepareResources and NodeUnprepareResources
/// calls to gpusliced, whose restarts it survives. It runs as the systemd
/// service gpuslice-dra-plugin.service.
#[derive(Debug, Parser)]
#[command(name = "gpuslice-dra-plugin", version = VERSION)]
struct Args {
    /// The config file.
    #[arg(long, default_value = config::DEFAULT_PATH, value_name = "FILE")]
    config: PathBuf,
    /// Validate the config (and the node name) and exit.
    #[arg(long)]
    check_config: bool,
    /// Write the man page or a shell completion to stdout (packaging).
    #[arg(long, hide = true, value_enum, value_name = "KIND")]
    generate: Option<Generate>,
}

/// The man page's own sections (gpuslice_cli::man_page).
const MAN: &str = include_str!("../../packaging/man/gpuslice-dra-plugin.roff");

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(kind) = args.generate {
        return match gpuslice_cli::generate(kind, Args::command(), MAN, &mut std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("gpuslice-dra-plugin: cannot write {kind:?}: {err}");
                ExitCode::FAILURE
            }
        };
    }
    let resolved = match load(&args) {
        Ok(resolved) => resolved,
        Err(err) => {
            eprintln!("gpuslice-dra-plugin: {err:#}");
            return ExitCode::from(2);
        }
    };
    if args.check_config {
        println!(
            "config {} is valid (driver {}, node {})",
            args.config.display(),
            resolved.config.driver_name,
            resolved.node_name
        );
        return ExitCode::SUCCESS;
    }
    let filter =
        std::env::var("GPUSLICE_LOG").unwrap_or_else(|_| resolved.config.log.level.clone());
    // Colours only on a terminal: under systemd stderr is the journal.
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match serve(resolved) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            ExitCode::FAILURE
        }
    }
}

fn load(args: &Args) -> anyhow::Result<config::Resolved> {
    let config = Config::load(&args.config)?;
    let env = Environment {
        node_name: std::env::var("NODE_NAME").ok(),
        in_cluster: std::env::var_os("KUBERNETES_SERVICE_HOST").is_some(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname").ok(),
    };
    Ok(config.resolve(&env)?)
}

fn serve(resolved: config::Resolved) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(gpuslice_dra_plugin::run::run(resolved))?;
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
}
