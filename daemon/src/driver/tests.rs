use std::os::unix::fs::symlink;
use std::path::Path;

use super::{DriverFiles, HostPath, Roots};

fn touch(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap();
}

/// A fake driver root like a real node's: versioned libraries with soname
/// links, a dev symlink to be ignored, binaries, firmware, device nodes.
fn fake_root(root: &Path) {
    let lib = root.join("usr/lib/x86_64-linux-gnu");
    for stem in [
        "libcuda.so",
        "libnvidia-ml.so",
        "libnvidia-ptxjitcompiler.so",
    ] {
        touch(&lib.join(format!("{stem}.580.95.05")));
        symlink(format!("{stem}.580.95.05"), lib.join(format!("{stem}.1"))).unwrap();
        symlink(format!("{stem}.1"), lib.join(stem)).unwrap();
    }
    symlink("libcuda.so.999", lib.join("libcuda.so.2")).unwrap(); // dangling: skipped
    touch(&root.join("usr/bin/nvidia-smi"));
    touch(&root.join("usr/bin/nvidia-cuda-mps-control"));
    touch(&root.join("lib/firmware/nvidia/580.95.05/gsp_ga10x.bin"));
    for node in ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0"] {
        symlink("/dev/null", root.join("dev").join(node))
            .or_else(|_| {
                std::fs::create_dir_all(root.join("dev"))?;
                symlink("/dev/null", root.join("dev").join(node))
            })
            .unwrap();
    }
}

fn discover(root: &Path) -> DriverFiles {
    DriverFiles::discover(
        Roots {
            driver_root: root,
            dev_root: root,
        },
        "580.95.05",
    )
}

fn containers(paths: &[HostPath]) -> Vec<&str> {
    paths.iter().map(|p| p.container.as_str()).collect()
}

#[test]
fn finds_versioned_libraries_and_soname_links() {
    let dir = tempfile::tempdir().unwrap();
    fake_root(dir.path());
    let found = discover(dir.path());
    let mounts = containers(&found.mounts);
    for want in [
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.95.05",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.580.95.05",
    ] {
        assert!(mounts.contains(&want), "{want} missing from {mounts:?}");
    }
    assert!(!mounts.contains(&"/usr/lib/x86_64-linux-gnu/libcuda.so"));
    assert!(!mounts.contains(&"/usr/lib/x86_64-linux-gnu/libcuda.so.2"));
    assert_eq!(found.library_dirs, vec!["/usr/lib/x86_64-linux-gnu"]);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
}

#[test]
fn host_paths_are_under_the_root() {
    let dir = tempfile::tempdir().unwrap();
    fake_root(dir.path());
    let found = discover(dir.path());
    for p in found.mounts.iter().chain(&found.control_nodes) {
        assert!(p.host.starts_with(dir.path()), "{p:?}");
        assert!(
            p.host.ends_with(p.container.trim_start_matches('/')),
            "{p:?}"
        );
    }
}

#[test]
fn finds_binaries_firmware_and_control_nodes() {
    let dir = tempfile::tempdir().unwrap();
    fake_root(dir.path());
    let found = discover(dir.path());
    let mounts = containers(&found.mounts);
    assert!(mounts.contains(&"/usr/bin/nvidia-smi"));
    assert!(mounts.contains(&"/usr/bin/nvidia-cuda-mps-control"));
    assert!(!mounts.contains(&"/usr/bin/nvidia-debugdump"));
    assert!(mounts.contains(&"/lib/firmware/nvidia/580.95.05"));
    assert_eq!(
        containers(&found.control_nodes),
        vec!["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    );
}

#[test]
fn an_empty_root_reports_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let found = discover(dir.path());
    assert!(found.mounts.is_empty());
    assert!(found.control_nodes.is_empty());
    let text = found.problems.join("\n");
    assert!(text.contains("nvidiactl"), "{text}");
    assert!(text.contains("nvidia-uvm"), "{text}");
    assert!(text.contains("libcuda.so"), "{text}");
    assert!(text.contains("libnvidia-ml.so"), "{text}");
    assert!(
        !text.contains("nvidia-modeset"),
        "optional node reported: {text}"
    );
}

#[test]
fn the_repo_sim_root_is_complete() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root");
    let found = discover(&root);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert!(
        found
            .mounts
            .iter()
            .any(|m| m.container.ends_with("libcuda.so.1"))
    );
}
