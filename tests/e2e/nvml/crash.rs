//! gpusliced killed (SIGKILL) in the middle of an NVML call that makes a
//! GPU instance, as a node can lose it any time: the library in gpusliced
//! makes the instance, then waits before answering
//! (`GPUSLICE_SIM_FAULTS=create_gpu_instance:latency_ms=…`, the
//! simulator's fault interface), and the test kills gpusliced as soon as
//! the instance exists on the node. The instance is the claim's, though
//! gpusliced never heard NVML say so: the next start must take it back.

use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;

use super::node::NvmlNode;
use crate::harness::{Daemon, connect, poll_until, prepare_request, unprepare_request};

const UID: &str = "f1f1f1f1-0000-4000-8000-0000000000f1";

/// Bound of the waits; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(60);

fn attr(device: &pb::Device, key: &str) -> Option<String> {
    match device.attributes.get(key)?.value.as_ref()? {
        pb::attribute_value::Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

async fn three_g(daemon: &Daemon) -> String {
    let inventory = daemon
        .client()
        .await
        .get_inventory(pb::GetInventoryRequest {})
        .await
        .expect("inventory")
        .into_inner();
    (inventory.devices.iter())
        .find(|d| attr(d, "profile").as_deref() == Some("3g.40gb"))
        .map(|d| d.name.clone())
        .expect("a 3g.40gb slice offered")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nvml_lib_a_kill_inside_nvmls_create_is_rolled_back() {
    let node = NvmlNode::new(
        "gpus = [\"H100-80GB\", \"H100-80GB\"]",
        "[mig]\nadvertise = \"layout\"\ncreate = \"on-prepare\"\n[[mig.gpu]]\nindex = 1\n\
         layout = [\"3g.40gb\", \"3g.40gb\"]\n",
    );
    let hardware = node.reader();
    let slow = [(
        "GPUSLICE_SIM_FAULTS",
        "create_gpu_instance:latency_ms=30000",
    )];
    let daemon = Daemon::start_with_env(node.dir, &slow);
    let slice = three_g(&daemon).await;
    let socket = daemon.socket.clone();
    let wanted = slice.clone();
    let prepare = tokio::spawn(async move {
        connect(&socket)
            .await
            .prepare(prepare_request(UID, &[&wanted]))
            .await
    });
    let made = poll_until(
        "the GPU instance is on the node while NVML has not answered",
        (BOUND, Duration::from_millis(20)),
        || {
            let made = hardware.gpu_instances(1).ok()?;
            (!made.is_empty()).then_some(made)
        },
        || daemon.log(),
    )
    .await;
    assert_eq!(made.len(), 1, "{made:?}");
    let dir = daemon.kill9();
    let cut = prepare.await.expect("the prepare task");
    assert!(cut.is_err(), "the prepare cannot have answered: {cut:?}");

    let daemon = Daemon::start_in(dir);
    let left = hardware.gpu_instances(1).expect("GPU 1's instances");
    assert_eq!(
        left,
        vec![],
        "the instance the killed prepare made is gone after the start; log:\n{}",
        daemon.log()
    );
    assert!(
        daemon.record_files().is_empty(),
        "{:?}",
        daemon.record_files()
    );
    assert!(daemon.cdi_files().is_empty(), "{:?}", daemon.cdi_files());
    let mut client = daemon.client().await;
    client
        .prepare(prepare_request(UID, &[&slice]))
        .await
        .unwrap_or_else(|e| panic!("prepare again: {e}\n{}", daemon.log()));
    assert_eq!(hardware.gpu_instances(1).map(|g| g.len()), Ok(1));
    client
        .unprepare(unprepare_request(UID))
        .await
        .expect("unprepare");
    assert_eq!(hardware.gpu_instances(1), Ok(vec![]));
}
