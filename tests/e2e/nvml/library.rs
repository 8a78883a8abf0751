//! gpuslice's own NVML (the `gpuslice-nvml-sim` package's shared library)
//! as its tests lend it: built once per process with the cargo and profile
//! that built the test (`$CARGO build -p gpuslice-nvml-sim --lib`; cargo
//! does nothing when it is fresh), then copied, as `libnvidia-ml.so.1`,
//! into a folder of the test's beside the config it reads
//! (`gpuslice-nvml-sim.toml`, a gpuslice.toml whose `[backend.sim]` it
//! simulates). A copy, not a link: the library finds its config beside the
//! file the loader mapped, and each copy loaded into one process is a node
//! of its own (built by `binaries.rs`' `cargo_build`). Also a fake sysfs tree for the NVML backend
//! (`[backend.nvml] sysfs_root`), where each simulated GPU sits.
//!
//! Shared with `#[path]` by the daemon's NVML backend tests
//! (`daemon/src/gpu/nvml/sim_tests.rs`). Std only.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

#[path = "../binaries.rs"]
#[allow(
    dead_code,
    clippy::duplicate_mod,
    reason = "the workspace's builder, also the e2e crate's own module (this file is shared with the daemon's NVML tests, which have no other); the library needs only its cargo build"
)]
mod binaries;

/// The name NVML's clients load.
pub const LIBRARY: &str = "libnvidia-ml.so.1";

/// The config the library reads beside itself.
pub const CONFIG: &str = "gpuslice-nvml-sim.toml";

/// The built library, `target/<profile>/libgpuslice_nvml_sim.so`.
pub fn built() -> PathBuf {
    /// Held while building, so two tests asking at once build once.
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(path) = built.as_ref() {
        return path.clone();
    }
    let profile_dir = binaries::profile_dir();
    binaries::cargo_build(&profile_dir, &["-p", "gpuslice-nvml-sim", "--lib"]);
    let path = profile_dir.join("libgpuslice_nvml_sim.so");
    assert!(
        path.is_file(),
        "{} is not there after `cargo build -p gpuslice-nvml-sim --lib`",
        path.display()
    );
    *built = Some(path.clone());
    path
}

/// Lends the library in `dir`: a copy named [`LIBRARY`] beside `config`
/// (written as [`CONFIG`]). Returns the copy's path.
pub fn lend(dir: &Path, config: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("the library's folder");
    let copy = dir.join(LIBRARY);
    std::fs::copy(built(), &copy).expect("copy the library");
    write(&dir.join(CONFIG), config);
    copy
}

/// Writes `text` to `path` (a test's own file; no durability needed).
pub fn write(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    std::io::Write::write_all(&mut file, text.as_bytes()).expect("write");
}

/// A fake sysfs tree under `root` with each GPU of `gpus` (canonical bus
/// id, PCIe root `pci<domain>:<bus>`, NUMA node) where the kernel puts
/// it: `devices/<root>/<bus id>` linked from `bus/pci/devices/<bus id>`.
pub fn fake_sysfs(root: &Path, gpus: &[(String, String, Option<u32>)]) {
    let links = root.join("bus/pci/devices");
    std::fs::create_dir_all(&links).expect("sysfs bus folder");
    for (bus_id, pcie_root, numa) in gpus {
        let device = root.join("devices").join(pcie_root).join(bus_id);
        std::fs::create_dir_all(&device).expect("sysfs device folder");
        let node = numa.map_or_else(|| "-1".to_owned(), |n| n.to_string());
        write(&device.join("numa_node"), &format!("{node}\n"));
        let target = Path::new("../../../devices").join(pcie_root).join(bus_id);
        let link = links.join(bus_id);
        if !link.exists() {
            std::os::unix::fs::symlink(target, link).expect("sysfs link");
        }
    }
}
