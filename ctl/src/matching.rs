//! `gpuslicectl match`: checks DRA CEL selectors against this node's devices
//! as gpuslice-dra-plugin publishes them (gpuslice-publish, the plugin's own
//! slice builder, over gpusliced's inventory), with Kubernetes' CEL rules
//! (gpuslice-selector);
//! with `-f`, also judges each claim whole with the scheduler's allocator
//! ([`crate::match_verdict`]): counts, All, constraints, what is held.
//!
//! Exit status: 0 when every target (the expression, each class, each claim
//! request) has a device it matches, no device raised an evaluation error,
//! and every claim of the file can be allocated now; 1 when a target matches
//! nothing, a device raised an error (the scheduler aborts the claim's
//! allocation on one), or a claim cannot be allocated now (only on an empty
//! node, or not at all); 2 when a selector or the input is invalid, or
//! gpusliced cannot be asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use gpuslice_plugin_config::Config as PluginConfig;
use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_publish::slices::{PoolTarget, build_pool};
use gpuslice_selector::inputs::{self, ClaimDoc, Labeled, Target};
use gpuslice_selector::{Catalog, DeviceView, Hint, Outcome, Selector};
use k8s_openapi::api::resource::v1::ResourceSliceSpec;

use crate::match_notes;
use crate::match_render;
use crate::match_verdict::{self, ClaimVerdict};

/// The plugin's config file, read for the driver name and publishing options.
pub const PLUGIN_CONFIG: &str = "/etc/gpuslice/gpuslice-dra-plugin.toml";

/// The DeviceClasses packaged with gpuslice, the opt-in extended-resource ones
/// (`nvidia.com/gpu`, `nvidia.com/mig-<profile>`) included.
const PACKAGED: [&str; 5] = [
    include_str!("../../packaging/deviceclasses/gpu.nvidia.com.yaml"),
    include_str!("../../packaging/deviceclasses/mig.nvidia.com.yaml"),
    include_str!("../../packaging/deviceclasses/shared-gpu.gpuslice.dev.yaml"),
    include_str!("../../packaging/deviceclasses/extended-resources/nvidia.com-gpu.yaml"),
    include_str!("../../packaging/deviceclasses/extended-resources/nvidia.com-mig.yaml"),
];

/// What to match.
#[derive(Debug, Clone, clap::Args)]
pub struct MatchArgs {
    /// A CEL expression (ANDed after --class's selectors when both are given).
    expression: Option<String>,
    /// A YAML file of DeviceClasses and/or ResourceClaims (templates too);
    /// `-` reads standard input.
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "expression"
    )]
    file: Option<PathBuf>,
    /// A DeviceClass by name: one packaged with gpuslice (gpu.nvidia.com,
    /// mig.nvidia.com, shared-gpu.gpuslice.dev) or one in --file.
    #[arg(long)]
    class: Option<String>,
    /// The DRA driver name [default: driver_name of --plugin-config, else gpu.nvidia.com].
    #[arg(long)]
    driver: Option<String>,
    /// gpuslice-dra-plugin's config (driver name, taints, consumable capacity); skipped when the default is absent.
    #[arg(long, value_name = "FILE", default_value = PLUGIN_CONFIG)]
    plugin_config: PathBuf,
}

/// One selector's verdict on one target.
#[derive(Debug, serde::Serialize)]
pub struct Checked {
    /// Where it comes from.
    #[serde(flatten)]
    pub selector: Labeled,
    /// Why it cannot be used, with the mistakes found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// The mistakes (errors when invalid, warnings otherwise).
    pub hints: Vec<Hint>,
}

/// One device's verdict on one target.
#[derive(Debug, serde::Serialize)]
pub struct DeviceResult {
    /// The device.
    pub device: String,
    /// What happened.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The selector that decided, when not a match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Its taints (the scheduler skips a tainted device unless tolerated).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<String>,
}

/// One target's report.
#[derive(Debug, serde::Serialize)]
pub struct TargetReport {
    /// What it is.
    pub target: String,
    /// What was not checked.
    pub notes: Vec<String>,
    /// Its selectors.
    pub selectors: Vec<Checked>,
    /// Per device (empty when a selector is invalid).
    pub devices: Vec<DeviceResult>,
    /// Why no MIG slice matches, when the selectors ask for one and none
    /// does: from each model's own forms.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub why_no_slice: Vec<String>,
    /// The claim of the file it belongs to (an index into the verdicts).
    #[serde(skip)]
    pub claim: Option<usize>,
}

/// The whole report.
#[derive(Debug, serde::Serialize)]
pub struct Report {
    /// The driver the devices are published under.
    pub driver: String,
    /// Devices the plugin would leave out, and why.
    pub skipped: Vec<String>,
    /// Per target.
    pub targets: Vec<TargetReport>,
    /// Per claim of the file, judged whole.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ClaimVerdict>,
    /// 0, 1 or 2 (see the module header).
    pub exit_code: u8,
}

/// How the DRA plugin publishes this node's devices.
pub(crate) struct Publishing {
    /// The driver name.
    pub driver: String,
    taint_unhealthy: bool,
    consumable_capacity: bool,
}

/// Runs the command; the text to print and the exit status.
pub async fn run(socket: PathBuf, args: MatchArgs, json: bool) -> anyhow::Result<(String, u8)> {
    let (targets, claims, known) = targets(&args)?;
    let publishing = publishing(args.driver.as_deref(), &args.plugin_config)?;
    let mut client = crate::connect(socket).await?;
    let inventory = client
        .get_inventory(pb::GetInventoryRequest {})
        .await?
        .into_inner();
    let pool = published(&inventory, &publishing);
    let catalog = Catalog::new(&publishing.driver, &pool.views);
    let reports: Vec<TargetReport> = targets
        .into_iter()
        .map(|t| check(t, &pool.views, &pool.taints, &catalog))
        .map(|mut report| {
            let matched = report.devices.iter().any(|d| d.outcome == Outcome::Match);
            if !matched && !report.devices.is_empty() {
                let expressions: Vec<&str> = (report.selectors.iter())
                    .map(|s| s.selector.expression.as_str())
                    .collect();
                report.why_no_slice = match_notes::why_no_slice(&expressions, &inventory);
            }
            report
        })
        .collect();
    let invalid = reports
        .iter()
        .any(|r| r.selectors.iter().any(|s| s.invalid.is_some()));
    let verdicts = if invalid {
        Vec::new()
    } else {
        let held = match_verdict::held(&inventory, &pool.slices);
        (claims.iter())
            .map(|c| match_verdict::verdict(c, &known, &pool.slices, &held))
            .collect()
    };
    let report = Report {
        exit_code: exit_code(&reports, &verdicts),
        driver: publishing.driver,
        skipped: pool.skipped,
        targets: reports,
        claims: verdicts,
    };
    Ok((match_render::render(&report, json), report.exit_code))
}

/// The packaged DeviceClasses' selectors, by class name.
pub(crate) fn packaged() -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let mut classes = BTreeMap::new();
    for text in PACKAGED {
        classes.extend(
            inputs::parse(text)
                .context("a packaged DeviceClass")?
                .classes,
        );
    }
    Ok(classes)
}

/// The targets, the file's claims, and every class known (the file's
/// over the packaged ones).
type Targets = (Vec<Target>, Vec<ClaimDoc>, BTreeMap<String, Vec<String>>);

fn targets(args: &MatchArgs) -> anyhow::Result<Targets> {
    let known = packaged()?;
    let file = match &args.file {
        Some(path) => {
            let text = if path == Path::new("-") {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(path)
            }
            .with_context(|| format!("cannot read {}", path.display()))?;
            Some(inputs::parse(&text).with_context(|| format!("{}", path.display()))?)
        }
        None => None,
    };
    let class = |name: &str| -> anyhow::Result<Target> {
        let selectors = file
            .as_ref()
            .and_then(|f| f.classes.get(name))
            .or_else(|| known.get(name))
            .with_context(|| {
                let names: Vec<&str> = known.keys().map(String::as_str).collect();
                format!(
                    "no DeviceClass {name:?}: the packaged ones are {}; give others with -f",
                    names.join(", ")
                )
            })?;
        Ok(inputs::class_target(name, selectors))
    };
    let mut all = known.clone();
    let claims = file.as_ref().map(|f| f.claims.clone()).unwrap_or_default();
    all.extend(file.iter().flat_map(|f| f.classes.clone()));
    let targets = match (&args.expression, &args.class, &file) {
        (Some(expression), class_name, _) => {
            let mut target = match class_name {
                Some(name) => class(name)?,
                None => Target {
                    label: "expression".to_owned(),
                    selectors: Vec::new(),
                    notes: Vec::new(),
                    claim: None,
                },
            };
            target.label = "expression".to_owned();
            target.selectors.push(Labeled {
                origin: "expression".to_owned(),
                expression: expression.clone(),
            });
            vec![target]
        }
        (None, Some(name), _) => vec![class(name)?],
        (None, None, Some(file)) => file.targets(&known)?,
        (None, None, None) => anyhow::bail!("give a CEL expression, -f FILE or --class NAME"),
    };
    // Claims are judged whole only when the file's claims are the targets.
    let claims = if targets.iter().any(|t| t.claim.is_some()) {
        claims
    } else {
        Vec::new()
    };
    Ok((targets, claims, all))
}

/// The publishing options: `driver` if given, else the plugin config's
/// (the packaged path skipped when absent).
pub(crate) fn publishing(driver: Option<&str>, plugin_config: &Path) -> anyhow::Result<Publishing> {
    let config = if plugin_config == Path::new(PLUGIN_CONFIG) && !plugin_config.exists() {
        PluginConfig::default()
    } else {
        PluginConfig::load(plugin_config)?
    };
    Ok(Publishing {
        driver: driver.map_or(config.driver_name, str::to_owned),
        taint_unhealthy: config.taint_unhealthy,
        consumable_capacity: config.consumable_capacity,
    })
}

/// The plugin's pool: its slices, their devices as selectors see them, each
/// device's taints, and what it leaves out.
pub(crate) struct Published {
    /// The slices.
    pub slices: Vec<ResourceSliceSpec>,
    views: Vec<DeviceView>,
    taints: BTreeMap<String, Vec<String>>,
    skipped: Vec<String>,
}

/// The plugin's pool over `inventory`.
pub(crate) fn published(
    inventory: &pb::GetInventoryResponse,
    publishing: &Publishing,
) -> Published {
    let target = PoolTarget {
        driver: &publishing.driver,
        node_name: "this-node",
        taint_unhealthy: publishing.taint_unhealthy,
        consumable_capacity: publishing.consumable_capacity,
    };
    let pool = build_pool(inventory, &target, 1);
    let mut skipped: Vec<String> = pool.skipped.iter().map(ToString::to_string).collect();
    let mut views = Vec::new();
    let mut taints = BTreeMap::new();
    for device in pool.slices.iter().flat_map(|s| s.devices.iter().flatten()) {
        match DeviceView::new(device, &publishing.driver) {
            Ok(view) => views.push(view),
            Err(err) => skipped.push(err.to_string()),
        }
        let keys: Vec<String> = device
            .taints
            .iter()
            .flatten()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect();
        taints.insert(device.name.clone(), keys);
    }
    Published {
        slices: pool.slices,
        views,
        taints,
        skipped,
    }
}

fn check(
    target: Target,
    devices: &[DeviceView],
    taints: &BTreeMap<String, Vec<String>>,
    catalog: &Catalog,
) -> TargetReport {
    let mut compiled = Vec::new();
    let mut selectors = Vec::new();
    for labeled in target.selectors {
        match Selector::compile(&labeled.expression, catalog) {
            Ok(selector) => {
                selectors.push(Checked {
                    selector: labeled.clone(),
                    invalid: None,
                    hints: selector.warnings.clone(),
                });
                compiled.push((labeled.origin, selector));
            }
            Err(err) => {
                let hints = match &err {
                    gpuslice_selector::CompileError::Mistakes(h) => h.clone(),
                    _ => Vec::new(),
                };
                selectors.push(Checked {
                    selector: labeled,
                    invalid: Some(err.to_string()),
                    hints,
                });
            }
        }
    }
    let valid = selectors.iter().all(|s| s.invalid.is_none());
    let results = if valid {
        devices
            .iter()
            .map(|d| verdict(d, &compiled, taints))
            .collect()
    } else {
        Vec::new()
    };
    TargetReport {
        target: target.label,
        notes: target.notes,
        selectors,
        devices: results,
        why_no_slice: Vec::new(),
        claim: target.claim,
    }
}

/// The first selector that does not match decides, as in the scheduler.
fn verdict(
    device: &DeviceView,
    compiled: &[(String, Selector)],
    taints: &BTreeMap<String, Vec<String>>,
) -> DeviceResult {
    let (outcome, selector) = compiled
        .iter()
        .map(|(origin, s)| (s.evaluate(device), origin))
        .find(|(o, _)| *o != Outcome::Match)
        .map_or((Outcome::Match, None), |(o, origin)| {
            (o, Some(origin.clone()))
        });
    DeviceResult {
        device: device.name.clone(),
        outcome,
        selector: if compiled.len() > 1 { selector } else { None },
        taints: taints.get(&device.name).cloned().unwrap_or_default(),
    }
}

fn exit_code(reports: &[TargetReport], claims: &[ClaimVerdict]) -> u8 {
    if reports
        .iter()
        .any(|r| r.selectors.iter().any(|s| s.invalid.is_some()))
    {
        return 2;
    }
    let good = reports.iter().all(|r| {
        r.devices.iter().any(|d| d.outcome == Outcome::Match)
            && !r
                .devices
                .iter()
                .any(|d| matches!(d.outcome, Outcome::Error { .. }))
    });
    u8::from(!good || claims.iter().any(|c| !c.now))
}
