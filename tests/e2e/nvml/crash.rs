//! gpusliced killed (SIGKILL) in the middle of an NVML call that makes a
//! GPU instance, as a node can lose it any time: the library in gpusliced
//! makes the instance, then waits before answering
//! (`GPUSLICE_SIM_FAULTS=create_gpu_instance:latency_ms=…`, the
//! simulator's fault interface), and the test kills gpusliced as soon as
//! the instance exists on the node. The instance is the claim's, though
//! gpusliced never heard NVML say so: the next start must take it back.

use std::time::Duration;

use super::node::NvmlNode;
use crate::common::claims::Claims;
use crate::common::devices::slice_of_profile;
use crate::common::queries::Queries;
use crate::harness::{Daemon, connect, poll_until, prepare_request};

const UID: &str = "f1f1f1f1-0000-4000-8000-0000000000f1";

/// Bound of the waits; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(60);

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
    let slice = slice_of_profile(&daemon.client().await.inventory().await, "3g.40gb");
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
    client.unprepare_claim(UID).await;
    assert_eq!(hardware.gpu_instances(1), Ok(vec![]));
}
