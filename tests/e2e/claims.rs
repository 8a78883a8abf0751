//! Prepare and unprepare over the socket: ids, idempotence, conflicts, bad
//! input, and what lands on disk.

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Code;

use crate::cdi_schema::assert_all_valid;
use crate::common::claims::Claims;
use crate::common::ctl::run_ctl;
use crate::common::queries::Queries;
use crate::harness::{Daemon, prepare_request, unprepare_request};

const A: &str = "7d3c0f5e-2a1b-4c8d-9e6f-0a1b2c3d4e5f";
const B: &str = "8e4d1a6f-3b2c-4d9e-8f70-1b2c3d4e5f60";

fn ids(reply: &pb::PrepareResponse) -> Vec<String> {
    reply
        .devices
        .iter()
        .flat_map(|d| d.cdi_device_ids.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_prepare_returns_cdi_ids_and_writes_a_valid_spec() {
    let daemon = Daemon::start(2);
    let client = daemon.client().await;
    let reply = client.prepare_whole(A, &["gpu-1"]).await;
    assert!(!reply.already_prepared);
    assert_eq!(
        ids(&reply),
        vec![format!("k8s.gpuslice.dev/claim={A}-gpu-1")]
    );
    assert_eq!(reply.devices[0].request_names, vec!["gpu"]);
    assert_eq!(reply.devices[0].pool, "node-1");
    let spec_name = format!("k8s.gpuslice.dev-claim_{A}.json");
    assert_eq!(daemon.cdi_files(), vec![spec_name.clone()]);
    let spec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(daemon.cdi_dir.join(&spec_name)).unwrap()).unwrap();
    assert_eq!(spec["cdiVersion"], "0.5.0");
    assert_eq!(spec["kind"], "k8s.gpuslice.dev/claim");
    let node = &spec["devices"][0]["containerEdits"]["deviceNodes"][0];
    assert_eq!(node["path"], "/dev/nvidia1");
    // The fake root's /dev/nvidia1 links to /dev/null: the spec names the
    // node itself, as runtimes refuse a link.
    assert_eq!(node["hostPath"], "/dev/null");
    let common = &spec["containerEdits"]["deviceNodes"];
    assert_eq!(common[0]["path"], "/dev/nvidiactl");
    // The claim marker, spec-wide: any device of the claim brings it.
    let marker = format!("GPUSLICE_CLAIM_{}={A}", A.replace('-', "_"));
    assert!(
        spec["containerEdits"]["env"]
            .as_array()
            .is_some_and(|env| env.iter().any(|e| e == marker.as_str())),
        "{spec}"
    );
    assert_eq!(daemon.record_files(), vec![format!("{A}.json")]);
    assert_all_valid(&daemon.cdi_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_prepare_twice_returns_the_same_ids() {
    let daemon = Daemon::start(2);
    let client = daemon.client().await;
    let first = client.prepare_whole(A, &["gpu-0", "gpu-1"]).await;
    let again = client.prepare_whole(A, &["gpu-0", "gpu-1"]).await;
    assert!(again.already_prepared);
    assert_eq!(ids(&first), ids(&again));
    assert_eq!(daemon.cdi_files().len(), 1);
    assert_all_valid(&daemon.cdi_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_held_gpu_is_refused_naming_the_holder() {
    let daemon = Daemon::start(2);
    let mut client = daemon.client().await;
    client.prepare_whole(A, &["gpu-0"]).await;
    let err = client
        .prepare(prepare_request(B, &["gpu-1", "gpu-0"]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(err.message().contains(A), "{}", err.message());
    assert!(err.message().contains("gpu-0"), "{}", err.message());
    // Nothing of B leaked: one spec, one record, gpu-1 still free.
    assert_eq!(daemon.cdi_files().len(), 1);
    assert_eq!(daemon.record_files(), vec![format!("{A}.json")]);
    client.prepare_whole(B, &["gpu-1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_unprepare_frees_the_gpu_and_removes_the_files() {
    let daemon = Daemon::start(1);
    let mut client = daemon.client().await;
    client.prepare_whole(A, &["gpu-0"]).await;
    let done = client
        .unprepare(unprepare_request(A))
        .await
        .unwrap()
        .into_inner();
    assert!(done.was_prepared);
    assert!(daemon.cdi_files().is_empty());
    assert!(daemon.record_files().is_empty());
    client.prepare_whole(B, &["gpu-0"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_unprepare_of_an_unknown_claim_succeeds() {
    let daemon = Daemon::start(1);
    let mut client = daemon.client().await;
    let done = client
        .unprepare(unprepare_request(B))
        .await
        .unwrap()
        .into_inner();
    assert!(!done.was_prepared);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_bad_input_is_invalid_argument_and_touches_nothing() {
    let daemon = Daemon::start(1);
    let mut client = daemon.client().await;
    // 10 MB is refused by the transport's size limit before decoding.
    let huge = "a".repeat(10 * 1024 * 1024);
    let err = client
        .prepare(prepare_request(&huge, &["gpu-0"]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::OutOfRange, "{}", err.message());
    // So is 2 MiB: the daemon's own limit is 1 MiB, below the transport's default.
    let over = "a".repeat(2 * 1024 * 1024);
    let err = client
        .prepare(prepare_request(&over, &["gpu-0"]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::OutOfRange, "{}", err.message());
    // Under the limit, an oversized field is refused by the API itself.
    let big = "a".repeat(512 * 1024);
    let cases = [
        prepare_request("not-a-uuid", &["gpu-0"]),
        prepare_request("../../etc/cron.d/x", &["gpu-0"]),
        prepare_request(&format!("{A}\0"), &["gpu-0"]),
        prepare_request(&big, &["gpu-0"]),
        prepare_request(A, &["gpu-7"]),
        prepare_request(A, &[]),
        prepare_request(A, &["gpu-0", "gpu-0"]),
        pb::PrepareRequest {
            claim: None,
            ..prepare_request(A, &["gpu-0"])
        },
    ];
    for req in cases {
        let err = client.prepare(req).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{}", err.message());
        assert!(err.message().len() < 1000, "message echoes the input");
    }
    let mut bad_name = prepare_request(A, &["gpu-0"]);
    bad_name.claim.as_mut().unwrap().namespace = "a/b".to_owned();
    let err = client.prepare(bad_name).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message().contains("claim.namespace"),
        "{}",
        err.message()
    );
    let err = client
        .unprepare(unprepare_request("x/y"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(daemon.cdi_files().is_empty());
    assert!(daemon.record_files().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_bad_config_names_the_field() {
    let daemon = Daemon::start(1);
    let mut client = daemon.client().await;
    let mut req = prepare_request(A, &["gpu-0"]);
    req.configs.push(pb::OpaqueConfig {
        source: pb::ConfigSource::Claim.into(),
        requests: vec![],
        parameters_json:
            r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharng":{}}"#
                .to_owned(),
    });
    let err = client.prepare(req).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("sharng"), "{}", err.message());
    assert!(daemon.cdi_files().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_inventory_uses_nvidia_attribute_names() {
    let daemon = Daemon::start(2);
    let mut client = daemon.client().await;
    client.prepare_whole(A, &["gpu-1"]).await;
    let inv = client.inventory().await;
    let names: Vec<&str> = inv.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, vec!["gpu-0", "gpu-1"]);
    for key in [
        "type",
        "uuid",
        "productName",
        "brand",
        "architecture",
        "cudaComputeCapability",
        "driverVersion",
        "cudaDriverVersion",
        "pcieBusID",
        "resource.kubernetes.io/pciBusID",
        "resource.kubernetes.io/pcieRoot",
        "resource.kubernetes.io/numaNode",
        "index",
        "minor",
    ] {
        assert!(inv.devices[0].attributes.contains_key(key), "missing {key}");
    }
    assert!(inv.devices[0].capacity["memory"] > 0);
    assert!(inv.devices[0].available);
    assert!(!inv.devices[1].available);
    assert_eq!(inv.devices[1].holders, vec![A]);
    let status = client.status().await;
    assert_eq!(status.backend, "sim");
    assert_eq!(status.gpu_count, 2);
    assert_eq!(status.claim_count, 1);
    let claims = client
        .list_claims(pb::ListClaimsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(claims.claims.len(), 1);
    assert_eq!(claims.claims[0].phase, "prepared");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_gpuslicectl_prints_the_documented_json() {
    let daemon = Daemon::start(1);
    let prepare = ["prepare", "--uid", A, "--namespace", "ns", "--name", "n"];
    let args = [&["--output", "json"], &prepare[..], &["--device", "gpu-0"]].concat();
    let doc: serde_json::Value =
        serde_json::from_str(&run_ctl(&daemon.socket, &args).ok()).unwrap();
    assert_eq!(doc["uid"], A);
    assert_eq!(doc["devices"][0]["device"], "gpu-0");
    assert_eq!(
        doc["devices"][0]["cdi_device_ids"][0],
        format!("k8s.gpuslice.dev/claim={A}-gpu-0")
    );
    let text = run_ctl(&daemon.socket, &["claims"]).stdout;
    assert!(text.starts_with("UID"), "{text}");
    assert!(text.contains(A) && text.contains("ns/n"), "{text}");
    let held = ["prepare", "--uid", B, "--device", "gpu-0"];
    let refused = run_ctl(&daemon.socket, &held).refused();
    assert!(refused.contains("FailedPrecondition"), "{refused}");
}
