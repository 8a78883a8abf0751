//! NVIDIA's nvidia-smi and gpusliced on one node through gpuslice's NVML:
//! instances `nvidia-smi mig -cgi … -C` makes are what gpusliced's NVML
//! backend lists (foreign: neither offered nor touched), and a slice
//! gpusliced makes for a claim is what `nvidia-smi -L` and `mig -lgi` show,
//! held (IN_USE) against `mig -dgi`. And NVML's permissions: MIG changes
//! by a user other than root are NO_PERMISSION.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use gpuslice_proto::gpuslice::v1 as pb;

use super::node::NvmlNode;
use super::smi::{self, nvidia_smi};
use crate::common::claims::Claims;
use crate::common::queries::Queries;
use crate::harness::{Daemon, prepare_request};
use crate::tools::{skip, which};

const UID: &str = "abababab-0000-4000-8000-0000000000ab";

async fn layout(daemon: &Daemon, device: &str) -> pb::GpuMigLayout {
    let reply = daemon.client().await.mig_layout().await;
    (reply.gpus.into_iter())
        .find(|g| g.device == device)
        .unwrap_or_else(|| panic!("no {device} in the layout"))
}

/// The MIG UUIDs `nvidia-smi -L` lists under GPU `gpu`.
fn listed_mig_uuids(printed: &str, gpu: u32) -> Vec<String> {
    let mut on = false;
    let mut uuids = Vec::new();
    for line in printed.lines() {
        if line.starts_with("GPU ") {
            on = line.starts_with(&format!("GPU {gpu}:"));
        } else if on && let Some((_, uuid)) = line.split_once("(UUID: ") {
            uuids.push(uuid.trim_end_matches(')').to_owned());
        }
    }
    uuids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nvml_smi_and_gpusliced_see_each_others_instances() {
    let Some(smi) = nvidia_smi("nvml_smi_and_gpusliced_see_each_others_instances") else {
        return;
    };
    let node = NvmlNode::new(
        "gpus = [\"H100-80GB\", \"H100-80GB\"]",
        "[mig]\nadvertise = \"layout\"\ncreate = \"on-prepare\"\n[[mig.gpu]]\nindex = 0\n\
         layout = [\"1g.10gb\"]\n[[mig.gpu]]\nindex = 1\nlayout = [\"3g.40gb\", \"3g.40gb\"]\n",
    );
    let dir = node.path().to_path_buf();
    smi::ok(&smi, &dir, &["-i", "0", "-mig", "1"]);
    let made = smi::ok(&smi, &dir, &["mig", "-cgi", "9,19", "-C", "-i", "0"]);
    assert!(
        made.contains("Successfully created compute instance"),
        "{made}"
    );
    let daemon = Daemon::start_in(node.dir);
    let before = listed_mig_uuids(&smi::ok(&smi, &dir, &["-L"]), 0);
    let seen = layout(&daemon, "gpu-0").await;
    let mut uuids: Vec<String> = seen.instances.iter().map(|i| i.uuid.clone()).collect();
    uuids.sort();
    let mut expected = before.clone();
    expected.sort();
    assert_eq!(
        uuids, expected,
        "gpusliced lists what nvidia-smi made: {seen:?}"
    );
    assert!(
        seen.instances
            .iter()
            .all(|i| !i.created_by_daemon && i.holder.is_empty()),
        "foreign: {seen:?}"
    );

    // Made while gpusliced runs: seen at its next read.
    smi::ok(&smi, &dir, &["mig", "-cgi", "14", "-C", "-i", "0"]);
    assert_eq!(layout(&daemon, "gpu-0").await.instances.len(), 3);

    // The reverse: a claim's slice, made by gpusliced through NVML.
    let slice = layout(&daemon, "gpu-1").await.instances;
    assert!(slice.is_empty(), "nothing made before the claim: {slice:?}");
    let mut client = daemon.client().await;
    let wanted = "gpu-1-mig-3g40gb-0";
    client
        .prepare(prepare_request(UID, &[wanted]))
        .await
        .unwrap_or_else(|e| panic!("prepare {wanted}: {e}\n{}", daemon.log()));
    let held = layout(&daemon, "gpu-1").await.instances;
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(
        listed_mig_uuids(&smi::ok(&smi, &dir, &["-L"]), 1),
        vec![held[0].uuid.clone()]
    );
    let lgi = smi::ok(&smi, &dir, &["mig", "-lgi", "-i", "1"]);
    assert!(lgi.contains("MIG 3g.40gb") && lgi.contains("0:4"), "{lgi}");
    let gi = held[0].gpu_instance_id.to_string();
    let busy = smi::run(&smi, &dir, &["mig", "-dgi", "-i", "1", "-gi", &gi]);
    assert_eq!(
        busy.code,
        Some(19),
        "IN_USE while its compute instance lives: {busy:?}"
    );
    assert!(busy.stdout.contains("In use by another client"), "{busy:?}");
    client.unprepare_claim(UID).await;
    assert!(listed_mig_uuids(&smi::ok(&smi, &dir, &["-L"]), 1).is_empty());
    not_root_is_refused(&smi, &dir);
}

/// `nvidia-smi -i 0 -mig 0` by nobody: NVML's NO_PERMISSION (rc 4).
fn not_root_is_refused(smi: &Path, dir: &Path) {
    let test = "nvml_smi_and_gpusliced_see_each_others_instances (as nobody)";
    if which("setpriv").is_none() {
        return skip(test, "util-linux's setpriv is missing");
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("open the folder");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(smi)
        .args(["-i", "0", "-mig", "0"])
        .env("LD_LIBRARY_PATH", dir)
        .output()
        .expect("run nvidia-smi as nobody");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(stdout.contains("Insufficient Permissions"), "{stdout}");
}
