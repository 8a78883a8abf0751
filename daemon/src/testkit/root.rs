//! Driver roots for a simulated node: the small stand-in tree in the
//! repository (`examples/sim-root`), or a real-size one made in a folder
//! (`dev/nvidiaN -> /dev/null` for each GPU and the control nodes, and
//! every library and binary the daemon mounts, as empty files), so a
//! claim's CDI spec has the size it has on a real node (benches).

use std::fs::OpenOptions;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::driver::{BINARIES, COMMON_NODES, LIBRARIES};

/// The driver version the simulated GPUs report, which the real-size
/// root's libraries carry.
pub use crate::gpu::sim::DRIVER_VERSION;

/// `examples/sim-root` in the repository.
pub fn sim_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root")
}

/// Makes a real-size driver root at `root` for `gpus` GPUs.
pub fn real_size_root(root: &Path, gpus: usize) {
    let dev = root.join("dev");
    let lib = root.join("usr/lib/x86_64-linux-gnu");
    let bin = root.join("usr/bin");
    for dir in [&dev, &lib, &bin] {
        std::fs::create_dir_all(dir).expect("cannot create the fake root");
    }
    let nodes = (0..gpus)
        .map(|i| format!("nvidia{i}"))
        .chain(COMMON_NODES.iter().map(|(n, _)| (*n).to_owned()));
    for node in nodes {
        symlink("/dev/null", dev.join(node)).expect("cannot create a fake device node");
    }
    for stem in LIBRARIES {
        let real = format!("{stem}.{DRIVER_VERSION}");
        empty_file(&lib.join(&real));
        symlink(&real, lib.join(format!("{stem}.1"))).expect("cannot link a fake library");
    }
    for name in BINARIES {
        empty_file(&bin.join(name));
    }
}

fn empty_file(path: &Path) {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .expect("cannot create a fake driver file");
}
