//! Writes the seed corpus of `prepare_request` (protobuf-encoded Prepare
//! requests, valid and refused) into the folder given as the argument:
//!
//!     cargo run --manifest-path fuzz/Cargo.toml --example prepare_seeds -- fuzz/corpus/prepare_request
//!
//! Device names are the fuzz node's (gpuslice_fuzz::prepare), printed first.

use std::path::PathBuf;

use gpuslice_fuzz::node::node;
use gpuslice_proto::gpuslice::v1 as pb;
use prost::Message;

const NVIDIA: &str = r#""apiVersion":"resource.nvidia.com/v1beta1""#;
const UID: &str = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";

fn claim(uid: &str, namespace: &str, name: &str) -> Option<pb::ClaimRef> {
    Some(pb::ClaimRef {
        uid: uid.to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    })
}

fn device(name: &str, request: &str) -> pb::AllocatedDevice {
    pb::AllocatedDevice {
        device: name.to_owned(),
        request_names: vec![request.to_owned()],
        pool: "node-1".to_owned(),
        consumed_memory_bytes: None,
        share_id: String::new(),
    }
}

fn config(requests: &[&str], kind: &str, sharing: &str) -> pb::OpaqueConfig {
    pb::OpaqueConfig {
        source: 2,
        requests: requests.iter().map(|r| (*r).to_owned()).collect(),
        parameters_json: format!(r#"{{{NVIDIA},"kind":"{kind}"{sharing}}}"#),
    }
}

fn main() {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: prepare_seeds FOLDER"),
    );
    let names = &node().device_names;
    println!("fuzz node devices: {names:?}");
    let mig: Vec<&str> = names
        .iter()
        .filter(|n| n.contains("-mig-"))
        .map(String::as_str)
        .collect();
    let ok = |devices, configs| pb::PrepareRequest {
        claim: claim(UID, "default", "claim"),
        devices,
        configs,
    };
    let seeds: Vec<(&str, pb::PrepareRequest)> = vec![
        (
            "whole-gpu",
            ok(
                vec![device("gpu-3", "gpu")],
                vec![config(&[], "GpuConfig", "")],
            ),
        ),
        (
            "two-gpus-sharing",
            ok(
                vec![device("gpu-3", "ts-gpu"), device("gpu-4", "mps-gpu")],
                vec![
                    config(
                        &["ts-gpu"],
                        "GpuConfig",
                        r#","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}"#,
                    ),
                    config(
                        &["mps-gpu"],
                        "GpuConfig",
                        r#","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50}}"#,
                    ),
                ],
            ),
        ),
        (
            "mig-pair",
            ok(
                vec![device(mig[2], "mig"), device(mig[3], "mig")],
                vec![config(&["mig"], "MigDeviceConfig", "")],
            ),
        ),
        (
            "mig-a30",
            ok(vec![device(mig[mig.len() - 1], "gpu")], vec![]),
        ),
        (
            "bad-whole-gpu-in-mig-mode",
            ok(vec![device("gpu-0", "gpu")], vec![]),
        ),
        (
            "bad-uid-upper",
            pb::PrepareRequest {
                claim: claim(&UID.to_uppercase(), "default", "claim"),
                devices: vec![device("gpu-3", "gpu")],
                configs: vec![],
            },
        ),
        (
            "bad-names",
            pb::PrepareRequest {
                claim: claim(UID, "ns\0x", "../../etc/passwd"),
                devices: vec![device("gpu-3", "Gpu/1")],
                configs: vec![],
            },
        ),
        (
            "bad-long-uid",
            pb::PrepareRequest {
                claim: claim(&"a".repeat(5000), "default", "claim"),
                devices: vec![],
                configs: vec![],
            },
        ),
        (
            "bad-missing-claim",
            pb::PrepareRequest {
                claim: None,
                devices: vec![],
                configs: vec![],
            },
        ),
        (
            "bad-unknown-device",
            ok(vec![device("gpu-9", "gpu")], vec![]),
        ),
        (
            "bad-duplicate-device",
            ok(vec![device("gpu-3", "a"), device("gpu-3", "b")], vec![]),
        ),
        (
            "bad-kind-mismatch",
            ok(
                vec![device(mig[0], "gpu")],
                vec![config(&[], "GpuConfig", "")],
            ),
        ),
        (
            "bad-config-too-large",
            ok(
                vec![device("gpu-4", "gpu")],
                vec![config(
                    &[],
                    "GpuConfig",
                    &format!(r#","x":"{}""#, "y".repeat(10 * 1024)),
                )],
            ),
        ),
    ];
    for (name, request) in seeds {
        let path = out.join(name);
        gpuslice_cdi::write_atomic(&out, name, &request.encode_to_vec(), 0o644)
            .expect("write seed");
        println!("{}", path.display());
    }
}
