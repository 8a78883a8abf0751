use std::path::{Path, PathBuf};

use super::{ApiAccess, ClaimStatusMode, Config, ConfigError, Environment};

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(
        text,
        Path::new("/etc/gpuslice/gpuslice-dra-plugin.toml"),
        Path::new("/etc/gpuslice"),
    )
}

#[test]
fn empty_file_gives_the_documented_defaults() {
    let config = parse("").expect("empty is valid");
    assert_eq!(config, Config::default());
    assert_eq!(config.driver_name, "gpu.nvidia.com");
    assert_eq!(
        config.dra_socket(),
        PathBuf::from("/var/lib/kubelet/plugins/gpu.nvidia.com/dra.sock")
    );
    assert_eq!(
        config.registration_socket(),
        PathBuf::from("/var/lib/kubelet/plugins_registry/gpu.nvidia.com-reg.sock")
    );
}

#[test]
fn the_packaged_file_parses_to_the_defaults() {
    let text = include_str!("../../packaging/gpuslice-dra-plugin.toml");
    assert_eq!(parse(text).expect("packaged config"), Config::default());
}

#[test]
fn unknown_keys_are_refused_with_their_place() {
    let err = parse("driver_name = \"gpu.nvidia.com\"\nresync = 3\n").expect_err("unknown key");
    let text = err.to_string();
    assert!(text.contains("resync") && text.contains("line 2"), "{text}");
}

#[test]
fn relative_paths_follow_the_config_folder() {
    let config =
        parse("gpusliced_socket = \"run/d.sock\"\nkubeconfig = \"kc\"\nplugins_dir = \"p\"")
            .expect("valid");
    assert_eq!(
        config.gpusliced_socket,
        PathBuf::from("/etc/gpuslice/run/d.sock")
    );
    assert_eq!(config.kubeconfig, Some(PathBuf::from("/etc/gpuslice/kc")));
    assert_eq!(
        config.dra_socket(),
        PathBuf::from("/etc/gpuslice/p/gpu.nvidia.com/dra.sock")
    );
}

#[test]
fn bad_values_are_refused_naming_the_key() {
    for (text, key) in [
        ("driver_name = \"GPU_Nvidia\"", "driver_name"),
        ("driver_name = \"\"", "driver_name"),
        ("node_name = \"Node_1\"", "node_name"),
        ("resync_seconds = 0", "resync_seconds"),
        ("health_seconds = 0", "health_seconds"),
        ("[claim_status]\nrefresh_s = 9", "[claim_status] refresh_s"),
        (
            "[claim_status]\nmax_writes_per_minute = 0",
            "[claim_status] max_writes_per_minute",
        ),
        ("[claim_status]\nrecheck_s = 59", "[claim_status] recheck_s"),
        (
            &format!("plugins_dir = \"/{}\"", "p".repeat(100)),
            "plugins_dir",
        ),
    ] {
        match parse(text) {
            Err(ConfigError::Invalid { key: got, .. }) => assert_eq!(got, key, "{text}"),
            other => panic!("{text}: expected invalid {key}, got {other:?}"),
        }
    }
}

#[test]
fn node_name_comes_from_config_then_env_then_hostname() {
    let env = Environment {
        node_name: Some("from-env".into()),
        in_cluster: false,
        hostname: Some("Host-1.Example\n".into()),
    };
    let set = parse("node_name = \"from-config\"").expect("valid");
    assert_eq!(set.resolve(&env).expect("resolve").node_name, "from-config");
    assert_eq!(
        parse("")
            .expect("valid")
            .resolve(&env)
            .expect("resolve")
            .node_name,
        "from-env"
    );
    let no_env = Environment {
        node_name: None,
        ..env.clone()
    };
    assert_eq!(
        parse("")
            .expect("valid")
            .resolve(&no_env)
            .expect("resolve")
            .node_name,
        "host-1.example"
    );
    let nothing = Environment::default();
    assert!(matches!(
        parse("").expect("valid").resolve(&nothing),
        Err(ConfigError::Invalid {
            key: "node_name",
            ..
        })
    ));
}

#[test]
fn api_access_defaults_to_in_cluster_or_the_kubelet_kubeconfig() {
    let host = Environment {
        node_name: Some("n".into()),
        ..Environment::default()
    };
    let pod = Environment {
        in_cluster: true,
        ..host.clone()
    };
    assert_eq!(
        parse("")
            .expect("valid")
            .resolve(&host)
            .expect("resolve")
            .api,
        ApiAccess::Kubeconfig(PathBuf::from("/var/lib/kubelet/kubeconfig"))
    );
    assert_eq!(
        parse("")
            .expect("valid")
            .resolve(&pod)
            .expect("resolve")
            .api,
        ApiAccess::InCluster
    );
    let explicit = parse("kubeconfig = \"/etc/kubernetes/kubelet/kubeconfig\"").expect("valid");
    assert_eq!(
        explicit.resolve(&pod).expect("resolve").api,
        ApiAccess::Kubeconfig(PathBuf::from("/etc/kubernetes/kubelet/kubeconfig"))
    );
}

#[test]
fn claim_status_defaults_bounds_and_its_own_kubeconfig() {
    let defaults = parse("").expect("valid").claim_status;
    assert_eq!(defaults.mode, ClaimStatusMode::Auto);
    assert_eq!(
        (
            defaults.kubeconfig,
            defaults.refresh_s,
            defaults.max_writes_per_minute,
            defaults.recheck_s
        ),
        (None, 300, 60, 3600)
    );
    let set = parse(
        "[claim_status]\nmode = \"off\"\nkubeconfig = \"status.kubeconfig\"\nrefresh_s = 10\n\
         max_writes_per_minute = 1\nrecheck_s = 60",
    )
    .expect("the least values are valid")
    .claim_status;
    assert_eq!(set.mode, ClaimStatusMode::Off);
    assert_eq!(
        set.kubeconfig,
        Some(PathBuf::from("/etc/gpuslice/status.kubeconfig"))
    );
    // A refusal says what is wrong and what to do.
    let text = parse("[claim_status]\nrefresh_s = 5")
        .expect_err("too often")
        .to_string();
    assert!(
        text.contains("[claim_status] refresh_s") && text.contains("below 10"),
        "{text}"
    );
    let text = parse("[claim_status]\nmax_writes_per_minute = 0")
        .expect_err("none")
        .to_string();
    assert!(text.contains("mode = \"off\""), "{text}");
    // Unknown modes and keys name themselves.
    for (bad, names) in [
        ("[claim_status]\nmode = \"on\"", "on"),
        ("[claim_status]\nrefresh = 10", "refresh"),
    ] {
        let text = parse(bad).expect_err(bad).to_string();
        assert!(text.contains(names) && text.contains("line 2"), "{text}");
    }
}

#[test]
fn compute_domains_default_auto_with_their_own_sockets() {
    use super::{COMPUTE_DOMAIN_DRIVER, ComputeDomainsMode};
    let defaults = parse("").expect("valid");
    assert_eq!(defaults.compute_domains.enabled, ComputeDomainsMode::Auto);
    assert_eq!(
        defaults.dra_socket_of(COMPUTE_DOMAIN_DRIVER),
        PathBuf::from("/var/lib/kubelet/plugins/compute-domain.nvidia.com/dra.sock")
    );
    assert_eq!(
        defaults.registration_socket_of(COMPUTE_DOMAIN_DRIVER),
        PathBuf::from("/var/lib/kubelet/plugins_registry/compute-domain.nvidia.com-reg.sock")
    );
    for (text, mode) in [
        ("on", ComputeDomainsMode::On),
        ("off", ComputeDomainsMode::Off),
        ("auto", ComputeDomainsMode::Auto),
    ] {
        let config = parse(&format!("[compute_domains]\nenabled = \"{text}\"")).expect("valid");
        assert_eq!(config.compute_domains.enabled, mode);
    }
    let bad = parse("[compute_domains]\nenabled = \"yes\"").expect_err("unknown value");
    assert!(bad.to_string().contains("yes"), "{bad}");
    let unknown = parse("[compute_domains]\nmode = \"on\"").expect_err("unknown key");
    assert!(unknown.to_string().contains("mode"), "{unknown}");
    // The second driver's socket counts against the path limit unless off.
    let long = format!("plugins_dir = \"/{}\"", "p".repeat(75));
    assert!(matches!(
        parse(&long),
        Err(ConfigError::Invalid {
            key: "plugins_dir",
            ..
        })
    ));
    parse(&format!("{long}\n[compute_domains]\nenabled = \"off\"")).expect("off: not bound");
}
