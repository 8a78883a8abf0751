//! NVIDIA's nvidia-smi 550 over gpuslice's NVML, on every simulated model:
//! what it prints for `-L`, `-q` and `mig -lgip` is what the simulator
//! holds (so the library answers NVIDIA's client as it answers gpusliced),
//! and, where the tables cite NVIDIA's own printouts (`printouts`), what
//! NVIDIA's nvidia-smi printed on the real GPU, field by field. A
//! difference names the model, the field and both values: against the
//! simulator it is the library's; against a printout, the table's (or the
//! driver's: per-profile memory moves between releases).
//!
//! nvidia-smi 550 predates Blackwell: it walks GPU-instance profile
//! indices 0-9 (its header's count), so the RTX PRO 6000's `+gfx`, `-me`
//! and `+me.all` profiles (indices 10-16) are not listed by it, and it
//! prints "Unknown" for the Blackwell architecture (NVML's 10, newer than
//! its enum). What it cannot print is held to the printouts through the
//! simulator's own answer, which `gpu/nvml/sim_tests.rs` holds equal to
//! what the library gives gpusliced.
//!
//! Differences a printout shows in the tables themselves are listed in
//! [`TABLE_DIFFERENCES`] with who fixes them: printed as warnings, not
//! failures, so a table fix lands on its own (the entry is then stale, and
//! the run says so).

use gpuslice::gpu::sim::SimModel;
use gpuslice::gpu::sim::instances::InstanceShape;
use gpuslice::gpu::{MigProfile, MigSupport};

use super::node::NvmlNode;
use super::printouts::{LGIP, LgipRow, QUERY};
use super::smi::{self, ProfileRow, field, nvidia_smi, profile_rows, q_fields};

/// The profile indices nvidia-smi 550 asks for.
const SMI_550_PROFILES: u32 = 10;

/// Differences between NVIDIA's printouts and the simulator's tables
/// (`gpu/sim/tables/`, `gpu/sim/instances.rs`), reported to their owner:
/// the start of each difference line they stand for.
const TABLE_DIFFERENCES: &[&str] = &[
    // p6e-gb200.36xlarge's GPUs are PCI domain 0 on AWS (NVIDIA's capture
    // of one, qx-gb200.xml: 0000:29, :3f, :9c, :b2), not the Grace C2C
    // domains 0008/0009/0018/0019 the shape infers (GB300's capture has
    // those).
    "GB200-186GB -q PCI/Bus Id",
];

/// What nvidia-smi 550 prints for an architecture: "Unknown" for one
/// newer than its NVML enum (Blackwell).
fn smi_550_architecture(name: &str) -> &str {
    if name == "Blackwell" { "Unknown" } else { name }
}

/// NVML's bus id form: an 8-digit domain, uppercase.
fn nvml_bus_id(bus_id: &str) -> String {
    let (domain, rest) = bus_id.split_once(':').unwrap_or(("0", bus_id));
    let domain = u32::from_str_radix(domain, 16).unwrap_or(0);
    format!("{domain:08X}:{}", rest.to_ascii_uppercase())
}

/// The GiB nvidia-smi prints for `bytes`.
fn gib(bytes: u64) -> String {
    let mib = bytes >> 20;
    #[expect(
        clippy::cast_precision_loss,
        reason = "MiB of a GPU fit an f64 exactly"
    )]
    let gib = mib as f64 / 1024.0;
    format!("{gib:.2}")
}

/// A node of one `model` GPU, or of the instance `shape`.
fn node_of(model: SimModel, instance: Option<&str>) -> NvmlNode {
    match instance.filter(|name| InstanceShape::named(name).is_some()) {
        Some(name) => NvmlNode::new(&format!("instance = \"{name}\""), ""),
        None => NvmlNode::new(&format!("gpus = [\"{model}\"]"), ""),
    }
}

/// Differences between what nvidia-smi printed over the library and what
/// the simulator holds for GPU 0, for `-L` and `-q`.
fn smi_against_sim(smi: &std::path::Path, node: &NvmlNode, model: SimModel) -> Vec<String> {
    let sim = node.reader();
    let gpu = sim.device_info(0).expect("GPU 0");
    let spec = model.spec();
    let mut diffs = Vec::new();
    let mut check = |what: &str, printed: Option<&str>, held: &str| {
        if printed != Some(held) {
            diffs.push(format!(
                "{model} {what}: nvidia-smi {printed:?}, simulator {held:?}"
            ));
        }
    };
    let listed = smi::ok(smi, node.path(), &["-L"]);
    let first = format!("GPU 0: {} (UUID: {})", gpu.product_name, gpu.uuid);
    check("-L", listed.lines().next(), &first);
    let query = [
        "--query-gpu=name,uuid,memory.total",
        "--format=csv,noheader",
    ];
    let csv = smi::ok(smi, node.path(), &query);
    let row = format!(
        "{}, {}, {} MiB",
        gpu.product_name,
        gpu.uuid,
        gpu.memory_bytes >> 20
    );
    check("--query-gpu", csv.lines().next(), &row);
    let fields = q_fields(&smi::ok(smi, node.path(), &["-q"]));
    let mig = match gpu.mig {
        MigSupport::NotSupported => "N/A".to_owned(),
        MigSupport::Supported { current, .. } => {
            let word = current.to_string();
            word[..1].to_uppercase() + &word[1..]
        }
    };
    let fabric_state = gpu.fabric.as_ref().map_or("N/A".to_owned(), |f| {
        let state = f.state.to_string();
        if state == "completed" {
            "Completed".to_owned()
        } else {
            state
        }
    });
    let expected = [
        ("Product Name", gpu.product_name.clone()),
        (
            "Product Architecture",
            smi_550_architecture(&gpu.architecture).to_owned(),
        ),
        ("MIG Mode/Current", mig),
        ("GPU UUID", gpu.uuid.clone()),
        ("Minor Number", gpu.minor.to_string()),
        ("PCI/Device Id", format!("0x{:04X}10DE", spec.pci_device_id)),
        ("PCI/Bus Id", nvml_bus_id(&gpu.pci_bus_id)),
        (
            "FB Memory Usage/Total",
            format!("{} MiB", gpu.memory_bytes >> 20),
        ),
        ("Compute Mode", "Default".to_owned()),
        ("Fabric/State", fabric_state),
    ];
    for (key, held) in &expected {
        check(&format!("-q {key}"), field(&fields, key), held);
    }
    if let Some(fabric) = &gpu.fabric {
        check(
            "-q Fabric/CliqueId",
            field(&fields, "Fabric/CliqueId"),
            &fabric.clique_id.to_string(),
        );
        check(
            "-q Fabric/ClusterUUID",
            field(&fields, "Fabric/ClusterUUID"),
            &fabric.cluster_uuid,
        );
    }
    diffs
}

/// The `-lgip` rows of GPU 0, with MIG mode switched on first.
fn lgip(smi: &std::path::Path, node: &NvmlNode) -> Vec<ProfileRow> {
    smi::ok(smi, node.path(), &["-i", "0", "-mig", "1"]);
    profile_rows(&smi::ok(smi, node.path(), &["mig", "-lgip", "-i", "0"]))
}

/// `nvidia-smi mig -lgipp` against the simulator's placements: one line
/// per profile listed, `GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1`.
fn lgipp_against_sim(smi: &std::path::Path, model: SimModel, node: &NvmlNode) -> Vec<String> {
    let printed = smi::ok(smi, node.path(), &["mig", "-lgipp", "-i", "0"]);
    let profiles = node.reader().mig_profiles(0).unwrap_or_default();
    let mut diffs = Vec::new();
    for p in profiles.iter().filter(|p| p.index < SMI_550_PROFILES) {
        let starts: Vec<String> = p.placements.iter().map(|at| at.start.to_string()).collect();
        let word = if starts.len() == 1 {
            "Placement "
        } else {
            "Placements"
        };
        let line = format!(
            "GPU  0 Profile ID {:>2} {word}: {{{}}}:{}",
            p.id,
            starts.join(","),
            p.memory_slices
        );
        if !printed.lines().any(|l| l.trim_end() == line) {
            diffs.push(format!("{model} -lgipp: no line {line:?} in\n{printed}"));
        }
    }
    diffs
}

/// The `-lgip` row nvidia-smi prints for profile `p` of GPU 0 with no
/// instance made (every one free).
fn lgip_row(p: &MigProfile) -> ProfileRow {
    ProfileRow {
        gpu: 0,
        name: p.name.clone(),
        id: p.id,
        free: p.max_count,
        total: p.max_count,
        gib: gib(p.memory_bytes),
        p2p: "No".to_owned(),
        sm: p.multiprocessors,
        dec: p.decoders,
        enc: p.encoders,
        ce: p.copy_engines,
        jpeg: p.jpegs,
        ofa: p.ofas,
    }
}

/// Differences between the `-lgip` rows and the simulator's profiles.
fn lgip_against_sim(model: SimModel, node: &NvmlNode, rows: &[ProfileRow]) -> Vec<String> {
    let profiles = node.reader().mig_profiles(0).expect("MIG profiles");
    let mut diffs = Vec::new();
    let listed: Vec<_> = profiles
        .iter()
        .filter(|p| p.index < SMI_550_PROFILES)
        .collect();
    if rows.len() != listed.len() {
        diffs.push(format!(
            "{model} -lgip: {} rows, simulator {} profiles of index 0-9",
            rows.len(),
            listed.len()
        ));
    }
    for p in listed {
        let held = lgip_row(p);
        match rows.iter().find(|r| r.name == p.name) {
            Some(row) if *row == held => {}
            Some(row) => diffs.push(format!(
                "{model} -lgip {}: nvidia-smi {row:?}, simulator {held:?}",
                p.name
            )),
            None => diffs.push(format!("{model} -lgip: no row {}", p.name)),
        }
    }
    diffs
}

/// `nvidia-smi mig -cgi <id> -C` of the first and any `+me` profile
/// listed, `-cgi <id>` then `-cci` of the last: made where the driver puts
/// it (the simulator sees one GPU instance with its compute instance),
/// listed by `-lci`, destroyed by `-dci` and `-dgi`.
fn cgi_round_trips(
    smi: &std::path::Path,
    model: SimModel,
    node: &NvmlNode,
    rows: &[ProfileRow],
) -> Vec<String> {
    let mut diffs = Vec::new();
    let chosen = (rows.first().into_iter())
        .chain(rows.last())
        .chain(rows.iter().find(|r| r.name.ends_with("+me")));
    for (n, row) in chosen.enumerate() {
        let id = row.id.to_string();
        // The second one in two steps: the GPU instance, then `-cci`.
        let made = if n == 1 {
            smi::ok(smi, node.path(), &["mig", "-cgi", &id, "-i", "0"]);
            smi::run(smi, node.path(), &["mig", "-cci", "-i", "0"])
        } else {
            smi::run(smi, node.path(), &["mig", "-cgi", &id, "-C", "-i", "0"])
        };
        let listed = node.reader().gpu_instances(0).unwrap_or_default();
        let one = listed.len() == 1
            && listed[0].profile_id == row.id
            && listed[0].compute_instances.len() == 1;
        if made.code != Some(0) || !one {
            diffs.push(format!(
                "{model} mig -cgi {id} -C: {made:?}, the node holds {listed:?}"
            ));
            continue;
        }
        let lci = smi::ok(smi, node.path(), &["mig", "-lci", "-i", "0"]);
        if !lci.contains(&format!("MIG {}", row.name)) {
            diffs.push(format!("{model} mig -lci after -cgi {id}: {lci}"));
        }
        smi::ok(smi, node.path(), &["mig", "-dci", "-i", "0"]);
        smi::ok(smi, node.path(), &["mig", "-dgi", "-i", "0"]);
        if node.reader().gpu_instances(0).map(|g| g.len()) != Ok(0) {
            diffs.push(format!("{model} mig -dgi after -cgi {id}: instances left"));
        }
    }
    diffs
}

/// Every simulated model, read by NVIDIA's nvidia-smi through the library,
/// is what the simulator holds, and its instances are made and destroyed
/// by `nvidia-smi mig`.
#[test]
fn nvml_smi_reads_every_model_as_the_simulator_holds_it() {
    let Some(smi) = nvidia_smi("nvml_smi_reads_every_model_as_the_simulator_holds_it") else {
        return;
    };
    let mut diffs = Vec::new();
    for model in SimModel::ALL {
        let node = node_of(model, None);
        diffs.extend(smi_against_sim(&smi, &node, model));
        if model.spec().has_mig() {
            let rows = lgip(&smi, &node);
            diffs.extend(lgip_against_sim(model, &node, &rows));
            diffs.extend(lgipp_against_sim(&smi, model, &node));
            diffs.extend(cgi_round_trips(&smi, model, &node, &rows));
        }
    }
    assert!(
        diffs.is_empty(),
        "nvidia-smi against the simulator:\n{}",
        diffs.join("\n")
    );
}

/// The rows nvidia-smi 550 does not list (profile indices 10 and up), as
/// the simulator answers them.
fn beyond_smi_550(node: &NvmlNode) -> Vec<ProfileRow> {
    let profiles = node.reader().mig_profiles(0).unwrap_or_default();
    (profiles.iter())
        .filter(|p| p.index >= SMI_550_PROFILES)
        .map(lgip_row)
        .collect()
}

/// Differences between one printed `-lgip` row and nvidia-smi's over the
/// library.
fn row_against_printout(model: &str, printed: &LgipRow, ours: Option<&ProfileRow>) -> Vec<String> {
    let Some(ours) = ours else {
        return vec![format!(
            "{model} -lgip: NVIDIA printed {}, ours has no such row",
            printed.name
        )];
    };
    let mut diffs = Vec::new();
    let mut field = |what: &str, theirs: String, mine: String| {
        if theirs != mine {
            diffs.push(format!(
                "{model} {} {what}: NVIDIA {theirs}, ours {mine}",
                printed.name
            ));
        }
    };
    field("id", printed.id.to_string(), ours.id.to_string());
    field(
        "instances",
        printed.total.to_string(),
        ours.total.to_string(),
    );
    field("memory GiB", printed.gib.to_owned(), ours.gib.clone());
    field("SM", printed.sm.to_string(), ours.sm.to_string());
    field("DEC", printed.dec.to_string(), ours.dec.to_string());
    field("ENC", printed.enc.to_string(), ours.enc.to_string());
    if let Some((ce, jpeg, ofa)) = printed.ce_jpeg_ofa {
        field("CE", ce.to_string(), ours.ce.to_string());
        field("JPEG", jpeg.to_string(), ours.jpeg.to_string());
        field("OFA", ofa.to_string(), ours.ofa.to_string());
    }
    diffs
}

fn model_named(name: &str) -> Option<SimModel> {
    serde_json::from_str(&format!("\"{name}\"")).ok()
}

/// `-lgip` and `-q` over the library against NVIDIA's printouts of the
/// same GPUs.
#[test]
fn nvml_smi_prints_what_nvidias_printed() {
    let Some(smi) = nvidia_smi("nvml_smi_prints_what_nvidias_printed") else {
        return;
    };
    let mut diffs = Vec::new();
    for printout in LGIP {
        let Some(model) = model_named(printout.model) else {
            diffs.push(format!("{}: no such simulated model", printout.model));
            continue;
        };
        let node = node_of(model, None);
        let mut rows = lgip(&smi, &node);
        rows.extend(beyond_smi_550(&node));
        for printed in printout.rows {
            let ours = rows.iter().find(|r| r.name == printed.name);
            let against = format!("{} ({})", printout.model, printout.source);
            diffs.extend(row_against_printout(&against, printed, ours));
        }
        for (name, gib) in printout.memory_only {
            let ours = rows
                .iter()
                .find(|r| r.name == *name)
                .map(|r| r.gib.as_str());
            if ours != Some(*gib) {
                diffs.push(format!(
                    "{} ({}) {name} memory GiB: NVIDIA {gib}, ours {ours:?}",
                    printout.model, printout.source
                ));
            }
        }
    }
    for printed in QUERY {
        let Some(model) = model_named(printed.model) else {
            diffs.push(format!("{}: no such simulated model", printed.model));
            continue;
        };
        diffs.extend(query_against_printout(&smi, model, printed));
    }
    let (known, new): (Vec<&String>, Vec<&String>) =
        (diffs.iter()).partition(|d| TABLE_DIFFERENCES.iter().any(|t| d.starts_with(t)));
    for difference in &known {
        eprintln!("WARNING (a table's, reported): {difference}");
    }
    for stale in TABLE_DIFFERENCES {
        if !known.iter().any(|d| d.starts_with(stale)) {
            eprintln!("WARNING: {stale:?} no longer differs: remove it from TABLE_DIFFERENCES");
        }
    }
    let new: Vec<&str> = new.into_iter().map(String::as_str).collect();
    assert!(
        new.is_empty(),
        "nvidia-smi against NVIDIA's printouts:\n{}",
        new.join("\n")
    );
}

/// `-q` of GPU 0 against one capture's first GPU.
fn query_against_printout(
    smi: &std::path::Path,
    model: SimModel,
    printed: &super::printouts::Query,
) -> Vec<String> {
    let node = node_of(model, printed.instance);
    let fields = q_fields(&smi::ok(smi, node.path(), &["-q"]));
    let mut diffs = Vec::new();
    let architecture = node.reader().device_info(0).map(|g| g.architecture);
    if architecture.as_deref() != Ok(printed.architecture) {
        diffs.push(format!(
            "{model} architecture: NVIDIA {:?} ({}), the table's {architecture:?}",
            printed.architecture, printed.file
        ));
    }
    let mut check = |key: &str, theirs: &str| {
        let ours = field(&fields, key);
        if ours != Some(theirs) {
            diffs.push(format!(
                "{model} -q {key}: NVIDIA {theirs:?} ({}, driver {}), ours {ours:?}",
                printed.file, printed.driver
            ));
        }
    };
    check("Product Name", printed.product_name);
    check(
        "Product Architecture",
        smi_550_architecture(printed.architecture),
    );
    check("PCI/Device Id", printed.device_id);
    check(
        "FB Memory Usage/Total",
        &format!("{} MiB", printed.fb_total_mib),
    );
    check(
        "MIG Mode/Current",
        if printed.mig { "Disabled" } else { "N/A" },
    );
    match printed.fabric {
        Some((state, _)) => check("Fabric/State", state),
        None => check("Fabric/State", "N/A"),
    }
    if let Some(bus_id) = printed.bus_id {
        check("PCI/Bus Id", bus_id);
    }
    diffs
}
