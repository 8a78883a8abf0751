//! What NVIDIA's nvidia-smi printed on real GPUs, for the models whose
//! tables cite a printout: the rows of `nvidia-smi mig -lgip` seen in
//! NVIDIA's own threads (fields not visible in the source are `None`), and
//! the facts of `nvidia-smi -q -x` captures from real nodes
//! (NVIDIA/k8s-test-infra `tests/e2e/go/assertions/nvidiasmi/testdata/hardware/`
//! at 3b2b865d, 2026-08-21, identifiers scrubbed by NVIDIA). Only values,
//! each with its source; `fidelity` holds nvidia-smi over the library to
//! them, field by field.

/// One `-lgip` row as printed.
#[derive(Debug, Clone, Copy)]
pub struct LgipRow {
    pub name: &'static str,
    pub id: u32,
    /// Instances Free/Total on an empty GPU: the total.
    pub total: u32,
    /// Memory, GiB, as printed (two decimals).
    pub gib: &'static str,
    pub sm: u32,
    pub dec: u32,
    pub enc: u32,
    /// The second line (CE, JPEG, OFA), where the source shows it.
    pub ce_jpeg_ofa: Option<(u32, u32, u32)>,
}

/// A printout of `nvidia-smi mig -lgip` for one model.
#[derive(Debug, Clone, Copy)]
pub struct Lgip {
    /// The simulated model (its config string).
    pub model: &'static str,
    pub source: &'static str,
    pub rows: &'static [LgipRow],
    /// Rows of memory only (a thread that quoted the GiB and nothing else).
    pub memory_only: &'static [(&'static str, &'static str)],
}

const fn row(
    name: &'static str,
    id: u32,
    total: u32,
    gib: &'static str,
    [sm, dec, enc]: [u32; 3],
    ce_jpeg_ofa: Option<(u32, u32, u32)>,
) -> LgipRow {
    LgipRow {
        name,
        id,
        total,
        gib,
        sm,
        dec,
        enc,
        ce_jpeg_ofa,
    }
}

pub const LGIP: &[Lgip] = &[
    Lgip {
        model: "H200-141GB",
        source: "NVIDIA/mig-parted#120 (KeithMnemonic, NVIDIA, 2024-09-04), an H200 node",
        rows: &[
            row("1g.18gb", 19, 7, "16.00", [16, 1, 0], Some((1, 1, 0))),
            row("1g.18gb+me", 20, 1, "16.00", [16, 1, 0], Some((1, 1, 1))),
            row("1g.35gb", 15, 4, "32.25", [26, 1, 0], Some((1, 1, 0))),
            row("2g.35gb", 14, 3, "32.25", [32, 2, 0], Some((2, 2, 0))),
            row("3g.71gb", 9, 2, "69.50", [60, 3, 0], Some((3, 3, 0))),
            row("4g.71gb", 5, 1, "69.50", [64, 4, 0], Some((4, 4, 0))),
            row("7g.141gb", 0, 1, "139.75", [132, 7, 0], Some((8, 7, 1))),
        ],
        memory_only: &[],
    },
    Lgip {
        model: "H100-NVL-94GB",
        source: "NVIDIA/gpu-operator#900 and #903 (tariq1890, NVIDIA, 2024-08-05); the 3g.47gb \
                 memory from NVIDIA/mig-parted#101 (2024-07-25)",
        rows: &[
            row("1g.12gb", 19, 7, "10.75", [16, 1, 0], Some((1, 1, 0))),
            row("1g.12gb+me", 20, 1, "10.75", [16, 1, 0], Some((1, 1, 1))),
            row("1g.24gb", 15, 4, "21.62", [26, 1, 0], Some((1, 1, 0))),
            row("2g.24gb", 14, 3, "21.62", [32, 2, 0], None),
        ],
        memory_only: &[("3g.47gb", "46.38")],
    },
    Lgip {
        model: "B200-180GB",
        source: "NVIDIA/gpu-operator#1351 and NVIDIA/mig-parted#187 (tariq1890, NVIDIA, \
                 2025-03-20)",
        rows: &[
            row("1g.23gb", 19, 7, "20.50", [18, 1, 0], Some((2, 1, 0))),
            row("1g.23gb+me", 20, 1, "20.50", [18, 1, 0], Some((2, 1, 1))),
            row("1g.45gb", 15, 4, "44.25", [30, 1, 0], Some((2, 1, 0))),
            row("2g.45gb", 14, 3, "44.25", [36, 2, 0], Some((4, 2, 0))),
        ],
        memory_only: &[],
    },
    Lgip {
        model: "GB200-186GB",
        source: "NVIDIA/mig-parted#227 (KeithMnemonic, NVIDIA, 2025-08-07, production boards)",
        rows: &[
            row("1g.23gb", 19, 7, "22.00", [18, 1, 0], Some((2, 1, 0))),
            row("1g.23gb+me", 20, 1, "22.00", [18, 1, 0], Some((2, 1, 1))),
            row("1g.47gb", 15, 4, "45.50", [32, 1, 0], Some((2, 1, 0))),
            row("2g.47gb", 14, 3, "45.50", [38, 2, 0], None),
        ],
        memory_only: &[],
    },
    Lgip {
        model: "RTX-PRO-6000-96GB",
        source: "bigstack-oss/cubecos#312 (a Server Edition, driver 580.105.06, 2026-01)",
        rows: &[
            row("1g.24gb", 14, 4, "23.12", [46, 1, 1], Some((1, 1, 0))),
            row("1g.24gb+me", 21, 1, "23.12", [46, 1, 1], Some((1, 1, 1))),
            row("1g.24gb+gfx", 47, 4, "23.12", [46, 1, 1], Some((1, 1, 0))),
        ],
        memory_only: &[],
    },
];

/// Facts of one GPU of a real node's `nvidia-smi -q -x`.
#[derive(Debug, Clone, Copy)]
pub struct Query {
    /// The simulated model.
    pub model: &'static str,
    /// The simulated instance type that stands for the capture's node
    /// (its NVLink fabric); `None`: a plain list of the model.
    pub instance: Option<&'static str>,
    pub file: &'static str,
    pub driver: &'static str,
    pub product_name: &'static str,
    pub architecture: &'static str,
    /// PCI device id as `-q` prints it (`0x<id>10DE`).
    pub device_id: &'static str,
    pub fb_total_mib: u64,
    /// Whether the GPU has MIG (`N/A` in the MIG mode otherwise).
    pub mig: bool,
    /// The first GPU's bus id (`00000000:06:00.0`), where the capture's
    /// node is that very instance type (AWS's, named in the capture).
    pub bus_id: Option<&'static str>,
    /// Fabric state and clique id (`N/A` without a fabric).
    pub fabric: Option<(&'static str, u32)>,
}

/// One capture's first GPU; `instance` and `bus_id` as above.
#[expect(clippy::too_many_arguments, reason = "one row of a table of facts")]
const fn query(
    model: &'static str,
    instance: Option<&'static str>,
    (file, driver): (&'static str, &'static str),
    (product_name, architecture, device_id): (&'static str, &'static str, &'static str),
    fb_total_mib: u64,
    mig: bool,
    bus_id: Option<&'static str>,
    fabric: Option<(&'static str, u32)>,
) -> Query {
    Query {
        model,
        instance,
        file,
        driver,
        product_name,
        architecture,
        device_id,
        fb_total_mib,
        mig,
        bus_id,
        fabric,
    }
}

pub const QUERY: &[Query] = &[
    // Lambda's gpu_1x_a100_sxm4: one A100, no NVLink fabric.
    query(
        "A100-40GB",
        None,
        ("qx-a100.xml", "570.148.08"),
        ("NVIDIA A100-SXM4-40GB", "Ampere", "0x20B010DE"),
        40960,
        true,
        None,
        None,
    ),
    // An 8-GPU HGX H100 (NVSwitch: a completed fabric, zero cluster);
    // p5.48xlarge is the simulator's HGX H100.
    query(
        "H100-80GB",
        Some("p5.48xlarge"),
        ("qx-h100.xml", "580.105.08"),
        ("NVIDIA H100 80GB HBM3", "Hopper", "0x233010DE"),
        81559,
        true,
        None,
        Some(("Completed", 0)),
    ),
    // An 8-GPU HGX B200; p6-b200.48xlarge is the simulator's.
    query(
        "B200-180GB",
        Some("p6-b200.48xlarge"),
        ("qx-b200.xml", "580.105.08"),
        ("NVIDIA B200", "Blackwell", "0x290110DE"),
        183_359,
        true,
        None,
        Some(("Completed", 0)),
    ),
    query(
        "GB200-186GB",
        Some("p6e-gb200.36xlarge"),
        ("qx-gb200.xml", "580.173.02"),
        ("NVIDIA GB200", "Blackwell", "0x294110DE"),
        189_471,
        true,
        Some("00000000:29:00.0"),
        Some(("Completed", 2)),
    ),
    // A 4-GPU GB300 node (the capture names no instance type).
    query(
        "GB300-288GB",
        Some("p6e-gb300.36xlarge"),
        ("qx-gb300.xml", "580.173.02"),
        ("NVIDIA GB300", "Blackwell", "0x31C210DE"),
        284_208,
        true,
        None,
        Some(("Completed", 32766)),
    ),
    // AWS g6e.2xlarge (the simulator has g6e.xlarge: one L40S as well).
    query(
        "L40S-48GB",
        Some("g6e.xlarge"),
        ("qx-l40s.xml", "595.91.07"),
        ("NVIDIA L40S", "Ada Lovelace", "0x26B910DE"),
        46068,
        false,
        None,
        None,
    ),
    query(
        "T4-16GB",
        Some("g4dn.xlarge"),
        ("qx-t4.xml", "595.91.07"),
        ("Tesla T4", "Turing", "0x1EB810DE"),
        15360,
        false,
        Some("00000000:00:1E.0"),
        None,
    ),
];
