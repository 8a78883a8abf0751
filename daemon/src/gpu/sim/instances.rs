//! The shapes of the cloud instances the simulator can play
//! (`[backend.sim] instance`): which GPUs, how many, on what CPU
//! architecture, how they sit on the PCI bus and the NUMA nodes, and their
//! NVLink. Data only; `SimBackend::with_shape` turns a shape into the GPUs'
//! places, links and fabric.
//!
//! AWS's instance-type tables (EC2 DescribeInstanceTypes, 2026-08, as
//! aws/karpenter-provider-aws generates them) give the GPU counts, vCPUs and
//! CPUs; AWS's own hardware topologies (the lstopo files of aws/aws-ofi-nccl
//! for p6-b200, p6-b300, p6e-gb200 and g5.48xlarge, and its NCCL topology
//! files for p5.48xlarge, p4d.24xlarge and p4de.24xlarge) give the sockets
//! and where the GPUs sit; NVIDIA's HGX B200 and GB200 NVL72 specifications
//! give NVLink 5 at 18 links per GPU through NVSwitch. The bus numbers are
//! the layout's own, not AWS's: what a shape keeps is the grouping (how many
//! GPUs behind each switch, which socket). Each shape's `source` says which
//! of its facts no source confirms.

use super::SimModel;
use super::topology::PciLayout;

/// The CPU architecture of an instance, as Debian names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
pub enum CpuArch {
    /// x86_64.
    #[strum(to_string = "amd64")]
    Amd64,
    /// aarch64 (Graviton, Grace).
    #[strum(to_string = "arm64")]
    Arm64,
}

/// The NVLink fabric an instance's GPUs register with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FabricKind {
    /// NVSwitch inside the node: registration completes with a zero
    /// cluster UUID (no clique).
    NvSwitch,
    /// A multi-node NVLink domain (GB200 NVL72): the GPUs of every node of
    /// the domain share a cluster UUID and clique (`[backend.sim.fabric]`).
    MultiNode,
}

/// One instance type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceShape {
    /// The instance type, e.g. "p6-b200.48xlarge".
    pub name: &'static str,
    /// Its CPU architecture.
    pub arch: CpuArch,
    /// Its vCPUs.
    pub vcpus: u32,
    /// Its GPU model.
    pub model: SimModel,
    /// How many GPUs.
    pub gpus: u32,
    /// NUMA nodes (CPU sockets).
    pub numa_nodes: u32,
    /// Where the GPUs sit on the PCI bus.
    pub layout: PciLayout,
    /// Active NVLink links per GPU; 0 without NVLink.
    pub nvlink_links: u32,
    /// The NVLink fabric, if any.
    pub fabric: Option<FabricKind>,
    /// Where the facts come from, and which are inferred.
    pub source: &'static str,
}

impl InstanceShape {
    /// The shape of instance type `name`.
    pub fn named(name: &str) -> Option<&'static InstanceShape> {
        SHAPES.iter().find(|s| s.name == name)
    }

    /// Every instance type's name, for messages.
    pub fn names() -> Vec<&'static str> {
        SHAPES.iter().map(|s| s.name).collect()
    }

    /// Every shape, by family then size.
    pub fn all() -> &'static [InstanceShape] {
        SHAPES
    }
}

/// The one GPU of a small Nitro G instance sits at 00:1e.0.
const FLAT_ONE: PciLayout = PciLayout::Flat { first_device: 0x1e };
/// Four GPUs end at 00:1e.0: 00:1b.0 to 00:1e.0.
const FLAT_FOUR: PciLayout = PciLayout::Flat { first_device: 0x1b };

const G_INFERRED: &str = "PCI places and the NUMA split of this size inferred (Nitro G instances put \
    their GPUs flat on the root bus, as g5.48xlarge's topology shows); no NVLink (AWS: none on G \
    instances)";

const fn g(
    name: &'static str,
    model: SimModel,
    vcpus: u32,
    gpus: u32,
    numa_nodes: u32,
    layout: PciLayout,
) -> InstanceShape {
    InstanceShape {
        name,
        arch: CpuArch::Amd64,
        vcpus,
        model,
        gpus,
        numa_nodes,
        layout,
        nvlink_links: 0,
        fabric: None,
        source: G_INFERRED,
    }
}

/// The shape of AWS's GB200 instance, which its GB300 instance follows.
const GB200_SHAPE: InstanceShape = InstanceShape {
    name: "p6e-gb200.36xlarge",
    arch: CpuArch::Arm64,
    vcpus: 144,
    model: SimModel::GB200_186GB,
    gpus: 4,
    numa_nodes: 2,
    layout: PciLayout::Switched { per_root: 1 },
    nvlink_links: 18,
    fabric: Some(FabricKind::MultiNode),
    source: "AWS (4 GB200 on 2 Grace CPUs, 144 vCPU, aarch64, sold in UltraServers of 18 \
             instances, one NVL72 NVLink domain through IMEX; AWS's lstopo: GPUs 0-1 on socket \
             0, 2-3 on socket 1); NV18 per GPU (NVIDIA GB200 NVL72); the GPUs in PCI domain 0, \
             each on a bus of its own, as `nvidia-smi -q -x` on a p6e-gb200.36xlarge printed \
             them (NVIDIA/k8s-test-infra qx-gb200.xml, driver 580.173.02: 0000:29, 3F, 9C and B2; \
             bare-metal Grace nodes put each in a domain of its own instead); root complexes \
             inferred",
};

/// An 8-GPU HGX instance on two x86 sockets, its GPUs `per_root` to a PCIe
/// switch and `links` NVLink links each through NVSwitch.
const fn hgx(
    name: &'static str,
    model: SimModel,
    vcpus: u32,
    per_root: u32,
    links: u32,
    source: &'static str,
) -> InstanceShape {
    InstanceShape {
        name,
        arch: CpuArch::Amd64,
        vcpus,
        model,
        gpus: 8,
        numa_nodes: 2,
        layout: PciLayout::Switched { per_root },
        nvlink_links: links,
        fabric: Some(FabricKind::NvSwitch),
        source,
    }
}

static SHAPES: &[InstanceShape] = &[
    InstanceShape {
        name: "p6-b200.48xlarge",
        arch: CpuArch::Amd64,
        vcpus: 192,
        model: SimModel::B200_180GB,
        gpus: 8,
        numa_nodes: 2,
        layout: PciLayout::Switched { per_root: 2 },
        nvlink_links: 18,
        fabric: Some(FabricKind::NvSwitch),
        source: "EC2 (8 B200, 192 vCPU, 2 Xeon Platinum 8559C, 2 NUMA nodes: AWS's lstopo); GPUs two \
                 to a PCIe bridge (lstopo), two bridges per socket inferred; NVLink 5, 18 links per \
                 GPU through NVSwitch (NVIDIA HGX B200)",
    },
    InstanceShape {
        name: "p6-b300.48xlarge",
        arch: CpuArch::Amd64,
        vcpus: 192,
        model: SimModel::B300_288GB,
        gpus: 8,
        numa_nodes: 2,
        layout: PciLayout::Switched { per_root: 1 },
        nvlink_links: 18,
        fabric: Some(FabricKind::NvSwitch),
        source: "EC2 (8 B300, 192 vCPU, 2 Xeon Platinum 8559C, 2 NUMA nodes: AWS's lstopo, one GPU per \
                 bridge); NVLink 5 through NVSwitch (NVIDIA HGX B300), 18 links inferred from HGX B200",
    },
    GB200_SHAPE,
    InstanceShape {
        name: "p6e-gb300.36xlarge",
        model: SimModel::GB300_288GB,
        source: "AWS announced P6e-GB300 UltraServers in December 2025, but no AWS table or topology \
                 of theirs was in reach: the shape is p6e-gb200.36xlarge's (4 GPUs on 2 Grace sockets, \
                 144 vCPU, arm64, one NVL72 NVLink domain through IMEX, the GPUs in PCI domain 0 as \
                 AWS's GB200 instance shows them). NVIDIA's capture of a 4-GPU GB300 node \
                 (NVIDIA/k8s-test-infra qx-gb300.xml, 2026-08-21, bare metal: PCI domains 0008, \
                 0009, 0018 and 0019, fabric registered with a clique) bears out 4 GPUs on 2 Graces; \
                 the instance name, vCPUs, NUMA split and PCI places inferred; NV18 per GPU as GB200 \
                 NVL72's",
        ..GB200_SHAPE
    },
    hgx(
        "p5.48xlarge",
        SimModel::H100_80GB,
        192,
        1,
        18,
        "EC2 (8 H100, 192 vCPU, AMD); AWS's NCCL topology of p5.48xlarge (aws/aws-ofi-nccl \
         8807ce1e, 2023-07): 2 NUMA nodes, 4 PCIe switches under each socket, one GPU and 4 NICs \
         behind each; NVLink 4 through NVSwitch (NVIDIA HGX H100); 18 links per GPU is NVIDIA's \
         900 GB/s at 50 GB/s a link, the count not read in a primary source",
    ),
    hgx(
        "p5e.48xlarge",
        SimModel::H200_141GB,
        192,
        1,
        18,
        "EC2 (8 H200, 192 vCPU, AMD); no AWS topology (aws-ofi-nccl has none for p5e): sockets, \
         NUMA split and one GPU per PCIe switch taken from p5.48xlarge; NVLink 4 through NVSwitch \
         (NVIDIA HGX H200), 18 links per GPU as on H100",
    ),
    hgx(
        "p5en.48xlarge",
        SimModel::H200_141GB,
        192,
        1,
        18,
        "EC2 (8 H200, 192 vCPU, Intel); no AWS topology (aws-ofi-nccl has none for p5en): sockets, \
         NUMA split and one GPU per PCIe switch taken from p5.48xlarge; NVLink 4 through NVSwitch \
         (NVIDIA HGX H200), 18 links per GPU as on H100",
    ),
    hgx(
        "p4d.24xlarge",
        SimModel::A100_40GB,
        96,
        2,
        12,
        "EC2 (8 A100 40GB, 96 vCPU, Intel); AWS's NCCL topology of p4d.24xlarge (aws/aws-ofi-nccl \
         topology/p4d-24xl-topo.xml): 2 sockets, 2 PCIe switches under each, 2 GPUs (PCI id \
         0x20b0) and a NIC behind each; NVLink 3 through the six NVSwitches of HGX A100 (NVIDIA's \
         Fabric Manager guide); 12 links per GPU is NVIDIA's 600 GB/s at 50 GB/s a link, the count \
         not read in a primary source",
    ),
    hgx(
        "p4de.24xlarge",
        SimModel::A100_80GB,
        96,
        2,
        12,
        "EC2 (8 A100 80GB, 96 vCPU, Intel); AWS's NCCL topology of p4de.24xlarge (aws/aws-ofi-nccl \
         topology/p4de-24xl-topo.xml): p4d's, with PCI id 0x20b2; NVLink 3 through the six \
         NVSwitches of HGX A100; 12 links per GPU as on p4d",
    ),
    g(
        "g7e.2xlarge",
        SimModel::RTX_PRO_6000_96GB,
        8,
        1,
        1,
        FLAT_ONE,
    ),
    g(
        "g7e.48xlarge",
        SimModel::RTX_PRO_6000_96GB,
        192,
        8,
        2,
        PciLayout::Switched { per_root: 4 },
    ),
    g("g6e.xlarge", SimModel::L40S_48GB, 4, 1, 1, FLAT_ONE),
    g("g6e.12xlarge", SimModel::L40S_48GB, 48, 4, 1, FLAT_FOUR),
    g("g6.xlarge", SimModel::L4_24GB, 4, 1, 1, FLAT_ONE),
    g("g6.12xlarge", SimModel::L4_24GB, 48, 4, 1, FLAT_FOUR),
    g("g5.xlarge", SimModel::A10G_24GB, 4, 1, 1, FLAT_ONE),
    InstanceShape {
        source: "EC2 (8 A10G, 192 vCPU); AWS's topology of g5.48xlarge (aws-ofi-nccl): GPUs at \
                 00:16.0-00:19.0 on NUMA node 0 and 00:1a.0-00:1d.0 on node 1; no NVLink",
        ..g(
            "g5.48xlarge",
            SimModel::A10G_24GB,
            192,
            8,
            2,
            PciLayout::Flat { first_device: 0x16 },
        )
    },
    g("g4dn.xlarge", SimModel::T4_16GB, 4, 1, 1, FLAT_ONE),
    g("g4dn.12xlarge", SimModel::T4_16GB, 48, 4, 1, FLAT_FOUR),
    InstanceShape {
        arch: CpuArch::Arm64,
        ..g("g5g.xlarge", SimModel::T4G_16GB, 4, 1, 1, FLAT_ONE)
    },
    InstanceShape {
        arch: CpuArch::Arm64,
        source: "EC2 (2 T4G, 64 vCPU, one Graviton2 socket); PCI places inferred; no NVLink",
        ..g(
            "g5g.16xlarge",
            SimModel::T4G_16GB,
            64,
            2,
            1,
            PciLayout::Flat { first_device: 0x1d },
        )
    },
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{FabricKind, InstanceShape};
    use crate::gpu::sim::topology::place_in;

    #[test]
    fn every_shape_is_named_once_and_found_by_its_name() {
        let names: BTreeSet<&str> = InstanceShape::all().iter().map(|s| s.name).collect();
        assert_eq!(names.len(), InstanceShape::all().len());
        for shape in InstanceShape::all() {
            assert_eq!(InstanceShape::named(shape.name), Some(shape));
        }
        assert_eq!(InstanceShape::named("p3.16xlarge"), None);
    }

    #[test]
    fn every_shape_places_its_gpus_apart_and_on_its_numa_nodes() {
        for shape in InstanceShape::all() {
            let places: Vec<_> = (0..shape.gpus)
                .map(|i| place_in(i, shape.gpus, shape.layout, shape.numa_nodes))
                .collect();
            let buses: BTreeSet<&str> = places.iter().map(|p| p.bus_id.as_str()).collect();
            assert_eq!(buses.len(), places.len(), "{}", shape.name);
            let nodes: BTreeSet<Option<u32>> = places.iter().map(|p| p.numa_node).collect();
            let expected: BTreeSet<Option<u32>> = (0..shape.numa_nodes).map(Some).collect();
            assert_eq!(nodes, expected, "{}", shape.name);
        }
    }

    #[test]
    fn nvlink_and_fabric_go_together() {
        for shape in InstanceShape::all() {
            assert_eq!(
                shape.nvlink_links > 0,
                shape.fabric.is_some(),
                "{}",
                shape.name
            );
            let multi_node = shape.fabric == Some(FabricKind::MultiNode);
            assert_eq!(
                multi_node,
                shape.name.starts_with("p6e-gb"),
                "{}",
                shape.name
            );
        }
    }
}
