//! docs/install.md's fleet table ("The EKS GPU fleet") is what the
//! simulator plays: one row per instance shape it knows, in its order, each
//! cell computed from what gpusliced's own scan makes of that instance (the
//! GPUs' NVML answers through the inventory and their features). A shape
//! added, a table changed or a model's profiles edited without the doc
//! fails here, printing the table the doc should have. docs/configuration.md's
//! `[backend.sim] gpus` and `instance` rows name every model and every shape,
//! in the same order.

use std::path::Path;

use gpuslice::config::{MigConfig, SimConfig};
use gpuslice::gpu::sim::instances::{FabricKind, InstanceShape};
use gpuslice::gpu::sim::{SimBackend, SimModel};
use gpuslice::inventory::{GpuDevice, Inventory};
use gpuslice_quantity::show::gib;

/// The heading the table follows.
const HEADING: &str = "### The EKS GPU fleet";

/// The table's header and alignment rows.
const HEADER: [&str; 2] = [
    "| instance | arch | GPUs | NUMA nodes | MIG profiles | MPS | time-slicing | NVLink | fabric attributes |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
];

/// The row of one instance shape, from the simulated node's inventory.
fn row(shape: &InstanceShape) -> String {
    let models = vec![shape.model; usize::try_from(shape.gpus).expect("few GPUs")];
    let backend =
        SimBackend::new(models, "fleet").with_instance(shape, &SimConfig::default().fabric());
    let inventory = Inventory::from_backend(&backend, &MigConfig::default(), &|_, _| {
        gpuslice::mig::Ownership::Foreign
    })
    .expect("the inventory of a simulated instance");
    assert!(
        inventory.problems.is_empty(),
        "{}: {:?}",
        shape.name,
        inventory.problems
    );
    let gpu: &GpuDevice = inventory.gpus.first().expect("a GPU");
    assert!(
        inventory
            .gpus
            .iter()
            .all(|g| g.info.product_name == gpu.info.product_name),
        "{}: one model",
        shape.name
    );
    let numa: std::collections::BTreeSet<Option<u32>> =
        inventory.gpus.iter().map(|g| g.info.numa_node).collect();
    let mig = if gpu.features.mig {
        gpuslice::features::profile_names(&gpu.model_profiles).join(", ")
    } else {
        "no".to_owned()
    };
    let mps = match (gpu.features.mps, gpu.features.mps_limits) {
        (true, true) => "yes, with limits",
        (true, false) => "yes, no limits",
        (false, _) => "no",
    };
    let nvlink = match (gpu.features.nvlink_links, shape.fabric) {
        (0, _) => "no".to_owned(),
        (links, Some(FabricKind::MultiNode)) => format!("{links} links, multi-node (IMEX)"),
        (links, _) => format!("{links} links, NVSwitch"),
    };
    let fabric = if gpu.features.clique.is_some() {
        "`cliqueID`, `clusterUUID`"
    } else {
        "-"
    };
    format!(
        "| {} | {} | {} × {}, {} | {} | {mig} | {mps} | yes | {nvlink} | {fabric} |",
        shape.name,
        shape.arch,
        inventory.gpus.len(),
        gpu.info.product_name,
        gib(gpu.info.memory_bytes),
        numa.len(),
    )
}

/// The table the doc must show.
fn expected() -> Vec<String> {
    HEADER
        .iter()
        .map(|h| (*h).to_owned())
        .chain(InstanceShape::all().iter().map(row))
        .collect()
}

/// The first table after [`HEADING`] in docs/install.md.
fn documented() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/install.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let after = text
        .split_once(HEADING)
        .unwrap_or_else(|| panic!("docs/install.md has no {HEADING:?} section"))
        .1;
    after
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_fleet_table_is_what_the_simulator_plays() {
    let expected = expected();
    let documented = documented();
    let differ: Vec<String> = (0..expected.len().max(documented.len()))
        .filter_map(|i| {
            let (want, have) = (expected.get(i), documented.get(i));
            (want != have).then(|| {
                format!(
                    "row {i}:\n  doc:       {}\n  simulator: {}",
                    have.map_or("(none)", String::as_str),
                    want.map_or("(none)", String::as_str)
                )
            })
        })
        .collect();
    assert!(
        differ.is_empty(),
        "docs/install.md's fleet table differs from the simulator:\n{}\n\nthe table it should \
         have:\n{}",
        differ.join("\n"),
        expected.join("\n")
    );
}

/// The backquoted names in the row of docs/configuration.md whose key is `key`.
fn configuration_names(key: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("| `{key}` |")))
        .unwrap_or_else(|| panic!("docs/configuration.md has no {key:?} row"));
    let cells: Vec<&str> = row.split(" | ").collect();
    let what = cells.get(2).copied().unwrap_or_default();
    what.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_configuration_reference_names_every_model_and_shape() {
    let models: Vec<String> = SimModel::ALL.iter().map(ToString::to_string).collect();
    let named = configuration_names("[backend.sim] gpus");
    let named_models: Vec<String> = named.into_iter().filter(|n| models.contains(n)).collect();
    assert_eq!(
        named_models, models,
        "docs/configuration.md's [backend.sim] gpus row"
    );
    let shapes: Vec<String> = InstanceShape::all()
        .iter()
        .map(|s| s.name.to_owned())
        .collect();
    let named = configuration_names("[backend.sim] instance");
    let named_shapes: Vec<String> = named.into_iter().filter(|n| n.contains('.')).collect();
    assert_eq!(
        named_shapes, shapes,
        "docs/configuration.md's [backend.sim] instance row"
    );
}
