//! The in-process benches' node: the test kit's simulated node
//! (`gpuslice::testkit`) on `gpus` H100s with a real-size driver root, its
//! records and CDI folders on the disk being measured, and the request for
//! one exclusive claim on one GPU.

use std::path::Path;

use gpuslice::claims::PrepareRequest;
use gpuslice::testkit::{SimNode, SimNodeBuilder, requests};

/// A node on `gpus` simulated H100s in a fresh folder under `dir`, started
/// (reconciled) on an empty state.
pub fn node(dir: &Path, gpus: usize) -> SimNode {
    std::fs::create_dir_all(dir).expect("cannot create the bench folder");
    SimNodeBuilder::h100s(gpus)
        .seed("bench")
        .in_dir(dir)
        .real_size_root()
        .hardware_in_memory()
        .boot("bench-boot")
        .start()
}

/// An exclusive claim `uid` on `gpu-<gpu>`.
pub fn request(uid: String, gpu: usize) -> PrepareRequest {
    requests::request(&uid, &[&format!("gpu-{gpu}")])
}
