//! MIG end to end: the real gpusliced on simulated H100s with a `[mig]`
//! layout, driven over its socket: slices offered, created at prepare, kept
//! across a daemon restart, destroyed at unprepare.

use std::path::{Path, PathBuf};

use gpuslice_proto::gpuslice::v1 as pb;

use crate::cdi_schema::assert_all_valid;
use crate::common::claims::Claims;
use crate::common::devices::text_attr;
use crate::common::files::write_gpuslice_toml;
use crate::common::queries::Queries;
use crate::harness::{Daemon, prepare_request};

const UID: &str = "cccccccc-0000-4000-8000-00000000000c";

fn sim_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root")
}

fn write_mig_config(dir: &Path) {
    write_config_with(
        dir,
        "on-prepare",
        r#"["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]"#,
    );
}

fn write_config_with(dir: &Path, create: &str, layout: &str) {
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"{}\"\n\
         [backend]\nkind = \"sim\"\n[backend.sim]\ngpus = [\"H100-80GB\", \"H100-80GB\"]\n\
         [mig]\nadvertise = \"layout\"\ncreate = \"{create}\"\n\
         [[mig.gpu]]\nindex = 1\nlayout = {layout}\n",
        sim_root().display()
    );
    write_gpuslice_toml(dir, &text);
}

async fn layout(daemon: &Daemon) -> Vec<pb::MigInstance> {
    let reply = daemon.client().await.mig_layout().await;
    let gpu1 = reply
        .gpus
        .into_iter()
        .find(|g| g.device == "gpu-1")
        .expect("gpu-1");
    assert_eq!(gpu1.mig_mode, "enabled");
    assert_eq!(gpu1.memory_slices, 8);
    gpu1.instances
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_mig_slices_are_made_at_prepare_kept_across_restart_and_destroyed_at_unprepare() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_mig_config(dir.path());
    let daemon = Daemon::start_in(dir);
    let inventory = daemon.client().await.inventory().await;
    let slices: Vec<&pb::Device> = inventory
        .devices
        .iter()
        .filter(|d| text_attr(d, "type").as_deref() == Some("mig"))
        .collect();
    let mut profiles: Vec<String> = slices
        .iter()
        .filter_map(|d| text_attr(d, "profile"))
        .collect();
    profiles.sort();
    assert_eq!(profiles, ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]);
    let three = slices
        .iter()
        .find(|d| text_attr(d, "profile").as_deref() == Some("3g.40gb"))
        .expect("3g slice");
    let one = slices
        .iter()
        .find(|d| text_attr(d, "profile").as_deref() == Some("1g.10gb"))
        .expect("1g slice");
    assert!(
        layout(&daemon).await.is_empty(),
        "nothing made before a claim"
    );

    let prepared = daemon
        .client()
        .await
        .prepare_whole(UID, &[&three.name, &one.name])
        .await;
    assert_eq!(prepared.devices.len(), 2);
    let made = layout(&daemon).await;
    assert_eq!(made.len(), 2);
    assert!(made.iter().all(|i| i.holder == UID && i.created_by_daemon));
    let spec = std::fs::read_to_string(
        daemon
            .cdi_dir
            .join(format!("k8s.gpuslice.dev-claim_{UID}.json")),
    )
    .expect("spec");
    assert!(spec.contains("/dev/nvidia-caps/nvidia-cap"), "{spec}");
    assert_eq!(
        assert_all_valid(&daemon.cdi_dir),
        1,
        "schema and Go CDI library"
    );

    let whole = daemon
        .client()
        .await
        .prepare(prepare_request(
            "dddddddd-0000-4000-8000-00000000000d",
            &["gpu-1"],
        ))
        .await
        .expect_err("the whole GPU is refused while slices are live");
    assert_eq!(whole.code(), tonic::Code::FailedPrecondition, "{whole:?}");

    let (_, dir) = daemon.stop();
    let daemon = Daemon::start_in(dir);
    let kept = layout(&daemon).await;
    assert_eq!(kept, made, "a restart leaves live slices untouched");

    daemon.client().await.unprepare_claim(UID).await;
    assert!(
        layout(&daemon).await.is_empty(),
        "unprepare destroys what it made"
    );
    assert!(daemon.cdi_files().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_reload_reshapes_a_layout_made_ahead_without_touching_a_held_slice() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_config_with(
        dir.path(),
        "ahead",
        r#"["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]"#,
    );
    let daemon = Daemon::start_in(dir);
    let made = layout(&daemon).await;
    assert_eq!(made.len(), 4, "made ahead at start-up");
    let three = made
        .iter()
        .find(|i| i.profile == "3g.40gb")
        .expect("3g")
        .clone();
    daemon
        .client()
        .await
        .prepare_whole(UID, &[&three.device])
        .await;
    write_config_with(daemon.dir.path(), "ahead", r#"["3g.40gb", "3g.40gb"]"#);
    daemon.reload();
    let after = layout(&daemon).await;
    assert_eq!(after.len(), 2, "{after:?}");
    let kept = after
        .iter()
        .find(|i| i.gpu_instance_id == three.gpu_instance_id)
        .expect("the held slice is still there");
    assert_eq!(kept.uuid, three.uuid, "untouched");
    assert_eq!(kept.holder, UID);
}
