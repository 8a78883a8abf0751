//! MPS and time-slicing end to end: the real gpusliced with the stand-in
//! control program and nvidia-smi, driven over its socket and through
//! gpuslicectl. Every spec is checked by the CDI schema and the Go library.

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Code;

use crate::cdi_schema::assert_all_valid;
use crate::common::claims::Claims;
use crate::common::ctl::run_ctl;
use crate::common::devices::slice_of_profile;
use crate::common::queries::Queries;
use crate::stand_ins::{
    BOUND, SharedDaemon, daemon_of, gpu_config, memory, mps, shared_request, spec_env, timeslicing,
};

const A: &str = "a1a1a1a1-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
const B: &str = "b2b2b2b2-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
const C: &str = "c3c3c3c3-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
const T: &str = "d4d4d4d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d";

/// gpuslicectl's stdout, which must succeed.
fn ctl(node: &SharedDaemon, args: &[&str]) -> String {
    run_ctl(&node.socket, args).ok()
}

/// gpuslicectl's stderr, which must fail.
fn ctl_refused(node: &SharedDaemon, args: &[&str]) -> String {
    run_ctl(&node.socket, args).refused()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn sim_mps_claims_share_a_daemon_and_time_slices_agree_per_gpu() {
    let test = "sim_mps_claims_share_a_daemon_and_time_slices_agree_per_gpu";
    let Some(node) = SharedDaemon::start(test, 3, "") else {
        return;
    };
    let mut client = node.client().await;
    for (uid, gpu) in [(A, "gpu-0"), (B, "gpu-0"), (C, "gpu-1")] {
        client
            .prepare(shared_request(uid, &[gpu], &[mps(50)]))
            .await
            .unwrap_or_else(|e| panic!("prepare {uid}: {e}\n{}", node.log()));
    }
    let starts: Vec<String> = node
        .mps_lines()
        .into_iter()
        .filter(|l| l.starts_with("start "))
        .collect();
    assert_eq!(starts.len(), 2, "one daemon per GPU set: {starts:?}");
    let (a, b, c) = (
        spec_env(&node.cdi_dir, A),
        spec_env(&node.cdi_dir, B),
        spec_env(&node.cdi_dir, C),
    );
    assert_eq!(a, b);
    assert_ne!(a, c);
    let view = node.sharing().await;
    let daemon = daemon_of(&view, "gpu-0").expect("gpu-0's daemon");
    assert_eq!(a, [format!("CUDA_MPS_PIPE_DIRECTORY={}", daemon.pipe_dir)]);
    assert_eq!(
        (daemon.state.as_str(), daemon.supervisor.as_str()),
        ("running", "child")
    );
    assert_eq!(daemon.claims, [A, B]);
    assert_eq!(daemon.active_thread_percentage, 50);
    assert_eq!(view.gpus[0].compute_mode, "EXCLUSIVE_PROCESS");

    // Time-slicing on gpu-2: a second claim must agree; MPS cannot join.
    client
        .prepare(shared_request(T, &["gpu-2"], &[timeslicing("Long")]))
        .await
        .unwrap();
    let err = client
        .prepare(shared_request(
            "e5e5e5e5-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
            &["gpu-2"],
            &[timeslicing("Short")],
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(err.message().contains(T), "{}", err.message());
    // T again, asking for MPS now: the refusal names both and what to do.
    let again = ctl_refused(
        &node,
        &[
            "prepare",
            "--uid",
            T,
            "--device",
            "gpu-2",
            "--config",
            &mps(50),
        ],
    );
    assert!(
        again.contains(&format!(
            "claim {T} is already prepared with gpu-2 time-sliced (interval Long), and this \
             prepare asks for gpu-2 shared by MPS (active threads 50%); a prepared claim cannot \
             change: unprepare it first, or use a new claim uid"
        )),
        "{again}"
    );
    let err = client
        .prepare(shared_request(
            "e5e5e5e5-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
            &["gpu-2"],
            &[mps(50)],
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(
        err.message().contains("MPS and time-slicing"),
        "{}",
        err.message()
    );
    let err = client
        .prepare(shared_request(
            "e5e5e5e5-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
            &["gpu-0"],
            &[],
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(err.message().contains(A), "{}", err.message());
    assert_all_valid(&node.cdi_dir);

    // What an operator sees.
    let table = ctl(&node, &["sharing"]);
    assert!(table.starts_with("DEVICE"), "{table}");
    assert!(table.contains(&daemon.pid.to_string()), "{table}");
    assert!(table.contains("Long (applied)"), "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&ctl(&node, &["--output", "json", "sharing"])).unwrap();
    assert_eq!(json["gpus"][0]["mode"], "mps");
    assert_eq!(json["gpus"][2]["mode"], "timeslicing");
    assert_eq!(json["gpus"][0]["mps_daemons"][0]["pid"], daemon.pid);
    let claims = ctl(&node, &["claims"]);
    assert!(
        claims.contains("timeslicing Long") && claims.contains("mps"),
        "{claims}"
    );

    for uid in [A, B, C, T] {
        client.unprepare_claim(uid).await;
    }
    let record = node.mps_lines();
    assert_eq!(
        record.iter().filter(|l| *l == "quit").count(),
        2,
        "{record:?}"
    );
    let smi = node.smi_lines();
    let gpu2 = &node.sharing().await.gpus[2];
    assert_eq!(
        smi,
        [
            format!("compute-policy -i {} --set-timeslice=3", gpu2.uuid),
            format!("compute-policy -i {} --set-timeslice=0", gpu2.uuid),
        ]
    );
    let view = node.sharing().await;
    assert!(
        view.gpus
            .iter()
            .all(|g| g.mode == "none" && g.compute_mode == "DEFAULT")
    );
    assert!(crate::harness::list(&node.path().join("run/mps")).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn sim_every_bad_sharing_config_names_its_field() {
    let test = "sim_every_bad_sharing_config_names_its_field";
    let mig = "[mig]\n[[mig.gpu]]\nindex = 1\nlayout = [\"3g.40gb\"]\n";
    let Some(node) = SharedDaemon::start(test, 2, mig) else {
        return;
    };
    let mut client = node.client().await;
    let slice = slice_of_profile(&client.inventory().await, "3g.40gb");
    let mig_config = |sharing: &str| {
        format!(
            r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{sharing}}}"#
        )
    };
    let mps_with =
        |inner: &str| gpu_config(&format!(r#"{{"strategy":"MPS","mpsConfig":{{{inner}}}}}"#));
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "gpu-0",
            mps_with(r#""bogus":1"#),
            "configs[0].sharing.mpsConfig",
        ),
        (
            "gpu-0",
            gpu_config(r#"{"strategy":"MPS","timeSlicingConfig":{"interval":"Long"}}"#),
            "configs[0].sharing.timeSlicingConfig is set but the strategy is \"MPS\"",
        ),
        (
            "gpu-0",
            mps_with(r#""defaultActiveThreadPercentage":0"#),
            "configs[0].sharing.mpsConfig.defaultActiveThreadPercentage: 0 is outside 1..100",
        ),
        (
            "gpu-0",
            mps_with(r#""defaultActiveThreadPercentage":101"#),
            "configs[0].sharing.mpsConfig.defaultActiveThreadPercentage: 101 is outside 1..100",
        ),
        (
            "gpu-0",
            mps_with(r#""defaultPinnedDeviceMemoryLimit":"512Ki""#),
            "configs[0].sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: \"512Ki\" is less than 1Mi",
        ),
        (
            "gpu-0",
            mps_with(r#""defaultPinnedDeviceMemoryLimit":"100Gi""#),
            "configs[0].sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: 107374182400 bytes is more than device",
        ),
        (
            "gpu-0",
            memory("100Gi"),
            "configs[0].memory: 107374182400 bytes is more than device",
        ),
        (
            "gpu-0",
            gpu_config(r#"{"strategy":"Spatial"}"#),
            "configs[0].sharing.strategy: \"Spatial\"",
        ),
        (
            &slice,
            mig_config(r#"{"strategy":"TimeSlicing"}"#),
            "configs[0].sharing.strategy: TimeSlicing cannot be set on a MigDeviceConfig",
        ),
        (
            &slice,
            mps(50),
            "configs[0].kind: kind GpuConfig cannot apply to device",
        ),
        (&slice, memory("1Gi"), "configs[0].memory: device"),
    ];
    for (device, config, want) in cases {
        let err = client
            .prepare(shared_request(A, &[device], std::slice::from_ref(&config)))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{config}: {err}");
        assert!(
            err.message().contains(want),
            "{config}:\n  got  {}\n  want {want}",
            err.message()
        );
    }
    let mut unsourced = shared_request(A, &["gpu-0"], &[mps(50)]);
    unsourced.configs[0].source = pb::ConfigSource::Unspecified.into();
    let err = client.prepare(unsourced).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message().contains("configs[0].source"),
        "{}",
        err.message()
    );
    assert!(node.cdi_files().is_empty() && node.record_files().is_empty());
    assert!(
        node.mps_lines().is_empty(),
        "no daemon for a refused config"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_memory_shares_pack_a_gpu_until_it_is_full() {
    let test = "sim_memory_shares_pack_a_gpu_until_it_is_full";
    let Some(node) = SharedDaemon::start(test, 1, "") else {
        return;
    };
    let mut client = node.client().await;
    let free = |inv: &pb::GetInventoryResponse| inv.devices[0].memory_available;
    let inv = client.inventory().await;
    let total = inv.devices[0].capacity["memory"];
    assert_eq!(free(&inv), total);
    client
        .prepare(shared_request(A, &["gpu-0"], &[memory("60Gi")]))
        .await
        .unwrap();
    // Class config (MPS with a thread percentage) and claim config (the
    // share) combine; both claims join one daemon.
    let mut with_class = shared_request(B, &["gpu-0"], &[memory("30Gi")]);
    with_class.configs.insert(
        0,
        pb::OpaqueConfig {
            source: pb::ConfigSource::Class.into(),
            requests: vec![],
            parameters_json: gpu_config(r#"{"strategy":"MPS"}"#),
        },
    );
    let err = client.prepare(with_class.clone()).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
    for want in ["gpu-0", A, &(total - (60 << 30)).to_string()] {
        assert!(err.message().contains(want), "{want}: {}", err.message());
    }
    with_class.configs[1].parameters_json = memory("10Gi");
    client.prepare(with_class).await.unwrap();
    let inv = client.inventory().await;
    assert_eq!(free(&inv), total - (70 << 30));
    assert!(
        inv.devices[0].available,
        "a shared GPU takes more shared claims"
    );
    assert!(
        spec_env(&node.cdi_dir, B)
            .iter()
            .any(|e| e.starts_with("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=") && e.ends_with("=10240M")),
        "{:?}",
        spec_env(&node.cdi_dir, B)
    );
    let table = ctl(&node, &["inventory"]);
    let left = gpuslice_quantity::show::gib(u64::try_from(total - (70 << 30)).expect("70 GiB fit"));
    assert!(
        table.contains("FREE") && table.contains(&left),
        "{left}: {table}"
    );
    assert_all_valid(&node.cdi_dir);
    for uid in [A, B] {
        client.unprepare_claim(uid).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_killed_daemon_is_restarted_and_the_claim_health_says_so() {
    let test = "sim_a_killed_daemon_is_restarted_and_the_claim_health_says_so";
    let Some(node) = SharedDaemon::start(test, 1, "") else {
        return;
    };
    let mut client = node.client().await;
    client
        .prepare(shared_request(A, &["gpu-0"], &[mps(50)]))
        .await
        .unwrap();
    let daemon = daemon_of(&node.sharing().await, "gpu-0")
        .cloned()
        .expect("daemon");
    let pid_file = std::path::Path::new(&daemon.pipe_dir).join("nvidia-cuda-mps-control.pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(daemon.pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // The restarted daemon writes its own pid file: wait on the folder.
    let old = daemon.pid.to_string();
    let back = gpuslice::claims::mps_daemon::control::wait_on_dir(
        std::path::Path::new(&daemon.pipe_dir),
        BOUND,
        &|| {
            Ok(std::fs::read_to_string(&pid_file)
                .is_ok_and(|p| !p.trim().is_empty() && p.trim() != old))
        },
    )
    .unwrap();
    assert!(back, "no new daemon within {BOUND:?}:\n{}", node.log());
    let claims = client
        .list_claims(pb::ListClaimsRequest {})
        .await
        .unwrap()
        .into_inner();
    let health = claims.claims[0].health_problems.join("\n");
    assert!(
        health.contains("died and") && health.contains("restart"),
        "{health}"
    );
    let text = ctl(&node, &["claims"]);
    assert!(
        text.contains("1 problem(s)") && text.contains("problem: "),
        "{text}"
    );
    client.unprepare_claim(A).await;
}
