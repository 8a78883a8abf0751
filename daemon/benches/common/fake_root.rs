//! A fake host root for benches: `dev/nvidiaN -> /dev/null` for `gpus`
//! GPUs and the control nodes, and a driver tree holding every library and
//! binary the daemon mounts (empty files), so a claim's CDI spec has its real
//! size.

use std::fs::OpenOptions;
use std::os::unix::fs::symlink;
use std::path::Path;

use gpuslice::driver::{BINARIES, COMMON_NODES, LIBRARIES};

/// The driver version the fake libraries carry.
pub const DRIVER_VERSION: &str = "580.95.05";

/// A fake host: /dev nodes for `gpus` GPUs and the control nodes, and a
/// driver root with every library and binary, so the spec has a real size.
pub fn fake_root(root: &Path, gpus: usize) {
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
