//! `[mig]`: which GPUs are partitioned, how their slices are offered to the
//! scheduler, and when slices are created.
//!
//! Profile names are checked only for shape here; whether a GPU offers a
//! profile is known once the backend answers, and start-up reports a layout
//! entry a GPU cannot take as a problem naming the GPU and the valid profiles.
//!
//! Part of [`crate::config`] (the layers check places it on config's floor):
//! it imports nothing above it, and `config` re-exports its types.

use serde::Deserialize;

use crate::config::{ConfigError, invalid};

/// `[mig]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MigConfig {
    /// `advertise`: how slices are offered; `None` is "auto" (the default):
    /// the offering the DRA plugin asks for, the layout until it asks and
    /// always with `create = "ahead"`.
    #[serde(deserialize_with = "auto_or_offering")]
    pub advertise: Option<MigOffering>,
    /// When slices are created (layout mode only; "ahead" with "auto" keeps
    /// the layout). Default "on-prepare".
    pub create: MigCreate,
    /// `[[mig.gpu]]`: the GPUs that run in MIG mode. A GPU no entry selects is
    /// offered whole and its MIG mode is left as it is.
    pub gpu: Vec<MigGpuConfig>,
}

/// How MIG slices are offered to the scheduler: the one name of the
/// concept that `[mig] advertise`, the DRA plugin's request, the inventory
/// and the published ResourceSlices share. Its text is the value as the
/// config spells it ("layout", "partitionable").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, strum::Display)]
#[derive(strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum MigOffering {
    /// The concrete, non-overlapping layout of each GPU (`layout`): works on
    /// every cluster (Kubernetes 1.34/1.35 default gates).
    Layout,
    /// Every (profile, placement) with shared counters per GPU, so the
    /// scheduler never picks overlapping slices. Needs the
    /// DRAPartitionableDevices gate (on by default from Kubernetes 1.36).
    Partitionable,
}

/// `[mig] advertise` as written: `None` is "auto" (whichever offering the
/// DRA plugin asks for, see [`super::offering`]).
pub fn advertise_text(advertise: Option<MigOffering>) -> &'static str {
    advertise.map_or("auto", <&str>::from)
}

/// Reads `[mig] advertise`: "auto" is `None`, else the offering it names.
fn auto_or_offering<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<MigOffering>, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Written {
        Auto,
        Layout,
        Partitionable,
    }
    Ok(match Written::deserialize(deserializer)? {
        Written::Auto => None,
        Written::Layout => Some(MigOffering::Layout),
        Written::Partitionable => Some(MigOffering::Partitionable),
    })
}

/// When slices of a layout are created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MigCreate {
    /// Created at prepare, destroyed at unprepare: an idle GPU holds no slice.
    #[default]
    OnPrepare,
    /// Created at start-up and on SIGHUP (incrementally); prepare hands one out.
    Ahead,
}

/// `[[mig.gpu]]`: one GPU, or every GPU not selected otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MigGpuConfig {
    /// NVML index of the GPU.
    pub index: Option<u32>,
    /// UUID of the GPU ("GPU-...").
    pub uuid: Option<String>,
    /// Profiles of the layout, e.g. ["3g.40gb", "2g.20gb", "1g.10gb"]; the
    /// daemon chooses their placements. Required in layout mode.
    pub layout: Vec<String>,
}

impl MigConfig {
    /// The offering the engine makes under this config: the configured one,
    /// and the layout while "auto" has not been resolved
    /// ([`super::offering::in_force`] resolves it before the engine sees it).
    pub fn offering(&self) -> MigOffering {
        self.advertise.unwrap_or(MigOffering::Layout)
    }

    /// The entry for the GPU at `index` with `uuid`: an entry naming it, else
    /// the catch-all entry (neither index nor uuid), else none.
    pub fn for_gpu(&self, index: u32, uuid: &str) -> Option<&MigGpuConfig> {
        self.gpu
            .iter()
            .find(|g| g.index == Some(index) || g.uuid.as_deref() == Some(uuid))
            .or_else(|| {
                self.gpu
                    .iter()
                    .find(|g| g.index.is_none() && g.uuid.is_none())
            })
    }

    /// Rules serde cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.advertise == Some(MigOffering::Partitionable) && self.create == MigCreate::Ahead {
            return Err(invalid(
                "mig.create",
                "\"ahead\" needs advertise = \"layout\": partitionable devices are created at \
                 prepare, where the scheduler placed them",
            ));
        }
        let catch_alls = self
            .gpu
            .iter()
            .filter(|g| g.index.is_none() && g.uuid.is_none())
            .count();
        if catch_alls > 1 {
            return Err(invalid(
                "mig.gpu",
                "more than one [[mig.gpu]] entry without index or uuid; keep one catch-all",
            ));
        }
        for (i, gpu) in self.gpu.iter().enumerate() {
            if gpu.index.is_some() && gpu.uuid.is_some() {
                return Err(invalid(
                    "mig.gpu",
                    format!("entry {i} sets both index and uuid; select the GPU by one of them"),
                ));
            }
            let dup = self.gpu[..i].iter().any(|o| {
                (gpu.index.is_some() && o.index == gpu.index)
                    || (gpu.uuid.is_some() && o.uuid == gpu.uuid)
            });
            if dup {
                return Err(invalid(
                    "mig.gpu",
                    format!("entry {i} selects a GPU an earlier entry already selects"),
                ));
            }
            if self.advertise != Some(MigOffering::Partitionable) && gpu.layout.is_empty() {
                return Err(invalid("mig.gpu.layout", no_layout(i, self.advertise)));
            }
            if let Some(bad) = gpu.layout.iter().find(|p| !profile_shaped(p)) {
                return Err(invalid(
                    "mig.gpu.layout",
                    format!(
                        "entry {i}: {bad:?} is not a MIG profile name such as \"1g.10gb\", \
                         \"3g.40gb\" or \"1g.10gb+me\""
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Why entry `i` needs a layout under `advertise`, and what to write.
fn no_layout(i: usize, advertise: Option<MigOffering>) -> String {
    let example = "e.g. layout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]";
    match advertise {
        None => format!(
            "entry {i} has no layout; advertise = \"auto\" (the default) offers the layout \
             wherever the cluster does not keep partitionable devices, so it needs the profiles \
             to offer, {example}; or set advertise = \"partitionable\""
        ),
        _ => format!(
            "entry {i} has no layout; advertise = \"layout\" needs the profiles to offer, {example}"
        ),
    }
}

/// "<n>g.<m>gb" with an optional "+me" or "+gfx" style suffix.
fn profile_shaped(name: &str) -> bool {
    let base = name.split('+').next().unwrap_or(name);
    let Some((compute, memory)) = base.split_once("g.") else {
        return false;
    };
    let memory = memory.strip_suffix("gb").unwrap_or("");
    !compute.is_empty()
        && compute.chars().all(|c| c.is_ascii_digit())
        && !memory.is_empty()
        && memory.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
