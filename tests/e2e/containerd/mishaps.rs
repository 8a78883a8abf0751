//! Two mishaps under containerd, each as docs/troubleshooting.md tells it:
//!
//! - "A claim unprepared while its container runs": the container keeps
//!   what containerd gave it at create and runs on; its process shows as
//!   unclaimed, naming the claim; a new container with the claim's CDI ids
//!   is refused (`unresolvable CDI devices`). A MIG slice with a process on
//!   it cannot be destroyed: the unprepare fails FAILED_PRECONDITION after
//!   removing the spec, keeps the record, and the retry succeeds once the
//!   container has stopped.
//! - "Stale or stray CDI files": a spec deleted behind gpusliced's back
//!   leaves the running container alone, refuses new containers of the
//!   claim, and a reload of gpusliced writes it again.

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::json;

use super::Ids;
use super::activity::{Followed, activity, pids_of};
use super::node::Kind;
use super::pod::Pod;
use crate::common::claims::Claims;
use crate::common::queries::Queries;
use crate::harness::{Daemon, unprepare_request};

fn spec_path(daemon: &Daemon, kind: Kind) -> std::path::PathBuf {
    daemon
        .cdi_dir
        .join(format!("k8s.gpuslice.dev-claim_{}.json", kind.uid()))
}

/// containerd 2.1's answer to a CreateContainer naming CDI device `name`
/// of gpuslice's kind when no spec in its folders has it.
fn unresolvable(name: &str) -> String {
    format!(
        "failed to create containerd container: CDI device injection failed: \
         unresolvable CDI devices k8s.gpuslice.dev/claim={name}"
    )
}

/// The whole-GPU claim is unprepared while its container runs.
pub async fn unprepare_while_running(
    daemon: &Daemon,
    pod: &mut Pod,
    ids: &Ids,
    followed: &Followed,
) {
    let kind = Kind::Whole;
    let uid = kind.uid();
    let (id, pid) = followed.containers[kind.name()].clone();
    daemon.client().await.unprepare_claim(uid).await;
    assert!(!spec_path(daemon, kind).exists(), "the spec stays");
    assert_eq!(pod.cri.status(&id).0, "CONTAINER_RUNNING");
    let reason = format!("its environment names claim {uid}, which does not hold gpu-0");
    let now = activity(daemon).await;
    let unclaimed = now
        .unclaimed
        .iter()
        .find(|u| u.process.as_ref().is_some_and(|p| p.pid == pid));
    assert!(
        unclaimed.is_some_and(|u| u.reason == reason),
        "{pid} not unclaimed with {reason:?}: {now:#?}"
    );
    let refused = pod
        .run("whole-again", &ids[kind.name()])
        .expect_err("a container of an unprepared claim");
    assert_eq!(refused.details, unresolvable(&format!("{uid}-gpu-0")));
}

/// The MIG claim's unprepare, while its slice has the container's process.
pub async fn mig_unprepare_waits_for_the_container(
    daemon: &Daemon,
    pod: &mut Pod,
    followed: &mut Followed,
) {
    let kind = Kind::Mig;
    let uid = kind.uid();
    let (id, pid) = followed.containers[kind.name()].clone();
    let mut client = daemon.client().await;
    let refused = client
        .unprepare(unprepare_request(uid))
        .await
        .expect_err("a slice in use cannot be destroyed");
    assert_eq!(
        refused.code(),
        tonic::Code::FailedPrecondition,
        "{refused:?}"
    );
    let message = refused.message();
    assert!(
        message.starts_with("GPU 1 destroy compute instance 0 of GPU instance ")
            && message.ends_with(&format!(
                " (processes {pid} run on it): in use by running processes"
            )),
        "{refused:?}"
    );
    assert!(!spec_path(daemon, kind).exists(), "the spec goes first");
    let claims = client
        .list_claims(pb::ListClaimsRequest {})
        .await
        .expect("ListClaims")
        .into_inner();
    assert!(
        claims
            .claims
            .iter()
            .any(|c| c.claim.as_ref().is_some_and(|r| r.uid == uid)),
        "the record stays for the retry"
    );
    assert_eq!(pod.cri.status(&id).0, "CONTAINER_RUNNING");
    assert_eq!(pids_of(&activity(daemon).await, uid), [pid]);

    pod.cri.ok(json!({"op": "stop", "id": id}));
    let status = followed.wait_ended(kind.name());
    assert_eq!(
        status.code(),
        Some(0),
        "sim exec --pid ends with the process"
    );
    client.unprepare_claim(uid).await;
    let layout = client.mig_layout().await;
    let held: Vec<&pb::MigInstance> = layout
        .gpus
        .iter()
        .flat_map(|g| &g.instances)
        .filter(|i| i.holder == uid)
        .collect();
    assert!(held.is_empty(), "the slice stays: {held:?}");
}

/// The time-slicing claim's spec is deleted behind gpusliced's back.
pub async fn spec_removed_behind_the_runtime(daemon: &Daemon, pod: &mut Pod, ids: &Ids) {
    let kind = Kind::TimeSlicing;
    let spec = spec_path(daemon, kind);
    std::fs::remove_file(&spec).expect("delete the spec");
    let id = pod.container(kind.name());
    assert_eq!(pod.cri.status(&id).0, "CONTAINER_RUNNING");
    let refused = pod
        .run("timeslicing-again", &ids[kind.name()])
        .expect_err("a container of a claim without its spec");
    assert_eq!(
        refused.details,
        unresolvable(&format!("{}-gpu-3", kind.uid()))
    );

    daemon.reload();
    assert!(spec.is_file(), "a reload writes the spec again");
    let name = "timeslicing-after-reload";
    pod.run(name, &ids[kind.name()])
        .expect("a container of the claim, after the reload");
    let lines = pod.output(name).await;
    assert!(
        lines.contains(&"node:/dev/nvidia3 c3:3".to_owned()),
        "{}",
        lines.join("\n")
    );
}
