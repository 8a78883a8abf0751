//! A simulated node lent through gpuslice's NVML: a folder holding a copy
//! of the library, the config gpusliced and the library both read (its
//! `[backend.sim]` is the node; `[backend] kind = "nvml"` makes gpusliced
//! load the library), a fake sysfs tree where the GPUs sit, and the
//! stand-ins for the MPS control program and nvidia-smi's compute-policy.
//! gpusliced, NVIDIA's nvidia-smi and this test's own reader (the
//! simulator opened on the same state file) all see one node.

use std::path::Path;

use gpuslice::config::{BackendKind, Config};
use gpuslice::gpu::GpuBackend;

use super::library::{CONFIG, LIBRARY, fake_sysfs, lend};
use crate::stand_ins::{SharedDaemon, sections};
use crate::tools::repo_root;

/// A node's folder, before or after gpusliced starts on it.
pub struct NvmlNode {
    pub dir: tempfile::TempDir,
}

impl NvmlNode {
    /// A node whose `[backend.sim]` holds `sim`, with `extra` tables
    /// (a `[mig]`) in the config.
    pub fn new(sim: &str, extra: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path();
        let text = format!(
            "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
             driver_root = \"{}\"\n{}{extra}\n[backend]\nkind = \"nvml\"\n\
             [backend.nvml]\nlibrary = \"{}\"\nsysfs_root = \"sys\"\n[backend.sim]\n{sim}\n",
            repo_root().join("examples/sim-root").display(),
            sections(path),
            path.join(LIBRARY).display(),
        );
        lend(path, &text);
        crate::common::files::write_gpuslice_toml(path, &text);
        let places: Vec<_> = (0..reader_of(path).device_count().expect("GPUs"))
            .map(|i| {
                let gpu = reader_of(path).device_info(i).expect("a GPU");
                (
                    gpu.pci_bus_id,
                    gpu.pcie_root.expect("a root"),
                    gpu.numa_node,
                )
            })
            .collect();
        fake_sysfs(&path.join("sys"), &places);
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The simulator on this node's state file: a third client of the
    /// node, for the test to read (and change) the hardware directly.
    pub fn reader(&self) -> std::sync::Arc<dyn GpuBackend> {
        reader_of(self.path())
    }

    /// gpusliced on this node (with the MPS and nvidia-smi stand-ins).
    pub fn start(self) -> SharedDaemon {
        SharedDaemon::start_in(self.dir)
    }
}

/// The simulator opened on the node in `dir` as `[backend] kind = "sim"`
/// would open it.
pub fn reader_of(dir: &Path) -> std::sync::Arc<dyn GpuBackend> {
    let mut config = Config::load(&dir.join(CONFIG)).expect("the node's config");
    config.backend.kind = BackendKind::Sim;
    gpuslice::run::open_backend(&config).expect("the simulated node")
}
