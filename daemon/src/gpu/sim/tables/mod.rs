//! The per-model numbers: product facts and full MIG GPU-instance profile
//! tables, one file per GPU family (`ampere`, `hopper`, `blackwell`, and
//! `no_mig` for the inference GPUs without MIG).
//!
//! Data only, transcribed from NVIDIA's documents and from what real GPUs
//! print; each [`ModelSpec::source`] names the documents with their
//! versions and dates, [`ModelSpec::driver`] the driver the per-profile
//! figures were printed on, and every value no source confirms is filled in
//! all the same and says so in a comment beside it. `memory_mib` is the
//! `nvidia-smi mig -lgip` "Memory GiB" × 1024 (or NVML's `memorySizeMB`),
//! which moves by 128 to 1536 MiB between drivers (B200's 1g.23gb: 22.00
//! GiB in January 2025, 20.50 from March), so a table takes all its rows
//! from one printout where it can. The MIG planner reads the same tables,
//! so they stay plain `'static` data; `tests/tables.rs` holds every table to
//! the rules NVML's tables obey.

mod ampere;
mod blackwell;
mod hopper;
mod no_mig;

pub(super) use ampere::{A30_24GB, A100_40GB, A100_80GB};
pub(super) use blackwell::{B200_180GB, B300_288GB, GB200_186GB, GB300_288GB, RTX_PRO_6000_96GB};
pub(super) use hopper::{H20_96GB, H100_80GB, H100_NVL_94GB, H200_141GB};
pub(super) use no_mig::{A10G_24GB, L4_24GB, L40S_48GB, T4_16GB, T4G_16GB};

use super::models::{Engines, Placement};

const fn at(start: u32, size: u32) -> Placement {
    Placement { start, size }
}

/// Engines of a GPU without NVENC (the datacenter parts): copy, NVDEC,
/// NVJPG, OFA.
const fn eng(copy: u32, decoders: u32, jpeg: u32, ofa: u32) -> Engines {
    eng_enc(copy, decoders, 0, jpeg, ofa)
}

/// Engines with NVENC (the RTX PRO): copy, NVDEC, NVENC, NVJPG, OFA.
const fn eng_enc(copy: u32, decoders: u32, encoders: u32, jpeg: u32, ofa: u32) -> Engines {
    Engines {
        copy,
        decoders,
        encoders,
        jpeg,
        ofa,
    }
}

// Placements of the 8-memory-slice GPUs (A100, H100, H100 NVL, H200, and by
// the same profile ids H20, B200, B300, GB200, GB300): the MIG user guide's
// `nvidia-smi mig -lgipp` example.
const P8_1G: &[Placement] = &[
    at(0, 1),
    at(1, 1),
    at(2, 1),
    at(3, 1),
    at(4, 1),
    at(5, 1),
    at(6, 1),
];
const P8_1G_2M: &[Placement] = &[at(0, 2), at(2, 2), at(4, 2), at(6, 2)];
const P8_2G: &[Placement] = &[at(0, 2), at(2, 2), at(4, 2)];
const P8_3G: &[Placement] = &[at(0, 4), at(4, 4)];
const P8_4G: &[Placement] = &[at(0, 4)];
const P8_7G: &[Placement] = &[at(0, 8)];

// Placements of the 4-memory-slice GPUs (A30 from its `-lgipp`; the RTX PRO
// 6000 by the same rule, unconfirmed).
const P4_1G: &[Placement] = &[at(0, 1), at(1, 1), at(2, 1), at(3, 1)];
const P4_2G: &[Placement] = &[at(0, 2), at(2, 2)];
const P4_4G: &[Placement] = &[at(0, 4)];

/// NVML_BRAND_NVIDIA (14) as go-nvlib's `GetBrandAsString` prints it, the
/// `brand` attribute NVIDIA's DRA driver publishes.
const BRAND: &str = "Nvidia";
