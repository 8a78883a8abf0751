use std::path::{Path, PathBuf};

use super::{BackendKind, Config, ConfigError};
use crate::gpu::sim::SimModel;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(
        text,
        Path::new("/etc/gpuslice/gpuslice.toml"),
        Path::new("/etc/gpuslice"),
    )
}

/// Each `(text, path)`: `path_of` the config `text` parses to is `path`.
fn resolves(path_of: fn(&Config) -> PathBuf, cases: &[(&str, &str)]) {
    for (text, path) in cases {
        assert_eq!(path_of(&parse(text).unwrap()), Path::new(path), "{text}");
    }
}

/// `bad` is refused, its error containing every one of `needles`.
fn refused_with(bad: &str, needles: &[&str]) {
    let err = parse(bad).unwrap_err().to_string();
    for needle in needles {
        assert!(err.contains(needle), "{bad}: {err}");
    }
}

/// Each `(text, needle)`: the text is refused, its error containing the
/// needle.
fn refused(cases: &[(&str, &str)]) {
    for (bad, needle) in cases {
        refused_with(bad, &[needle]);
    }
}

/// The packaged config's commented-out block that starts at line `header`
/// (e.g. "#[advice]"), uncommented, its comment lines left out.
fn packaged_block(header: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/gpuslice.toml");
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip_while(|l| *l != header)
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.starts_with("# "))
        .map(|l| format!("{}\n", l.trim_start_matches('#')))
        .collect()
}

#[test]
fn empty_file_gives_documented_defaults() {
    let config = parse("").unwrap();
    assert_eq!(config, Config::default());
    assert_eq!(config.socket, PathBuf::from("/run/gpuslice/gpusliced.sock"));
    assert_eq!(config.state_dir, PathBuf::from("/var/lib/gpuslice"));
    assert_eq!(config.cdi_dir, PathBuf::from("/var/run/cdi"));
    assert_eq!(config.driver_root, PathBuf::from("/"));
    assert_eq!(config.dev_root(), Path::new("/"));
    assert_eq!(config.backend.kind, BackendKind::Nvml);
    assert_eq!(config.log.level, "info");
}

#[test]
fn acceptance_keys_parse() {
    let config = parse(
        r#"
socket = "/tmp/g.sock"
state_dir = "/tmp/state"
cdi_dir = "/tmp/cdi"
driver_root = "/tmp/driver"
[backend]
kind = "sim"
[backend.sim]
gpus = ["H100-80GB", "A100-40GB"]
"#,
    )
    .unwrap();
    assert_eq!(config.socket, PathBuf::from("/tmp/g.sock"));
    assert_eq!(config.backend.kind, BackendKind::Sim);
    assert_eq!(
        config.backend.sim.gpus,
        Some(vec![SimModel::H100_80GB, SimModel::A100_40GB])
    );
}

#[test]
fn topology_keys_parse_and_resolve() {
    let config =
        parse("[backend.nvml]\nsysfs_root = \"host/sys\"\n[backend.sim]\nnuma_nodes = 0\n")
            .unwrap();
    assert_eq!(
        config.backend.nvml.sysfs_root,
        Some(PathBuf::from("/etc/gpuslice/host/sys"))
    );
    assert_eq!(config.backend.sim.numa_nodes(), 0);
    assert_eq!(parse("").unwrap().backend.sim.numa_nodes(), 2);
    assert_eq!(parse("").unwrap().backend.nvml.sysfs_root, None);
}

#[test]
fn more_numa_nodes_than_linux_allows_are_refused() {
    assert_eq!(
        parse("[backend.sim]\nnuma_nodes = 1024\n")
            .unwrap()
            .backend
            .sim
            .numa_nodes(),
        1024
    );
    refused_with(
        "[backend.sim]\nnuma_nodes = 1025\n",
        &["backend.sim.numa_nodes", "1024"],
    );
    let err = parse("[backend.sim]\nnuma_nodes = -1\n").unwrap_err();
    assert!(matches!(err, ConfigError::Parse { .. }), "{err}");
}

#[test]
fn relative_paths_resolve_against_the_config_folder() {
    let config = parse("state_dir = \"../run/./state\"\ndev_root = \"fake\"").unwrap();
    assert_eq!(config.state_dir, PathBuf::from("/etc/run/state"));
    assert_eq!(config.dev_root(), Path::new("/etc/gpuslice/fake"));
}

#[test]
fn sim_hardware_state_defaults_next_to_the_socket() {
    resolves(
        Config::sim_hardware_state,
        &[
            ("", "/run/gpuslice/sim-hardware.json"),
            (
                "socket = \"run/g.sock\"\n",
                "/etc/gpuslice/run/sim-hardware.json",
            ),
            (
                "[backend.sim]\nhardware_state = \"../hw/./sim.json\"\n",
                "/etc/hw/sim.json",
            ),
        ],
    );
}

#[test]
fn sim_health_events_default_next_to_the_hardware_state() {
    resolves(
        Config::sim_health_events,
        &[
            ("", "/run/gpuslice/sim-health-events"),
            (
                "[backend.sim]\nhardware_state = \"../hw/sim.json\"\n",
                "/etc/hw/sim-health-events",
            ),
            (
                "[backend.sim]\nhealth_events = \"events.txt\"\n",
                "/etc/gpuslice/events.txt",
            ),
        ],
    );
}

#[test]
fn sim_processes_default_next_to_the_hardware_state() {
    resolves(
        Config::sim_processes,
        &[
            ("", "/run/gpuslice/sim-processes"),
            (
                "[backend.sim]\nhardware_state = \"../hw/sim.json\"\n",
                "/etc/hw/sim-processes",
            ),
            (
                "[backend.sim]\nprocesses = \"../fake/./procs\"\n",
                "/etc/fake/procs",
            ),
        ],
    );
}

#[test]
fn health_ignore_xids_parse_and_default_to_none() {
    assert!(parse("").unwrap().health.ignore_xids.is_empty());
    let config = parse("[health]\nignore_xids = [94, 63]\n").unwrap();
    assert_eq!(config.health.ignore_xids, vec![94, 63]);
    refused(&[
        ("[health]\nignore_xids = [-1]\n", "line 2"),
        ("[health]\nignore_xid = [1]\n", "ignore_xid"),
    ]);
}

#[test]
fn unknown_key_is_refused_with_line_and_column() {
    refused_with(
        "socket = \"/tmp/a.sock\"\nstate_dri = \"/x\"\n",
        &["line 2", "column 1", "state_dri"],
    );
}

#[test]
fn unknown_key_in_a_table_is_refused() {
    refused_with("[backend.sim]\ngpu = [\"H100-80GB\"]\n", &["line 2", "gpu"]);
}

#[test]
fn unknown_gpu_model_names_the_known_ones() {
    refused_with(
        "[backend.sim]\ngpus = [\"H100-80GB\", \"H100\"]\n",
        &["line 2", "H100-NVL-94GB"],
    );
}

#[test]
fn unknown_backend_kind_is_refused() {
    refused_with("[backend]\nkind = \"auto\"\n", &["auto", "sim"]);
}

#[test]
fn wrong_type_is_refused() {
    refused(&[("socket = 3\n", "line 1")]);
}

#[test]
fn sim_without_gpus_is_refused() {
    let err = parse("[backend]\nkind = \"sim\"\n[backend.sim]\ngpus = []\n").unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::Invalid {
                key: "backend.sim.gpus",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn overlong_socket_path_is_refused() {
    let long = format!("socket = \"/{}\"\n", "s".repeat(120));
    let err = parse(&long).unwrap_err();
    assert!(
        matches!(err, ConfigError::Invalid { key: "socket", .. }),
        "{err}"
    );
}

#[test]
fn bad_group_name_is_refused() {
    let err = parse("socket_group = \"a b\"\n").unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::Invalid {
                key: "socket_group",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn missing_file_names_the_path() {
    let err = Config::load(Path::new("/nonexistent/gpuslice.toml")).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/gpuslice.toml"),
        "{err}"
    );
}

#[test]
fn example_config_in_the_repo_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gpuslice-sim.toml");
    let config = Config::load(&path).unwrap();
    assert_eq!(config.backend.kind, BackendKind::Sim);
}

#[test]
fn packaged_default_config_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/gpuslice.toml");
    let config = Config::load(&path).unwrap();
    assert_eq!(config.backend.kind, BackendKind::Nvml);
}

#[test]
fn mps_and_timeslice_sections_parse_with_driver_root_defaults() {
    let defaults = parse("driver_root = \"/host\"").unwrap();
    assert_eq!(
        defaults.mps_control_program(),
        PathBuf::from("/host/usr/bin/nvidia-cuda-mps-control")
    );
    assert_eq!(
        defaults.nvidia_smi(),
        PathBuf::from("/host/usr/bin/nvidia-smi")
    );
    assert_eq!(defaults.mps.supervisor, super::SupervisorKind::Auto);
    assert_eq!(defaults.mps.shm_size, "50%");
    assert_eq!(defaults.mps.shm, super::ShmKind::Auto);
    let config = parse(
        "[mps]\ncontrol_program = \"bin/mps\"\nrun_dir = \"run\"\nsupervisor = \"child\"\n\
         shm = \"folder\"\nshm_size = \"8g\"\nready_timeout_s = 5\n\
         [timeslice]\nnvidia_smi = \"/opt/smi\"\n",
    )
    .unwrap();
    assert_eq!(
        config.mps_control_program(),
        PathBuf::from("/etc/gpuslice/bin/mps")
    );
    assert_eq!(config.mps.run_dir, PathBuf::from("/etc/gpuslice/run"));
    assert_eq!(config.mps.supervisor, super::SupervisorKind::Child);
    assert_eq!(config.mps.shm, super::ShmKind::Folder);
    assert_eq!(config.nvidia_smi(), PathBuf::from("/opt/smi"));
    refused(&[
        ("[mps]\nshm_size = \"8g,uid=0\"", "mps.shm_size"),
        ("[mps]\nready_timeout_s = 0", "mps.ready_timeout_s"),
        ("[mps]\nsupervisor = \"cron\"", "unknown variant"),
        ("[mps]\nshm = \"ramdisk\"", "unknown variant"),
        ("[timeslice]\nbogus = 1", "unknown field `bogus`"),
    ]);
}

#[test]
fn metrics_are_off_by_default_and_loopback_only() {
    let defaults = parse("").unwrap();
    assert_eq!(defaults.metrics.listen, None);
    assert_eq!(defaults.metrics.textfile, None);
    assert_eq!(defaults.metrics.textfile_interval_seconds, 15);
    let config = parse(
        "[metrics]\nlisten = \"127.0.0.1:9464\"\ntextfile = \"prom/gpuslice.prom\"\n\
         textfile_interval_seconds = 60\n",
    )
    .unwrap();
    let addr = config.metrics.listen.unwrap().addr();
    assert_eq!(addr.to_string(), "127.0.0.1:9464");
    assert_eq!(
        config.metrics.textfile,
        Some(PathBuf::from("/etc/gpuslice/prom/gpuslice.prom"))
    );
    assert_eq!(defaults.metrics.pool_name, None);
    assert_eq!(defaults.metrics.driver_name, "gpu.nvidia.com");
    let dra =
        parse("[metrics]\npool_name = \"node-7\"\ndriver_name = \"shared.example.com\"").unwrap();
    assert_eq!(dra.metrics.pool_name.as_deref(), Some("node-7"));
    assert_eq!(dra.metrics.driver_name, "shared.example.com");
    let v6 = parse("[metrics]\nlisten = \"[::1]:0\"").unwrap();
    assert_eq!(v6.metrics.listen.unwrap().addr().to_string(), "[::1]:0");
    for (bad, needle) in [
        (
            "[metrics]\nlisten = \"0.0.0.0:9464\"",
            "not a loopback address",
        ),
        (
            "[metrics]\nlisten = \"10.0.0.5:9464\"",
            "not a loopback address",
        ),
        (
            "[metrics]\nlisten = \"localhost:9464\"",
            "not an IP address and port",
        ),
        (
            "[metrics]\nlisten = \"127.0.0.1\"",
            "not an IP address and port",
        ),
        (
            "[metrics]\ntextfile = \"/var/lib/node/gpuslice.txt\"",
            "ending in .prom",
        ),
        (
            "[metrics]\ntextfile = \"/var/lib/node/.prom\"",
            "ending in .prom",
        ),
        (
            "[metrics]\ntextfile_interval_seconds = 0",
            "metrics.textfile_interval_seconds",
        ),
        ("[metrics]\nport = 9464", "unknown field `port`"),
        ("[metrics]\npool_name = \"\"", "metrics.pool_name"),
        (
            "[metrics]\ndriver_name = \"gpu nvidia\"",
            "metrics.driver_name",
        ),
    ] {
        let err = parse(bad).unwrap_err().to_string();
        assert!(err.contains(needle), "{bad}: {err}");
        if bad.contains("listen") || bad.contains("textfile =") {
            assert!(err.contains("metrics."), "names the key: {err}");
        }
    }
}

#[test]
fn activity_samples_every_5_s_by_default_and_0_turns_it_off() {
    let defaults = parse("").unwrap();
    assert_eq!(defaults.activity.interval_s, 5);
    assert_eq!(defaults.activity.max_claim_series, 1024);
    assert!(defaults.activity.enabled());
    let off = parse("[activity]\ninterval_s = 0\nmax_claim_series = 0").unwrap();
    assert!(!off.activity.enabled());
    assert_eq!(off.activity.max_claim_series, 0);
    refused(&[
        ("[activity]\ninterval_s = 3601", "activity.interval_s"),
        ("[activity]\ninterval_s = -1", "interval_s"),
        ("[activity]\nevery = 5", "unknown field `every`"),
    ]);
}

#[test]
fn activity_summaries_call_a_claim_idle_after_half_an_hour_over_a_5_minute_window() {
    let defaults = parse("").unwrap();
    assert_eq!(defaults.activity.idle_after_s, 1800);
    assert_eq!(defaults.activity.summary_window_s(), 300);
    let hourly = parse("[activity]\ninterval_s = 3600").unwrap();
    assert_eq!(
        hourly.activity.summary_window_s(),
        3600,
        "unset: one interval where that is longer"
    );
    let set = parse("[activity]\nidle_after_s = 0\nsummary_window_s = 5").unwrap();
    assert_eq!(set.activity.idle_after_s, 0);
    assert_eq!(set.activity.summary_window_s(), 5);
    let edges = parse("[activity]\ninterval_s = 1\nidle_after_s = 604800\nsummary_window_s = 3600")
        .unwrap();
    assert_eq!(edges.activity.idle_after_s, 604_800);
    assert_eq!(edges.activity.summary_window_s(), 3600);
    let off = parse("[activity]\ninterval_s = 0\nsummary_window_s = 0").unwrap();
    assert!(
        !off.activity.enabled(),
        "no window checked with sampling off"
    );
    refused(&[
        (
            "[activity]\nidle_after_s = 604801",
            "activity.idle_after_s: 604801 is more than 604800 (a week)",
        ),
        ("[activity]\nidle_after_s = -1", "idle_after_s"),
        (
            "[activity]\nsummary_window_s = 4",
            "activity.summary_window_s: 4 is shorter than interval_s (5)",
        ),
        (
            "[activity]\ninterval_s = 1\nsummary_window_s = 3601",
            "activity.summary_window_s: 3601 spans more than 3600 samples of interval_s = 1; use at most 3600",
        ),
        ("[activity]\nidle_after = 5", "unknown field `idle_after`"),
    ]);
}

#[test]
fn advice_defaults_and_ranges() {
    let defaults = parse("").unwrap();
    assert_eq!(defaults.advice.min_observed_s, 86_400);
    assert_eq!(defaults.advice.headroom_percent, 15);
    assert_eq!(defaults.advice.half_life_s, 86_400);
    assert_eq!(defaults.advice.max_claims, 2048);
    let set = parse(
        "[advice]\nmin_observed_s = 10\nheadroom_percent = 0\nhalf_life_s = 3600\nmax_claims = 1",
    )
    .unwrap();
    assert_eq!(set.advice.min_observed_s, 10);
    assert_eq!(set.advice.headroom_percent, 0);
    assert_eq!(set.advice.half_life_s, 3600);
    assert_eq!(set.advice.max_claims, 1);
    assert_eq!(
        parse("[advice]\nheadroom_percent = 100")
            .unwrap()
            .advice
            .headroom_percent,
        100
    );
    refused(&[
        (
            "[advice]\nheadroom_percent = 101",
            "advice.headroom_percent: 101 is more than 100",
        ),
        (
            "[advice]\nhalf_life_s = 3599",
            "advice.half_life_s: 3599 is less than 3600",
        ),
        (
            "[advice]\nmax_claims = 0",
            "advice.max_claims: 0 is outside 1..=65536",
        ),
        ("[advice]\nmax_claims = 65537", "use e.g. 2048"),
        ("[advice]\nmin_observed_s = -1", "min_observed_s"),
        ("[advice]\nheadroom = 5", "unknown field `headroom`"),
    ]);
}

#[test]
fn the_packaged_advice_block_uncommented_gives_the_defaults() {
    let block = packaged_block("#[advice]");
    assert!(block.contains("max_claims = 2048"), "{block}");
    assert_eq!(
        parse(&block).unwrap().advice,
        super::AdviceConfig::default()
    );
}

#[test]
fn limits_default_to_warn_and_parse_every_mode() {
    use super::{ClaimOverride, LimitMode, LimitsConfig};
    let defaults = parse("").unwrap().limits;
    assert_eq!(defaults, LimitsConfig::default());
    assert_eq!(defaults.overshare, LimitMode::Warn);
    assert_eq!(defaults.unclaimed, LimitMode::Warn);
    assert_eq!(defaults.grace_s, 60);
    assert_eq!(defaults.term_grace_s, 10);
    assert_eq!(defaults.claim_override, ClaimOverride::Off);
    assert!(defaults.unclaimed_exempt.is_empty());
    assert!(!defaults.acts());
    let set = parse(
        "[limits]\novershare = \"end\"\nunclaimed = \"dry-run\"\ngrace_s = 0\n\
         term_grace_s = 600\nclaim_override = \"stricter\"\n\
         unclaimed_exempt = [\"nv-hostengine\", \"dcgm\"]",
    )
    .unwrap()
    .limits;
    assert_eq!(set.overshare, LimitMode::End);
    assert_eq!(set.unclaimed, LimitMode::DryRun);
    assert_eq!((set.grace_s, set.term_grace_s), (0, 600));
    assert_eq!(set.claim_override, ClaimOverride::Stricter);
    assert_eq!(set.unclaimed_exempt, ["nv-hostengine", "dcgm"]);
    assert!(set.acts());
    let claims_may = LimitsConfig {
        claim_override: ClaimOverride::Stricter,
        ..LimitsConfig::default()
    };
    assert!(
        claims_may.acts(),
        "a claim may ask for more than the node's warn"
    );
    assert_eq!(
        parse("[limits]\ngrace_s = 86400\nclaim_override = \"any\"")
            .unwrap()
            .limits
            .claim_override,
        ClaimOverride::Any
    );
}

#[test]
fn bad_limits_are_refused_with_what_to_use() {
    refused(&[
        (
            "[limits]\novershare = \"kill\"",
            "unknown variant `kill`, expected one of `warn`, `dry-run`, `end`",
        ),
        (
            "[limits]\nunclaimed = \"dry_run\"",
            "unknown variant `dry_run`, expected one of `warn`, `dry-run`, `end`",
        ),
        (
            "[limits]\nclaim_override = \"yes\"",
            "unknown variant `yes`, expected one of `off`, `stricter`, `any`",
        ),
        (
            "[limits]\ngrace_s = 86401",
            "limits.grace_s: 86401 is more than 86400 (a day); use e.g. 60",
        ),
        ("[limits]\ngrace_s = -1", "grace_s"),
        (
            "[limits]\nterm_grace_s = 601",
            "limits.term_grace_s: 601 is more than 600 (ten minutes); use e.g. 10, or 0",
        ),
        (
            "[limits]\nunclaimed_exempt = [\"\"]",
            "limits.unclaimed_exempt: \"\" cannot be a process name",
        ),
        (
            "[limits]\nunclaimed_exempt = [\"a-very-long-process-name\"]",
            "the kernel's comm is 1 to 15 bytes",
        ),
        (
            "[limits]\nunclaimed_exempt = [\"/usr/bin/dcgm\"]",
            "without '/' or newlines",
        ),
        (
            "[limits]\nunclaimed_exempt = \"dcgm\"",
            "expected a sequence",
        ),
        ("[limits]\ngrace = 5", "unknown field `grace`"),
        (
            "[activity]\ninterval_s = 0\n[limits]\novershare = \"dry-run\"",
            "config key limits: overshare or unclaimed other than \"warn\", or claim_override \
             other than \"off\", needs the activity sampler: set [activity] interval_s above 0",
        ),
        (
            "[activity]\ninterval_s = 0\n[limits]\nclaim_override = \"any\"",
            "needs the activity sampler",
        ),
    ]);
}

#[test]
fn the_packaged_limits_block_uncommented_gives_the_defaults() {
    let block = packaged_block("#[limits]");
    assert!(block.contains("overshare = \"warn\""), "{block}");
    assert_eq!(
        parse(&block).unwrap().limits,
        super::LimitsConfig::default()
    );
}

/// `[backend.sim] instance` gives the instance's GPUs; it excludes `gpus`
/// and `numa_nodes`, an unknown one lists the known; `[backend.sim.fabric]`
/// only on a multi-node NVLink instance, with a canonical non-zero UUID.
#[test]
fn a_sim_instance_brings_its_gpus_and_excludes_a_model_list() {
    let sim = |body: &str| parse(&format!("[backend]\nkind = \"sim\"\n[backend.sim]\n{body}"));
    let config = sim("instance = \"g6.12xlarge\"\n").unwrap();
    assert_eq!(config.backend.sim.models(), vec![SimModel::L4_24GB; 4]);
    assert_eq!(config.backend.sim.shape().map(|s| s.numa_nodes), Some(1));
    assert_eq!(sim("").unwrap().backend.sim.models(), [SimModel::H100_80GB]);
    let refused = |body: &str, words: &[&str]| {
        let text = sim(body).unwrap_err().to_string();
        for word in words {
            assert!(text.contains(word), "{body}: {text}");
        }
    };
    refused(
        "instance = \"p3dn.24xlarge\"\n",
        &[
            "backend.sim.instance",
            "unknown instance type \"p3dn.24xlarge\"",
            "p6-b200.48xlarge",
        ],
    );
    refused(
        "instance = \"g6.xlarge\"\ngpus = [\"L4-24GB\"]\n",
        &["backend.sim.gpus", "give gpus or instance, not both"],
    );
    refused(
        "instance = \"g6.xlarge\"\nnuma_nodes = 2\n",
        &[
            "backend.sim.numa_nodes",
            "g6.xlarge has 1 NUMA nodes of its own",
        ],
    );
    refused(
        "instance = \"p6-b200.48xlarge\"\n[backend.sim.fabric]\nclique_id = 2\n",
        &[
            "backend.sim.fabric",
            "p6-b200.48xlarge has no multi-node NVLink fabric",
            "p6e-gb200.36xlarge",
        ],
    );
    refused(
        "gpus = [\"GB200-186GB\"]\n[backend.sim.fabric]\n",
        &["backend.sim.fabric", "a gpus list has no NVLink fabric"],
    );
    refused(
        "instance = \"p6e-gb200.36xlarge\"\n[backend.sim.fabric]\ncluster_uuid = \"00000000-0000-0000-0000-000000000000\"\n",
        &["backend.sim.fabric.cluster_uuid", "non-zero UUID"],
    );
    refused(
        "instance = \"p6e-gb200.36xlarge\"\n[backend.sim.fabric]\nstate = \"done\"\n",
        &["state", "completed"],
    );
    let gb200 = sim(
        "instance = \"p6e-gb200.36xlarge\"\n[backend.sim.fabric]\n\
         cluster_uuid = \"9d2e0c4a-61f3-4b8e-a5d7-3c1f0e2b4a69\"\nclique_id = 7\nstate = \"in-progress\"\n",
    )
    .unwrap();
    let fabric = gb200.backend.sim.fabric();
    assert_eq!(
        (fabric.cluster_uuid.as_str(), fabric.clique_id, fabric.state),
        (
            "9d2e0c4a-61f3-4b8e-a5d7-3c1f0e2b4a69",
            7,
            crate::gpu::FabricState::InProgress
        )
    );
}
