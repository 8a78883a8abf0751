//! The one image of the tier, made here from the host's static busybox with
//! no registry: a root filesystem as one layer, written as an OCI image
//! layout (blobs named by sha256, a config, a manifest, an index naming the
//! image) and tarred, as `ctr images import` takes it. The same image is the
//! pinned sandbox image, its default command a long sleep (what `pause`
//! does), and every test container's image, with a command of its own.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::common::files::write_new;
use crate::tools::run;

/// The image's name, also `pinned_images.sandbox` in containerd's config.
pub const IMAGE: &str = "localhost/gpuslice-test-busybox:latest";

/// The busybox applets the probes use.
const APPLETS: [&str; 9] = [
    "sh", "ls", "env", "cat", "grep", "sed", "stat", "sleep", "readlink",
];

const LAYER: &str = "application/vnd.oci.image.layer.v1.tar";
const CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// Writes the layout under `dir` and tars it; returns the tarball's path.
pub fn build(dir: &Path, busybox: &Path) -> std::path::PathBuf {
    let rootfs = dir.join("rootfs");
    for sub in ["bin", "dev", "proc", "sys", "etc", "tmp"] {
        std::fs::create_dir_all(rootfs.join(sub)).expect("image rootfs");
    }
    std::fs::copy(busybox, rootfs.join("bin/busybox")).expect("copy busybox");
    for applet in APPLETS {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet))
            .expect("applet link");
    }
    let layer_tar = dir.join("layer.tar");
    run(Command::new("tar")
        .arg("-C")
        .arg(&rootfs)
        .arg("-cf")
        .arg(&layer_tar)
        .arg("."))
    .expect("tar the layer");
    let layout = dir.join("layout");
    let blobs = layout.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).expect("blobs folder");
    let layer = std::fs::read(&layer_tar).expect("read the layer");
    let layer_digest = put(&blobs, &layer);
    let config = json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Cmd": ["/bin/sleep", "2147483647"]},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    })
    .to_string();
    let config_digest = put(&blobs, config.as_bytes());
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": CONFIG, "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": LAYER, "digest": layer_digest, "size": layer.len()}],
    })
    .to_string();
    let manifest_digest = put(&blobs, manifest.as_bytes());
    let index = json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": MANIFEST,
            "digest": manifest_digest,
            "size": manifest.len(),
            "annotations": {"io.containerd.image.name": IMAGE},
        }],
    });
    write_new(&layout.join("index.json"), index.to_string().as_bytes());
    write_new(
        &layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    );
    let tarball = dir.join("image.tar");
    run(Command::new("tar")
        .arg("-C")
        .arg(&layout)
        .arg("-cf")
        .arg(&tarball)
        .args(["oci-layout", "index.json", "blobs"]))
    .expect("tar the image layout");
    tarball
}

/// Stores `bytes` as a blob; its digest, `sha256:<hex>`.
fn put(blobs: &Path, bytes: &[u8]) -> String {
    let hex: String = ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    write_new(&blobs.join(&hex), bytes);
    format!("sha256:{hex}")
}
