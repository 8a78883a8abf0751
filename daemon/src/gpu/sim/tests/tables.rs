//! Invariants of the per-model tables, one test per model.
//!
//! The MIG planner trusts these tables, so a transcription slip must fail
//! here: placements inside the GPU, sizes equal to memory slices, the full
//! profile covering every slice, max counts as NVIDIA's tables state them, the
//! "+me" limit, and each name's memory suffix matching its MiB the way
//! go-nvlib derives it.

use crate::gpu::sim::models::{GiProfile, ModelSpec, SimModel};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn check_placements(spec: &ModelSpec) {
    for p in spec.gi_profiles {
        assert!(!p.placements.is_empty(), "{}: no placements", p.name);
        for pl in p.placements {
            assert_eq!(pl.size, p.memory_slices, "{}: placement size", p.name);
            assert!(
                pl.slices().end <= spec.memory_slices,
                "{}: {pl:?} off the GPU",
                p.name
            );
        }
        assert!(
            p.compute_slices <= spec.compute_slices,
            "{}: compute slices",
            p.name
        );
        assert!(p.sm_count <= spec.sm_count, "{}: SMs", p.name);
        assert!(
            p.memory_mib * MIB <= spec.memory_bytes,
            "{}: memory",
            p.name
        );
    }
}

/// The profile using every compute slice has one placement covering every memory slice.
fn check_full_profile(spec: &ModelSpec, name: &str) {
    let full = spec.profile(name).unwrap();
    assert_eq!(full.compute_slices, spec.compute_slices);
    assert_eq!(full.max_count, 1);
    assert_eq!(full.placements.len(), 1);
    assert_eq!(full.placements[0].slices(), 0..spec.memory_slices);
}

fn check_max_counts(spec: &ModelSpec, expected: &[(&str, u32)]) {
    let names: Vec<&str> = spec.gi_profiles.iter().map(|p| p.name).collect();
    let wanted: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, wanted, "profile list");
    for (name, max) in expected {
        assert_eq!(
            spec.profile(name).unwrap().max_count,
            *max,
            "{name}: max count"
        );
    }
}

/// Each "+me" profile allows one instance and shadows a plain profile of the same shape.
fn check_media_extensions(spec: &ModelSpec, expected_me_profiles: usize) {
    let me: Vec<&GiProfile> = spec
        .gi_profiles
        .iter()
        .filter(|p| p.media_extensions())
        .collect();
    assert_eq!(me.len(), expected_me_profiles);
    for p in me {
        assert_eq!(p.max_count, 1, "{}: +me max", p.name);
        let plain = spec.profile(p.name.trim_end_matches("+me")).unwrap();
        assert_eq!(plain.memory_slices, p.memory_slices);
        assert_eq!(plain.placements, p.placements);
        assert!(plain.max_count > 1, "{}: plain max", plain.name);
    }
}

/// go-nvlib `getMigMemorySizeGB`: round(ceil(mem/total·8)/8 · ceil(total GiB)).
fn check_names_match_memory(spec: &ModelSpec) {
    let total_mib = spec.memory_bytes / MIB;
    let total_gib = spec.memory_bytes.div_ceil(GIB);
    for p in spec.gi_profiles {
        let eighths = (p.memory_mib * 8).div_ceil(total_mib);
        let gb = (eighths * total_gib * 2 + 8) / 16;
        let suffix = format!("g.{gb}gb");
        assert!(p.name.contains(&suffix), "{}: expected {suffix}", p.name);
    }
}

fn check_unique_ids(spec: &ModelSpec) {
    for (i, a) in spec.gi_profiles.iter().enumerate() {
        for b in &spec.gi_profiles[i + 1..] {
            assert_ne!(a.id, b.id, "{} and {} share an id", a.name, b.name);
            assert_ne!(a.index, b.index, "{} and {} share an index", a.name, b.name);
        }
    }
}

fn check_common(model: SimModel, full: &str, max: &[(&str, u32)], me: usize) {
    let spec = model.spec();
    check_placements(spec);
    check_full_profile(spec, full);
    check_max_counts(spec, max);
    check_media_extensions(spec, me);
    check_names_match_memory(spec);
    check_unique_ids(spec);
}

fn eight_slice(names: [&str; 7]) -> Vec<(&str, u32)> {
    names.into_iter().zip([7, 1, 4, 3, 2, 1, 1]).collect()
}

/// 4g at 0 and 3g at 0 or 4: the halves of an 8-slice GPU.
fn check_eight_slice_halves(model: SimModel, four: &str, three: &str) {
    let spec = model.spec();
    let four = spec.profile(four).unwrap();
    let four: Vec<(u32, u32)> = four.placements.iter().map(|p| (p.start, p.size)).collect();
    assert_eq!(four, [(0, 4)]);
    let three = spec.profile(three).unwrap();
    let starts: Vec<u32> = three.placements.iter().map(|p| p.start).collect();
    assert_eq!(starts, [0, 4]);
}

/// The 8-slice models and their profiles in table order: 1g, 1g+me, 1g
/// with two memory slices, 2g, 3g, 4g, 7g.
#[rustfmt::skip]
const EIGHT_SLICE: &[(SimModel, [&str; 7])] = &[
    (SimModel::A100_40GB, ["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]),
    (SimModel::A100_80GB, ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]),
    (SimModel::H100_80GB, ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]),
    (SimModel::H100_NVL_94GB, ["1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"]),
    (SimModel::H200_141GB, ["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"]),
    // NVIDIA publishes the H20's names and counts only; the rest is inferred
    // (tables/hopper.rs), which these rules still hold.
    (SimModel::H20_96GB, ["1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"]),
    (SimModel::B200_180GB, ["1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"]),
    (SimModel::B300_288GB, ["1g.34gb", "1g.34gb+me", "1g.67gb", "2g.67gb", "3g.135gb", "4g.135gb", "7g.269gb"]),
    (SimModel::GB200_186GB, ["1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"]),
    // GB300's names and counts are NVIDIA's (mig-parted).
    (SimModel::GB300_288GB, ["1g.35gb", "1g.35gb+me", "1g.70gb", "2g.70gb", "3g.139gb", "4g.139gb", "7g.278gb"]),
];

/// Every 8-slice model passes the common checks, with its halves.
#[test]
fn tables_of_the_eight_slice_gpus() {
    for &(model, names) in EIGHT_SLICE {
        // Names the model in a failure's captured output.
        println!("{model}");
        check_common(model, names[6], &eight_slice(names), 1);
        check_eight_slice_halves(model, names[5], names[4]);
    }
}

#[test]
fn table_a30_24gb() {
    let max = [
        ("1g.6gb", 4),
        ("1g.6gb+me", 1),
        ("2g.12gb", 2),
        ("2g.12gb+me", 1),
        ("4g.24gb", 1),
    ];
    // A30 is the one model with two "+me" profiles (1g and 2g), each limited to 1.
    check_common(SimModel::A30_24GB, "4g.24gb", &max, 2);
}

#[test]
fn table_lookups_by_id() {
    let spec = SimModel::A30_24GB.spec();
    assert_eq!(spec.profile_by_id(14).unwrap().name, "1g.6gb");
    assert_eq!(
        SimModel::H100_80GB.spec().profile_by_id(14).unwrap().name,
        "2g.20gb"
    );
    assert!(spec.profile_by_id(19).is_none());
}

/// GB300's 1g.35gb is a one-memory-slice profile, where H200's 1g.35gb
/// takes two.
#[test]
fn table_gb300_288gb_1g_35gb_is_one_memory_slice() {
    let gb300 = SimModel::GB300_288GB.spec().profile("1g.35gb").unwrap();
    let h200 = SimModel::H200_141GB.spec().profile("1g.35gb").unwrap();
    assert_eq!((gb300.memory_slices, h200.memory_slices), (1, 2));
}

/// One row of a published `nvidia-smi mig -lgip`, as far as its source
/// shows it: memory in GiB to two decimals (nvidia-smi's MiB / 1024), and
/// the id, SMs and copy engines / NVDEC / NVJPG where the excerpt has them.
struct Printed {
    model: SimModel,
    name: &'static str,
    gib: &'static str,
    id_sms: Option<(u32, u32)>,
    engines: Option<[u32; 3]>,
    source: &'static str,
}

/// A row whose source shows every column.
const fn row(
    model: SimModel,
    name: &'static str,
    id_sms: (u32, u32),
    gib: &'static str,
    engines: [u32; 3],
    source: &'static str,
) -> Printed {
    Printed {
        model,
        name,
        gib,
        id_sms: Some(id_sms),
        engines: Some(engines),
        source,
    }
}

#[rustfmt::skip]
const PRINTED: &[Printed] = &[
    row(SimModel::H200_141GB, "1g.18gb", (19, 16), "16.00", [1, 1, 1], "mig-parted#120"),
    row(SimModel::H200_141GB, "1g.18gb+me", (20, 16), "16.00", [1, 1, 1], "mig-parted#120"),
    row(SimModel::H200_141GB, "1g.35gb", (15, 26), "32.25", [1, 1, 1], "mig-parted#120"),
    row(SimModel::H200_141GB, "2g.35gb", (14, 32), "32.25", [2, 2, 2], "mig-parted#120"),
    row(SimModel::H200_141GB, "3g.71gb", (9, 60), "69.50", [3, 3, 3], "mig-parted#120"),
    row(SimModel::H200_141GB, "4g.71gb", (5, 64), "69.50", [4, 4, 4], "mig-parted#120"),
    row(SimModel::H200_141GB, "7g.141gb", (0, 132), "139.75", [8, 7, 7], "mig-parted#120"),
    row(SimModel::H100_NVL_94GB, "1g.12gb", (19, 16), "10.75", [1, 1, 1], "gpu-operator#903"),
    row(SimModel::H100_NVL_94GB, "1g.12gb+me", (20, 16), "10.75", [1, 1, 1], "gpu-operator#903"),
    row(SimModel::H100_NVL_94GB, "1g.24gb", (15, 26), "21.62", [1, 1, 1], "gpu-operator#903"),
    Printed { model: SimModel::H100_NVL_94GB, name: "2g.24gb", gib: "21.62", id_sms: Some((14, 32)), engines: None, source: "gpu-operator#903" },
    Printed { model: SimModel::H100_NVL_94GB, name: "3g.47gb", gib: "46.38", id_sms: None, engines: None, source: "mig-parted#101" },
    row(SimModel::B200_180GB, "1g.23gb", (19, 18), "20.50", [2, 1, 1], "gpu-operator#1351"),
    row(SimModel::B200_180GB, "1g.23gb+me", (20, 18), "20.50", [2, 1, 1], "gpu-operator#1351"),
    row(SimModel::B200_180GB, "1g.45gb", (15, 30), "44.25", [2, 1, 1], "gpu-operator#1351"),
    row(SimModel::B200_180GB, "2g.45gb", (14, 36), "44.25", [4, 2, 2], "gpu-operator#1351"),
    row(SimModel::GB200_186GB, "1g.23gb", (19, 18), "22.00", [2, 1, 1], "mig-parted#227"),
    row(SimModel::GB200_186GB, "1g.23gb+me", (20, 18), "22.00", [2, 1, 1], "mig-parted#227"),
    row(SimModel::GB200_186GB, "1g.47gb", (15, 32), "45.50", [2, 1, 1], "mig-parted#227"),
    row(SimModel::GB200_186GB, "2g.47gb", (14, 38), "45.50", [4, 2, 2], "gpu-operator#1303"),
    row(SimModel::RTX_PRO_6000_96GB, "1g.24gb", (14, 46), "23.12", [1, 1, 1], "cubecos#312"),
    row(SimModel::RTX_PRO_6000_96GB, "2g.48gb", (5, 94), "46.50", [2, 2, 2], "cubecos#312"),
    Printed { model: SimModel::RTX_PRO_6000_96GB, name: "4g.96gb", gib: "93.38", id_sms: None, engines: None, source: "cubecos#312" },
];

/// The rows NVIDIA and others printed, as printed: a table edit that drifts
/// from its printout fails here, naming the source.
#[test]
fn printed_rows_are_the_printouts() {
    for printed in PRINTED {
        let Printed {
            model,
            name,
            gib,
            id_sms,
            engines,
            source,
        } = printed;
        let p = model.spec().profile(name).unwrap();
        let context = format!("{model} {name}: as {source} printed it");
        let shown = format!(
            "{:.2}",
            f64::from(u32::try_from(p.memory_mib).unwrap()) / 1024.0
        );
        assert_eq!(shown, *gib, "{context}");
        if let Some(id_sms) = id_sms {
            assert_eq!((p.id, p.sm_count), *id_sms, "{context}");
        }
        if let Some(engines) = engines {
            let e = p.engines;
            assert_eq!([e.copy, e.decoders, e.jpeg], *engines, "{context}");
        }
    }
}

/// The RTX PRO 6000 is the 4-slice Blackwell: 4 memory and 4 compute
/// slices (nothing may assume 7 or 8), its own profile ids, NVENC, and the
/// graphics and media variants of each size.
#[test]
fn table_rtx_pro_6000_96gb() {
    let max = [
        ("1g.24gb", 4),
        ("1g.24gb+me", 1),
        ("1g.24gb+gfx", 4),
        ("1g.24gb+me.all", 1),
        ("1g.24gb-me", 4),
        ("2g.48gb", 2),
        ("2g.48gb+gfx", 2),
        ("2g.48gb+me.all", 1),
        ("2g.48gb-me", 2),
        ("4g.96gb", 1),
        ("4g.96gb+gfx", 1),
    ];
    let model = SimModel::RTX_PRO_6000_96GB;
    check_common(model, "4g.96gb", &max, 1);
    check_full_profile(model.spec(), "4g.96gb+gfx");
    let spec = model.spec();
    assert_eq!((spec.memory_slices, spec.compute_slices), (4, 4));
    for p in spec.gi_profiles {
        let (variant, base) = match p.name.split_once(['+', '-']) {
            Some((base, _)) => (true, spec.profile(base).unwrap()),
            None => (false, p),
        };
        // Every variant is its base profile's size, SMs and memory.
        assert_eq!(
            (p.memory_slices, p.compute_slices, p.sm_count, p.memory_mib),
            (
                base.memory_slices,
                base.compute_slices,
                base.sm_count,
                base.memory_mib
            ),
            "{}",
            p.name
        );
        assert!(variant || p.engines.encoders > 0, "{}: NVENC", p.name);
        let no_media = p.name.ends_with("-me");
        let media = p.engines.decoders + p.engines.encoders + p.engines.jpeg + p.engines.ofa;
        assert_eq!(media == 0, no_media, "{}", p.name);
    }
}

/// The GPUs without MIG have no profile table and no slices.
#[test]
fn tables_of_the_gpus_without_mig_are_empty() {
    let without: Vec<SimModel> = SimModel::ALL
        .into_iter()
        .filter(|m| !m.spec().has_mig())
        .collect();
    assert_eq!(
        without,
        [
            SimModel::L40S_48GB,
            SimModel::L4_24GB,
            SimModel::A10G_24GB,
            SimModel::T4_16GB,
            SimModel::T4G_16GB
        ]
    );
    for model in without {
        let spec = model.spec();
        assert_eq!((spec.memory_slices, spec.compute_slices), (0, 0), "{model}");
        assert!(spec.mig_profiles().is_empty(), "{model}");
    }
}

/// Every model says where its numbers come from and which driver printed
/// them, and no two GPUs share a product name or PCI device id.
#[test]
fn every_model_names_its_source_and_identity() {
    let mut names = std::collections::BTreeSet::new();
    let mut ids = std::collections::BTreeSet::new();
    for model in SimModel::ALL {
        let spec = model.spec();
        assert!(spec.source.len() > 40, "{model}: {}", spec.source);
        assert!(spec.driver.len() > 10, "{model}: {}", spec.driver);
        assert!(names.insert(spec.product_name), "{model}");
        assert!(ids.insert(spec.pci_device_id), "{model}");
        assert!(spec.sm_count > 0 && spec.memory_bytes > 0, "{model}");
    }
}
