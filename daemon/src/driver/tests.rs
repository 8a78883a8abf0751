use std::os::unix::fs::symlink;
use std::path::Path;

use super::caps::{CapName, char_major, parse};
use super::{DriverFiles, HostPath, MigCapError, Roots};

fn touch(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap();
}

fn put(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
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
    let caps = root.join("proc/driver/nvidia-caps");
    std::fs::create_dir_all(&caps).unwrap();
    put(
        &caps.join("mig-minors"),
        "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n",
    );
    put(
        &root.join("proc/devices"),
        "Character devices:\n  1 mem\n508 nvidia-caps\n\nBlock devices:\n  8 sd\n",
    );
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

#[test]
fn mig_cap_nodes_come_from_mig_minors() {
    let dir = tempfile::tempdir().unwrap();
    fake_root(dir.path());
    let found = discover(dir.path());
    let [gi, ci] = found.mig_cap_nodes(0, 1, 0).unwrap();
    assert_eq!(gi.container, "/dev/nvidia-caps/nvidia-cap12");
    assert_eq!(ci.container, "/dev/nvidia-caps/nvidia-cap13");
    assert_eq!(gi.host, dir.path().join("dev/nvidia-caps/nvidia-cap12"));
    assert_eq!((gi.major, gi.minor, ci.minor), (Some(508), 12, 13));
    let err = found.mig_cap_nodes(1, 1, 0).unwrap_err();
    assert!(matches!(&err, MigCapError::NotListed { name, .. } if name == "gpu1/gi1/access"));
    assert!(err.to_string().contains("mig-minors"), "{err}");
}

#[test]
fn missing_mig_minors_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let found = discover(dir.path());
    let text = found.problems.join("\n");
    assert!(text.contains("nvidia-caps/mig-minors"), "{text}");
    found.mig_cap_nodes(0, 0, 0).unwrap_err();
}

#[test]
fn malformed_mig_minors_names_the_line() {
    let path = Path::new("/proc/driver/nvidia-caps/mig-minors");
    for (text, line_no, wanted) in [
        (
            "config 1\ngpu0/gi1/access\n",
            2,
            "expected `<name> <minor>`",
        ),
        ("config x\n", 1, "not a number"),
        (
            "config 1\n\ngpu0/gx1/access 4\n",
            3,
            "expected config, monitor",
        ),
        (
            "gpu0/gi1/ci0/access 13 14\n",
            1,
            "expected `<name> <minor>`",
        ),
    ] {
        let err = parse(path, text).unwrap_err();
        let MigCapError::Malformed { line_no: at, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(*at, line_no, "{text:?}");
        let msg = err.to_string();
        assert!(
            msg.contains(wanted) && msg.contains("mig-minors line"),
            "{msg}"
        );
    }
    let minors = parse(path, "config 1\nmonitor 2\ngpu3/gi14/ci7/access 543\n").unwrap();
    assert_eq!(
        minors.get(&CapName::Ci {
            gpu: 3,
            gi: 14,
            ci: 7
        }),
        Some(&543)
    );
    assert_eq!(minors.get(&CapName::Monitor), Some(&2));
}

#[test]
fn caps_major_from_proc_devices() {
    let text =
        "Character devices:\n195 nvidia\n237 nvidia-caps\n\nBlock devices:\n237 nvidia-caps\n";
    assert_eq!(char_major(text, "nvidia-caps"), Some(237));
    assert_eq!(char_major(text, "nvidia-uvm"), None);
}

#[test]
fn the_repo_sim_root_lists_mig_caps_by_the_driver_formula() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root");
    let found = discover(&root);
    for gpu in 0..8u32 {
        for gi in 0..15u32 {
            let [g, c] = found.mig_cap_nodes(gpu, gi, 0).unwrap();
            assert_eq!(g.minor, 3 + 135 * gpu + 9 * gi);
            assert_eq!(c.minor, g.minor + 1);
            assert!(g.host.exists() && c.host.exists(), "{g:?} {c:?}");
        }
    }
    assert_eq!(found.mig_caps.minors.len(), 2 + 8 * 15 * 9);
    assert_eq!(found.mig_caps.major, None);
}
