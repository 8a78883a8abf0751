use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches};

use super::{ClusterArgs, chain, config};
use crate::{Args, Command};

/// `claims` parsed from `words` after `gpuslicectl`, or clap's refusal.
fn claims(words: &[&str]) -> Result<(Option<u64>, ClusterArgs), String> {
    let argv = std::iter::once("gpuslicectl").chain(words.iter().copied());
    let matches = Args::command()
        .try_get_matches_from(argv)
        .map_err(|e| e.to_string())?;
    let args = Args::from_arg_matches(&matches).map_err(|e| e.to_string())?;
    match args.command {
        Some(Command::Claims { idle, cluster, .. }) => Ok((idle, cluster)),
        other => Err(format!("not claims: {other:?}")),
    }
}

fn args(kubeconfig: Option<PathBuf>, context: Option<&str>) -> ClusterArgs {
    ClusterArgs {
        cluster: true,
        overshare: false,
        kubeconfig,
        context: context.map(str::to_owned),
        driver: "gpu.nvidia.com".to_owned(),
    }
}

fn config_error(args: &ClusterArgs) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    match runtime.block_on(config(args)) {
        Ok((_, tried)) => panic!("config loaded from {tried}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn cluster_takes_its_flags_and_the_plugins_default_driver() {
    let (idle, cluster) = claims(&[
        "claims",
        "--cluster",
        "--idle",
        "2h",
        "--overshare",
        "--kubeconfig",
        "/k",
        "--context",
        "prod",
        "--output",
        "json",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(idle, Some(7200));
    assert!(cluster.cluster && cluster.overshare);
    assert_eq!(cluster.kubeconfig, Some(PathBuf::from("/k")));
    assert_eq!(cluster.context.as_deref(), Some("prod"));
    assert_eq!(cluster.driver, "gpu.nvidia.com");
    let (_, other) = claims(&["claims", "--cluster", "--driver", "gpu.example.com"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(other.driver, "gpu.example.com");
    let (_, plain) = claims(&["claims"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(!plain.cluster);
}

#[test]
fn the_cluster_flags_are_refused_without_cluster() {
    for words in [
        &["claims", "--overshare"][..],
        &["claims", "--kubeconfig", "/k"],
        &["claims", "--context", "prod"],
        &["claims", "--driver", "gpu.example.com"],
    ] {
        let err = claims(words)
            .err()
            .unwrap_or_else(|| panic!("{words:?} accepted"));
        assert!(err.contains("--cluster"), "{words:?}: {err}");
    }
}

#[test]
fn a_missing_kubeconfig_is_named_with_what_to_fix() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("absent");
    let err = config_error(&args(Some(path.clone()), None));
    assert!(
        err.starts_with(&format!("cannot use kubeconfig {}: ", path.display())),
        "{err}"
    );
    assert!(
        err.ends_with("pick another with --kubeconfig PATH and --context NAME"),
        "{err}"
    );
}

#[test]
fn an_unknown_context_is_named() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("kubeconfig");
    let text = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
                http://127.0.0.1:1\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: test\n  \
                context:\n    cluster: c\n    user: u\ncurrent-context: test\n";
    gpuslice_cdi::atomic::write_atomic(dir.path(), "kubeconfig", text.as_bytes(), 0o600)
        .unwrap_or_else(|e| panic!("{e}"));
    let err = config_error(&args(Some(path.clone()), Some("prod")));
    assert!(
        err.starts_with(&format!(
            "cannot use kubeconfig {}, context prod: ",
            path.display()
        )),
        "{err}"
    );
    assert!(err.contains("prod"), "{err}");
}

/// An error whose message may already include its cause's.
#[derive(Debug)]
struct Layer(&'static str, Option<Box<Layer>>);

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Layer {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.1
            .as_deref()
            .map(|l| l as &(dyn std::error::Error + 'static))
    }
}

#[test]
fn an_error_chain_says_each_cause_once() {
    let refused = || Some(Box::new(Layer("connection refused", None)));
    let plain = Layer(
        "client error",
        Some(Box::new(Layer("tcp connect error", refused()))),
    );
    assert_eq!(
        chain(&plain),
        "client error: tcp connect error: connection refused"
    );
    let said = Layer(
        "client error (connect)",
        Some(Box::new(Layer("connect", refused()))),
    );
    assert_eq!(chain(&said), "client error (connect): connection refused");
}
