//! Where each simulated GPU sits on the PCI bus: its bus id, PCIe root
//! complex and NUMA node, as NVML (`nvmlDeviceGetPciInfo_v3`) and the
//! kernel's sysfs would give them on an 8-GPU PCIe server with two sockets.
//! Pure.
//!
//! The layout: GPUs go four to a PCIe switch, one switch under each root
//! complex, in index order. The root complexes of a PCI domain are on buses
//! 0x00, 0x80, 0x40, 0xc0 (in that order); the switch's upstream port takes
//! bus root+1, its downstream ports root+2, and the GPUs behind it buses
//! root+3 to root+6, function 0. Sixteen GPUs fill a domain; the next opens
//! domain 1. Root complex `k` of the node belongs to NUMA node
//! `k % numa_nodes`. So an 8-GPU node has GPUs 0-3 at
//! 0000:03:00.0..0000:06:00.0 under `pci0000:00` on NUMA node 0 and GPUs 4-7
//! at 0000:83:00.0..0000:86:00.0 under `pci0000:80` on NUMA node 1; a node of
//! up to four GPUs has them all under one root on node 0. With
//! `numa_nodes = 0` the kernel reports no NUMA affinity (`numa_node` -1, as
//! in many VMs) and no NUMA node is given.
//!
//! A cloud instance's shape (`instances`) picks a [`PciLayout`] of its own
//! instead ([`place_in`]): GPUs behind switches a few to a root, GPUs flat
//! on the root bus of one root complex (AWS Nitro's G instances), or each
//! GPU in a PCI domain of its own (Grace's C2C-attached GPUs). There the
//! NUMA nodes take the GPUs in contiguous blocks: the first half of an
//! 8-GPU two-socket node on node 0.

/// GPUs behind one PCIe switch, hence under one root complex.
pub const GPUS_PER_ROOT: u32 = 4;

/// NUMA nodes of the default simulated node: two sockets.
pub const DEFAULT_NUMA_NODES: u32 = 2;

/// Root-complex buses of one PCI domain, in the order GPUs fill them.
const ROOT_BUSES: [u32; 4] = [0x00, 0x80, 0x40, 0xc0];

/// Root complexes of one PCI domain in a [`PciLayout::Switched`] layout,
/// their buses spread evenly over the domain's 256.
const ROOTS_PER_DOMAIN: u32 = 4;

/// First GPU bus below a root: root port, switch upstream and downstream
/// ports take the buses before it.
const FIRST_GPU_BUS: u32 = 3;

/// A GPU's place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciPlace {
    /// "dddd:bb:00.0", lowercase, as the boundary carries it.
    pub bus_id: String,
    /// "pci<domain>:<bus>" of the root complex.
    pub pcie_root: String,
    /// The socket's NUMA node; `None` without NUMA affinity.
    pub numa_node: Option<u32>,
}

/// The place of the GPU at `index` on a node with `numa_nodes` NUMA nodes.
pub fn place(index: u32, numa_nodes: u32) -> PciPlace {
    let root_index = index / GPUS_PER_ROOT;
    let per_domain = u32::try_from(ROOT_BUSES.len()).unwrap_or(1);
    let domain = root_index / per_domain;
    let root_bus = ROOT_BUSES
        .get(usize::try_from(root_index % per_domain).unwrap_or(0))
        .copied()
        .unwrap_or(0);
    let bus = root_bus + FIRST_GPU_BUS + index % GPUS_PER_ROOT;
    PciPlace {
        bus_id: format!("{domain:04x}:{bus:02x}:00.0"),
        pcie_root: format!("pci{domain:04x}:{root_bus:02x}"),
        numa_node: root_index.checked_rem(numa_nodes),
    }
}

/// How an instance's GPUs sit on the PCI bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PciLayout {
    /// `per_root` GPUs behind a PCIe switch under each root complex, the
    /// roots numbered as [`place`] numbers them.
    Switched {
        /// GPUs under one root complex.
        per_root: u32,
    },
    /// Every GPU a device on bus 00 of root complex `pci0000:00`, at device
    /// numbers `first_device`, `first_device + 1`, ...
    Flat {
        /// The first GPU's device number.
        first_device: u32,
    },
    /// Each GPU at `dddd:01:00.0`, alone in the PCI domain `domains[i]`.
    Domains {
        /// The PCI domain of each GPU, in index order.
        domains: &'static [u32],
    },
}

/// The place of GPU `index` of `count` laid out as `layout` on a node with
/// `numa_nodes` NUMA nodes, which take the GPUs in contiguous blocks (the
/// GPUs of one root complex on one node).
pub fn place_in(index: u32, count: u32, layout: PciLayout, numa_nodes: u32) -> PciPlace {
    let (bus_id, pcie_root, group, groups) = match layout {
        PciLayout::Switched { per_root } => {
            let per_root = per_root.max(1);
            let roots = count.div_ceil(per_root).max(1);
            let root = index / per_root;
            let per_domain = roots.min(ROOTS_PER_DOMAIN);
            let domain = root / per_domain;
            let root_bus = (root % per_domain) * (0x100 / per_domain);
            let bus = root_bus + FIRST_GPU_BUS + index % per_root;
            (
                format!("{domain:04x}:{bus:02x}:00.0"),
                format!("pci{domain:04x}:{root_bus:02x}"),
                root,
                roots,
            )
        }
        PciLayout::Flat { first_device } => (
            format!("0000:00:{:02x}.0", first_device.saturating_add(index)),
            "pci0000:00".to_owned(),
            index,
            count,
        ),
        PciLayout::Domains { domains } => {
            let domain = usize::try_from(index)
                .ok()
                .and_then(|i| domains.get(i))
                .copied()
                .unwrap_or(index);
            (
                format!("{domain:04x}:01:00.0"),
                format!("pci{domain:04x}:00"),
                index,
                count,
            )
        }
    };
    let numa_node = (numa_nodes > 0).then(|| {
        let block = u64::from(group) * u64::from(numa_nodes) / u64::from(groups.max(1));
        u32::try_from(block).unwrap_or(0)
    });
    PciPlace {
        bus_id,
        pcie_root,
        numa_node,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::{GPUS_PER_ROOT, PciLayout, PciPlace, place, place_in};

    fn at(bus_id: &str, pcie_root: &str, numa_node: Option<u32>) -> PciPlace {
        PciPlace {
            bus_id: bus_id.to_owned(),
            pcie_root: pcie_root.to_owned(),
            numa_node,
        }
    }

    #[test]
    fn an_eight_gpu_node_has_two_roots_on_two_sockets() {
        let places: Vec<PciPlace> = (0..8).map(|i| place(i, 2)).collect();
        assert_eq!(places[0], at("0000:03:00.0", "pci0000:00", Some(0)));
        assert_eq!(places[3], at("0000:06:00.0", "pci0000:00", Some(0)));
        assert_eq!(places[4], at("0000:83:00.0", "pci0000:80", Some(1)));
        assert_eq!(places[7], at("0000:86:00.0", "pci0000:80", Some(1)));
    }

    #[test]
    fn more_roots_alternate_sockets_and_sixteen_fill_a_domain() {
        assert_eq!(place(8, 2), at("0000:43:00.0", "pci0000:40", Some(0)));
        assert_eq!(place(12, 2), at("0000:c3:00.0", "pci0000:c0", Some(1)));
        assert_eq!(place(16, 2), at("0001:03:00.0", "pci0001:00", Some(0)));
        assert_eq!(place(99, 2), at("0006:06:00.0", "pci0006:00", Some(0)));
    }

    #[test]
    fn no_numa_nodes_means_no_affinity_and_one_means_all_on_it() {
        assert!((0..20).all(|i| place(i, 0).numa_node.is_none()));
        assert!((0..20).all(|i| place(i, 1).numa_node == Some(0)));
        assert_eq!(place(4, 4).numa_node, Some(1));
        assert_eq!(place(12, 4).numa_node, Some(3));
    }

    #[test]
    fn switched_layouts_put_their_groups_on_roots_and_halves_on_sockets() {
        let pairs: Vec<PciPlace> = (0..8)
            .map(|i| place_in(i, 8, PciLayout::Switched { per_root: 2 }, 2))
            .collect();
        assert_eq!(pairs[0], at("0000:03:00.0", "pci0000:00", Some(0)));
        assert_eq!(pairs[1], at("0000:04:00.0", "pci0000:00", Some(0)));
        assert_eq!(pairs[2], at("0000:43:00.0", "pci0000:40", Some(0)));
        assert_eq!(pairs[3].numa_node, Some(0));
        assert_eq!(pairs[4], at("0000:83:00.0", "pci0000:80", Some(1)));
        assert_eq!(pairs[7], at("0000:c4:00.0", "pci0000:c0", Some(1)));
        let alone = |i| place_in(i, 8, PciLayout::Switched { per_root: 1 }, 2);
        assert_eq!(alone(3), at("0000:c3:00.0", "pci0000:c0", Some(0)));
        assert_eq!(alone(4), at("0001:03:00.0", "pci0001:00", Some(1)));
        // Four to a root is the default layout's place.
        for i in 0..8 {
            assert_eq!(
                place_in(i, 8, PciLayout::Switched { per_root: 4 }, 2),
                place(i, 2)
            );
        }
    }

    #[test]
    fn flat_and_domain_layouts() {
        let flat = PciLayout::Flat { first_device: 0x16 };
        assert_eq!(
            place_in(0, 8, flat, 2),
            at("0000:00:16.0", "pci0000:00", Some(0))
        );
        assert_eq!(place_in(3, 8, flat, 2).numa_node, Some(0));
        assert_eq!(
            place_in(4, 8, flat, 2),
            at("0000:00:1a.0", "pci0000:00", Some(1))
        );
        assert_eq!(
            place_in(0, 1, PciLayout::Flat { first_device: 0x1e }, 1),
            at("0000:00:1e.0", "pci0000:00", Some(0))
        );
        let grace = PciLayout::Domains {
            domains: &[0x8, 0x9, 0x18, 0x19],
        };
        assert_eq!(
            place_in(0, 4, grace, 2),
            at("0008:01:00.0", "pci0008:00", Some(0))
        );
        assert_eq!(place_in(1, 4, grace, 2).numa_node, Some(0));
        assert_eq!(
            place_in(3, 4, grace, 2),
            at("0019:01:00.0", "pci0019:00", Some(1))
        );
        assert_eq!(place_in(3, 4, grace, 0).numa_node, None);
    }

    proptest! {
        /// Every GPU has its own canonical bus id, sits under the root of its
        /// group of four and on the bus range of that root, and GPUs under one
        /// root share a NUMA node.
        #[test]
        fn places_are_distinct_and_consistent(count in 1u32..200, numa in 0u32..5) {
            let places: Vec<PciPlace> = (0..count).map(|i| place(i, numa)).collect();
            let buses: BTreeSet<&str> = places.iter().map(|p| p.bus_id.as_str()).collect();
            prop_assert_eq!(buses.len(), places.len());
            let mut roots: BTreeMap<&str, (Option<u32>, u32)> = BTreeMap::new();
            for (i, p) in (0u32..).zip(&places) {
                prop_assert!(p.bus_id.ends_with(":00.0") && p.bus_id.len() == 12);
                let domain = &p.bus_id[..4];
                let root_bus = u32::from_str_radix(&p.pcie_root[8..], 16).unwrap();
                let bus = u32::from_str_radix(&p.bus_id[5..7], 16).unwrap();
                prop_assert_eq!(&p.pcie_root[3..7], domain);
                prop_assert!(bus > root_bus && bus < root_bus + 0x40);
                let entry = roots.entry(p.pcie_root.as_str()).or_insert((p.numa_node, 0));
                prop_assert_eq!(entry.0, p.numa_node);
                entry.1 += 1;
                prop_assert_eq!(p.numa_node, (i / GPUS_PER_ROOT).checked_rem(numa));
            }
            prop_assert!(roots.values().all(|(_, n)| *n <= GPUS_PER_ROOT));
        }
    }
}
