//! gpusliced with `[backend] kind = "nvml"` on gpuslice's own NVML: every
//! kind of claim prepared and unprepared through the NVML backend, each
//! hardware step read back from the node's state by a third client (the
//! simulator on the same file); and a GB200 node whose NVML plays a 550
//! driver, which knows no fabric info v3.

use gpuslice::gpu::{ComputeMode, MigMode, MigSupport};
use gpuslice_proto::gpuslice::v1 as pb;

use super::node::NvmlNode;
use crate::cdi_schema::assert_all_valid;
use crate::common::devices::slice_of_profile;
use crate::common::queries::Queries;
use crate::harness::{Daemon, prepare_request, unprepare_request};
use crate::stand_ins::{daemon_of, mps, shared_request, timeslicing};
use crate::tools::{skip, which};

const WHOLE: &str = "e1e1e1e1-0000-4000-8000-0000000000e1";
const SLICE: &str = "e2e2e2e2-0000-4000-8000-0000000000e2";
const SHARED: &str = "e3e3e3e3-0000-4000-8000-0000000000e3";
const SLICED: &str = "e4e4e4e4-0000-4000-8000-0000000000e4";

/// Four H100s; GPU 1 offers a layout of slices made at prepare.
fn four_h100s() -> NvmlNode {
    NvmlNode::new(
        "gpus = [\"H100-80GB\", \"H100-80GB\", \"H100-80GB\", \"H100-80GB\"]",
        "[mig]\nadvertise = \"layout\"\ncreate = \"on-prepare\"\n[[mig.gpu]]\nindex = 1\n\
         layout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]\n",
    )
}

/// The name of the first slice of `profile` the inventory offers.
async fn unprepare(daemon: &Daemon, uid: &str) {
    daemon
        .client()
        .await
        .unprepare(unprepare_request(uid))
        .await
        .unwrap_or_else(|e| panic!("unprepare {uid}: {e}\n{}", daemon.log()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nvml_lib_gpusliced_prepares_every_kind_of_claim() {
    let test = "nvml_lib_gpusliced_prepares_every_kind_of_claim";
    if which("python3").is_none() {
        return skip(test, "python3 (the stand-ins' interpreter) is missing");
    }
    let node = four_h100s();
    let hardware = node.reader();
    let daemon = node.start();
    let status = daemon.client().await.status().await;
    assert_eq!(status.backend, "nvml", "{status:?}");
    assert_eq!(
        hardware.device_info(1).map(|g| g.mig),
        Ok(MigSupport::Supported {
            current: MigMode::Enabled,
            pending: MigMode::Enabled
        }),
        "the MIG set-up switched GPU 1 on through NVML"
    );
    let mut client = daemon.client().await;

    // A whole GPU.
    let whole = client
        .prepare(prepare_request(WHOLE, &["gpu-0"]))
        .await
        .unwrap_or_else(|e| panic!("prepare a whole GPU: {e}\n{}", daemon.log()))
        .into_inner();
    assert_eq!(whole.devices.len(), 1);

    // A MIG slice, made at prepare: a GPU and a compute instance NVML made.
    let three = slice_of_profile(&daemon.client().await.inventory().await, "3g.40gb");
    client
        .prepare(prepare_request(SLICE, &[&three]))
        .await
        .unwrap_or_else(|e| panic!("prepare a slice: {e}\n{}", daemon.log()));
    let made = hardware.gpu_instances(1).expect("GPU 1's instances");
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(made[0].compute_instances.len(), 1, "{made:?}");
    let layout = daemon.client().await.mig_layout().await;
    let held: Vec<_> = (layout.gpus.iter())
        .flat_map(|g| g.instances.iter())
        .filter(|i| i.holder == SLICE)
        .collect();
    assert_eq!(held.len(), 1, "{layout:?}");
    assert!(held[0].created_by_daemon);
    assert_eq!(held[0].uuid, made[0].compute_instances[0].uuid);

    // MPS on GPU 2: compute mode EXCLUSIVE_PROCESS through NVML.
    client
        .prepare(shared_request(SHARED, &["gpu-2"], &[mps(50)]))
        .await
        .unwrap_or_else(|e| panic!("prepare MPS: {e}\n{}", daemon.log()));
    assert_eq!(hardware.compute_mode(2), Ok(ComputeMode::ExclusiveProcess));
    let view = daemon.sharing().await;
    let mps_daemon = daemon_of(&view, "gpu-2").expect("gpu-2's MPS daemon");
    assert_eq!(mps_daemon.state, "running");

    // Time-slicing on GPU 3, through the nvidia-smi stand-in.
    client
        .prepare(shared_request(SLICED, &["gpu-3"], &[timeslicing("Long")]))
        .await
        .unwrap_or_else(|e| panic!("prepare time-slicing: {e}\n{}", daemon.log()));
    assert!(
        daemon
            .smi_lines()
            .iter()
            .any(|l| l.contains("compute-policy")),
        "{:?}",
        daemon.smi_lines()
    );
    assert_eq!(
        assert_all_valid(&daemon.cdi_dir),
        4,
        "schema and Go CDI library"
    );

    for uid in [WHOLE, SLICE, SHARED, SLICED] {
        unprepare(&daemon, uid).await;
    }
    assert_eq!(hardware.gpu_instances(1), Ok(vec![]), "the slice is gone");
    assert_eq!(hardware.compute_mode(2), Ok(ComputeMode::Default));
    assert!(daemon.cdi_files().is_empty(), "{:?}", daemon.cdi_files());
    assert!(
        daemon.record_files().is_empty(),
        "{:?}",
        daemon.record_files()
    );
}

/// A GB200 node whose NVML is a 550 driver's: fabric info v3 is
/// ARGUMENT_VERSION_MISMATCH there, and the backend asks again with v2
/// (before the fix, every GPU's facts failed and gpusliced did not start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nvml_lib_gpusliced_reads_the_fabric_of_a_550_driver() {
    let node = NvmlNode::new("instance = \"p6e-gb200.36xlarge\"", "");
    let fabric = node.reader().device_info(0).expect("GPU 0").fabric;
    let clique = fabric.and_then(|f| f.clique()).expect("a GB200 clique");
    let daemon = Daemon::start_with_env(node.dir, &[("GPUSLICE_NVML_SIM_DRIVER", "550.163.01")]);
    let inventory = daemon.client().await.inventory().await;
    let gpu0 = (inventory.devices.iter())
        .find(|d| d.name == "gpu-0")
        .expect("gpu-0");
    let published: Vec<String> = gpu0
        .attributes
        .values()
        .filter_map(|v| match v.value.as_ref()? {
            pb::attribute_value::Value::String(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    assert!(
        published.contains(&clique),
        "gpu-0 publishes its clique {clique}: {gpu0:?}"
    );
}
