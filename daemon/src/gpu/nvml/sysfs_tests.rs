//! The sysfs reader on fake trees in a temp dir, laid out as the kernel lays
//! them out: devices under `devices/pci<domain>:<bus>/...`, and relative links
//! to them in `bus/pci/devices/`.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::{Sysfs, TopologyError};

/// A fake sysfs in a temp dir.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("bus/pci/devices")).expect("bus folder");
        Self { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn sysfs(&self) -> Sysfs {
        Sysfs::new(self.root())
    }

    /// A device at `devices/<chain>` (root complex, bridges, the device),
    /// linked from `bus/pci/devices/<last>` as the kernel links it, with
    /// `numa_node` holding `numa` when given.
    fn device(&self, chain: &[&str], numa: Option<&str>) -> PathBuf {
        let rel: PathBuf = std::iter::once("devices")
            .chain(chain.iter().copied())
            .collect();
        let dir = self.root().join(&rel);
        std::fs::create_dir_all(&dir).expect("device folder");
        if let Some(numa) = numa {
            gpuslice_cdi::write_atomic(&dir, "numa_node", numa.as_bytes(), 0o444)
                .expect("numa_node");
        }
        let bus_id = chain.last().expect("a chain ends with the device");
        self.link(bus_id, &Path::new("../../..").join(&rel));
        dir
    }

    fn link(&self, bus_id: &str, target: &Path) {
        symlink(target, self.root().join("bus/pci/devices").join(bus_id)).expect("link");
    }
}

#[test]
fn the_root_complex_is_the_first_folder_under_devices() {
    let tree = Tree::new();
    tree.device(&["pci0000:3a", "0000:3a:00.0", "0000:3b:00.0"], Some("0\n"));
    assert_eq!(
        tree.sysfs().pcie_root("0000:3b:00.0").expect("readable"),
        "pci0000:3a"
    );
}

#[test]
fn a_gpu_behind_a_switch_has_the_root_above_every_bridge() {
    let tree = Tree::new();
    // Root port, switch upstream port, switch downstream port, the GPU.
    let chain = [
        "pci0000:80",
        "0000:80:01.0",
        "0000:81:00.0",
        "0000:82:08.0",
        "0000:83:00.0",
    ];
    tree.device(&chain, Some("1\n"));
    // The bridges are PCI devices too, with the same root.
    tree.link(
        "0000:81:00.0",
        Path::new("../../../devices/pci0000:80/0000:80:01.0/0000:81:00.0"),
    );
    let sysfs = tree.sysfs();
    assert_eq!(sysfs.pcie_root("0000:83:00.0").expect("gpu"), "pci0000:80");
    assert_eq!(
        sysfs.pcie_root("0000:81:00.0").expect("bridge"),
        "pci0000:80"
    );
    assert_eq!(sysfs.numa_node("0000:83:00.0").expect("numa"), Some(1));
}

#[test]
fn another_domain_has_its_own_root() {
    let tree = Tree::new();
    tree.device(&["pci0002:00", "0002:00:02.0", "0002:01:00.0"], Some("3"));
    let sysfs = tree.sysfs();
    assert_eq!(sysfs.pcie_root("0002:01:00.0").expect("gpu"), "pci0002:00");
    assert_eq!(sysfs.numa_node("0002:01:00.0").expect("numa"), Some(3));
}

#[test]
fn numa_node_minus_one_means_no_affinity() {
    let tree = Tree::new();
    tree.device(&["pci0000:00", "0000:00:04.0"], Some("-1\n"));
    assert_eq!(
        tree.sysfs().numa_node("0000:00:04.0").expect("readable"),
        None
    );
}

#[test]
fn a_missing_device_names_the_link() {
    let tree = Tree::new();
    let sysfs = tree.sysfs();
    let err = sysfs.pcie_root("0000:3b:00.0").expect_err("no such device");
    assert!(matches!(err, TopologyError::Link { .. }), "{err}");
    assert!(
        err.to_string().contains("bus/pci/devices/0000:3b:00.0"),
        "{err}"
    );
    let err = sysfs.numa_node("0000:3b:00.0").expect_err("no such device");
    assert!(matches!(err, TopologyError::Read { .. }), "{err}");
    assert!(err.to_string().contains("0000:3b:00.0/numa_node"), "{err}");
}

#[test]
fn a_device_without_numa_node_is_an_error_not_a_node() {
    let tree = Tree::new();
    tree.device(&["pci0000:00", "0000:00:04.0"], None);
    let err = tree.sysfs().numa_node("0000:00:04.0").expect_err("no file");
    assert!(matches!(err, TopologyError::Read { .. }), "{err}");
}

#[test]
fn numa_node_that_is_not_a_number_is_refused() {
    let tree = Tree::new();
    for text in ["", "zero", "1.5", "99999999999"] {
        let bus_id = "0000:00:04.0";
        let _ = std::fs::remove_file(tree.root().join("bus/pci/devices").join(bus_id));
        tree.device(&["pci0000:00", bus_id], Some(text));
        let err = tree.sysfs().numa_node(bus_id).expect_err(text);
        assert!(
            matches!(err, TopologyError::Parse { .. }),
            "{text:?}: {err}"
        );
    }
}

#[test]
fn a_link_outside_devices_pci_is_refused() {
    let tree = Tree::new();
    let cases: [(&str, PathBuf); 4] = [
        // A platform device, not under a PCI root.
        (
            "0000:00:01.0",
            PathBuf::from("../../../devices/platform/0000:00:01.0"),
        ),
        // A link whose last folder is another device.
        (
            "0000:00:02.0",
            PathBuf::from("../../../devices/pci0000:00/0000:00:03.0"),
        ),
        // Climbing above the sysfs root.
        (
            "0000:00:05.0",
            PathBuf::from("../../../../devices/pci0000:00/0000:00:05.0"),
        ),
        // An absolute link elsewhere.
        (
            "0000:00:06.0",
            PathBuf::from("/sys/devices/pci0000:00/0000:00:06.0"),
        ),
    ];
    for (bus_id, target) in cases {
        tree.link(bus_id, &target);
        let err = tree.sysfs().pcie_root(bus_id).expect_err(bus_id);
        assert!(
            matches!(err, TopologyError::Target { .. }),
            "{bus_id}: {err}"
        );
    }
}

#[test]
fn an_absolute_link_inside_the_tree_is_followed() {
    let tree = Tree::new();
    let dir = tree
        .root()
        .join("devices/pci0000:17/0000:17:00.0/0000:18:00.0");
    std::fs::create_dir_all(&dir).expect("device folder");
    tree.link("0000:18:00.0", &dir);
    assert_eq!(
        tree.sysfs().pcie_root("0000:18:00.0").expect("gpu"),
        "pci0000:17"
    );
}

#[test]
fn bus_ids_outside_the_extended_bdf_form_are_refused() {
    let tree = Tree::new();
    let sysfs = tree.sysfs();
    for bad in [
        "",
        "3b:00.0",
        "0000:3B:00.0",
        "00000000:3b:00.0",
        "0000:3b:00.00",
        "0000-3b:00.0",
        "0000:3b:00:0",
        "../../../etc",
    ] {
        assert!(
            matches!(sysfs.pcie_root(bad), Err(TopologyError::BusId { .. })),
            "{bad:?}"
        );
        assert!(
            matches!(sysfs.numa_node(bad), Err(TopologyError::BusId { .. })),
            "{bad:?}"
        );
    }
}
