//! `gpuslicectl claims --cluster`: every claim's status read from the API
//! server (a kubeconfig, not gpusliced's socket), the devices whose
//! gpuslice-dra-plugin entry says idle or over its share, across all nodes.
//!
//! This module owns the flags, the client (`--kubeconfig` and `--context`,
//! else `KUBECONFIG` or ~/.kube/config, else the in-cluster service
//! account, the order of `kube::Config::infer`) and the exit status: 0
//! whether any device matches or not, 2 when the API server cannot be read
//! (the message names the kubeconfig and context tried). Listing is
//! [`list`]; reading the entries [`usage`] and printing [`render`], both pure.

mod list;
mod render;
mod usage;

#[cfg(test)]
mod fixture;

use std::path::PathBuf;
use std::process::ExitCode;

use k8s_openapi::jiff::Timestamp;
use kube::config::{KubeConfigOptions, Kubeconfig};

use self::render::Filter;

/// The flags of `claims` that only `--cluster` takes.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// Read every claim's status from the API server (kubeconfig) instead of
    /// gpusliced: the devices of all nodes, as gpuslice-dra-plugin writes
    /// them. Exit status 2 when the API server cannot be read.
    #[arg(long)]
    pub cluster: bool,
    /// With --cluster: only devices above their memory share (OverShare),
    /// with USED / SHARE and OVER FOR.
    #[arg(long, requires = "cluster")]
    pub overshare: bool,
    /// With --cluster: the kubeconfig (else KUBECONFIG, ~/.kube/config, or
    /// the in-cluster service account).
    #[arg(long, value_name = "PATH", requires = "cluster")]
    pub kubeconfig: Option<PathBuf>,
    /// With --cluster: the kubeconfig context (else its current context).
    #[arg(long, value_name = "NAME", requires = "cluster")]
    pub context: Option<String>,
    /// With --cluster: the DRA driver whose entries are read (the plugin's
    /// driver_name).
    #[arg(long, value_name = "NAME", requires = "cluster",
          default_value_t = gpuslice_plugin_config::Config::default().driver_name)]
    pub driver: String,
}

/// Why the API server could not be read; each says what was tried and
/// what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No kubeconfig and no in-cluster service account.
    #[error(
        "no kubeconfig to read ({tried}: {kubeconfig}) and not in a pod ({in_cluster}); \
         give one with --kubeconfig PATH or KUBECONFIG"
    )]
    NoConfig {
        /// The kubeconfig looked for.
        tried: String,
        /// Why it could not be read.
        kubeconfig: String,
        /// Why the in-cluster service account could not be used.
        in_cluster: String,
    },
    /// The kubeconfig cannot be read or used.
    #[error(
        "cannot use {tried}: {error}; fix the file, or pick another with --kubeconfig \
         PATH and --context NAME"
    )]
    Kubeconfig {
        /// The kubeconfig and context.
        tried: String,
        /// Why not.
        error: String,
    },
    /// The claims cannot be listed.
    #[error(
        "cannot list ResourceClaims from the API server {server} ({tried}): {error}; check \
         that the server is up and reachable from here and that this user may list \
         resourceclaims, or pick another with --kubeconfig PATH and --context NAME"
    )]
    List {
        /// The server's URL.
        server: String,
        /// The kubeconfig and context.
        tried: String,
        /// Why not.
        error: String,
    },
}

/// Runs `claims --cluster`: prints the table or JSON and returns 0, or
/// prints why the API server could not be read and returns 2.
pub fn main(
    runtime: &tokio::runtime::Runtime,
    args: ClusterArgs,
    idle: Option<u64>,
    socket_given: bool,
    json: bool,
) -> ExitCode {
    if socket_given {
        eprintln!(
            "gpuslicectl claims --cluster: --socket does not apply: --cluster reads the API \
             server (--kubeconfig, --context), not gpusliced; leave --socket out"
        );
        return ExitCode::from(2);
    }
    let filter = Filter {
        idle,
        overshare: args.overshare,
    };
    match runtime.block_on(claims(&args)) {
        Ok(claims) => {
            let reading = usage::read(&claims, &args.driver);
            print!(
                "{}",
                render::render(&reading, &args.driver, filter, Timestamp::now(), json)
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("gpuslicectl claims --cluster: {err}");
            ExitCode::from(2)
        }
    }
}

/// Every claim of the cluster.
async fn claims(
    args: &ClusterArgs,
) -> Result<Vec<k8s_openapi::api::resource::v1::ResourceClaim>, ClusterError> {
    let (config, tried) = config(args).await?;
    let server = config.cluster_url.to_string();
    let failed = |error: String| ClusterError::List {
        server: server.clone(),
        tried: tried.clone(),
        error,
    };
    let client = kube::Client::try_from(config).map_err(|e| failed(chain(&e)))?;
    list::all_claims(client)
        .await
        .map_err(|e| failed(list_error(&e)))
}

/// The client config, and the kubeconfig and context it came from, in
/// words.
async fn config(args: &ClusterArgs) -> Result<(kube::Config, String), ClusterError> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let (kubeconfig, path) = match &args.kubeconfig {
        Some(path) => (
            Kubeconfig::read_from(path),
            format!("kubeconfig {}", path.display()),
        ),
        None => (Kubeconfig::read(), format!("kubeconfig {}", default_path())),
    };
    let kubeconfig = match kubeconfig {
        Ok(kubeconfig) => kubeconfig,
        Err(err) if args.kubeconfig.is_none() && args.context.is_none() => {
            return kube::Config::incluster()
                .map(|c| (c, "the in-cluster service account".to_owned()))
                .map_err(|in_cluster| ClusterError::NoConfig {
                    tried: path,
                    kubeconfig: chain(&err),
                    in_cluster: chain(&in_cluster),
                });
        }
        Err(err) => {
            return Err(ClusterError::Kubeconfig {
                tried: path,
                error: chain(&err),
            });
        }
    };
    let context = match (&args.context, &kubeconfig.current_context) {
        (Some(name), _) => format!("context {name}"),
        (None, Some(name)) => format!("current context {name}"),
        (None, None) => "no current context".to_owned(),
    };
    let tried = format!("{path}, {context}");
    match kube::Config::from_custom_kubeconfig(kubeconfig, &options).await {
        Ok(config) => Ok((config, tried)),
        Err(err) => Err(ClusterError::Kubeconfig {
            tried,
            error: chain(&err),
        }),
    }
}

/// Where `Kubeconfig::read` looks: `KUBECONFIG`, else ~/.kube/config.
fn default_path() -> String {
    match std::env::var("KUBECONFIG") {
        Ok(value) if !value.is_empty() => value,
        _ => "~/.kube/config".to_owned(),
    }
}

/// A failed list in words: the API server's own answer as it gave it
/// (code, reason, message), else the error and its causes.
fn list_error(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) if status.reason.is_empty() => {
            format!("it answered {}: {}", status.code, status.message)
        }
        kube::Error::Api(status) => format!(
            "it answered {} {}: {}",
            status.code, status.reason, status.message
        ),
        other => chain(other),
    }
}

/// An error and its causes on one line, each said once.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(next) = cause {
        let line = next.to_string();
        if !text.contains(&line) {
            text = format!("{text}: {line}");
        }
        cause = next.source();
    }
    text
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
