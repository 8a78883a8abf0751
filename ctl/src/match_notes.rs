//! Why a MIG selector matches nothing on this node, from the GPUs' own
//! forms (the features gpusliced reports with its inventory), not from the
//! slices published now: a model without MIG (an L4) has none to give; a
//! model with MIG that runs none here (an H100 without `[mig]`) would, given
//! a layout; a profile no model of the node has is named with the ones
//! there are. Pure.

use std::collections::BTreeMap;

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::attribute_value::Value as AttrValue;

/// Whether `expression` asks for MIG slices: the slice type, a profile, or
/// a profile's name.
fn asks_for_mig(expression: &str) -> bool {
    expression.contains("'mig'")
        || expression.contains("\"mig\"")
        || !profiles_named(expression).is_empty()
}

/// The MIG profile names quoted in `expression` ("1g.23gb", "3g.40gb+me").
fn profiles_named(expression: &str) -> Vec<String> {
    expression
        .split(['\'', '"'])
        .skip(1)
        .step_by(2)
        .filter(|s| is_profile_name(s))
        .map(str::to_owned)
        .collect()
}

/// "<n>g.<m>gb" with an optional suffix, as NVML names profiles.
fn is_profile_name(s: &str) -> bool {
    let Some((compute, rest)) = s.split_once("g.") else {
        return false;
    };
    let memory: String = rest.chars().take_while(char::is_ascii_digit).collect();
    !compute.is_empty()
        && compute.chars().all(|c| c.is_ascii_digit())
        && !memory.is_empty()
        && rest[memory.len()..].starts_with("gb")
}

/// Each model of the node: its MIG profiles (`None` without MIG) and
/// whether any of its GPUs is MIG-managed.
fn models(inventory: &pb::GetInventoryResponse) -> BTreeMap<String, (Option<Vec<String>>, bool)> {
    let mut models: BTreeMap<String, (Option<Vec<String>>, bool)> = BTreeMap::new();
    for device in &inventory.devices {
        let Some(features) = &device.features else {
            continue;
        };
        let product = match device
            .attributes
            .get("productName")
            .and_then(|a| a.value.as_ref())
        {
            Some(AttrValue::String(s)) => s.clone(),
            _ => continue,
        };
        let managed = matches!(
            device
                .attributes
                .get("migManaged")
                .and_then(|a| a.value.as_ref()),
            Some(AttrValue::Bool(true))
        );
        let profiles = features.mig.then(|| features.mig_profiles.clone());
        let entry = models.entry(product).or_insert((profiles, false));
        entry.1 |= managed;
    }
    models
}

/// Why selectors `expressions` that match no device of `inventory` find no
/// MIG slice; empty when they do not ask for one.
pub fn why_no_slice(expressions: &[&str], inventory: &pb::GetInventoryResponse) -> Vec<String> {
    if !expressions.iter().any(|e| asks_for_mig(e)) {
        return Vec::new();
    }
    let models = models(inventory);
    let mut why = Vec::new();
    for (product, (profiles, managed)) in &models {
        match profiles {
            None => why.push(format!("the {product} has no MIG: it offers no slices")),
            Some(profiles) if !managed => why.push(format!(
                "the {product} has MIG ({}), but gpusliced runs none on it: give it a [mig] \
                 layout (or advertise = \"partitionable\") in gpuslice.toml",
                profiles.join(" ")
            )),
            Some(_) => {}
        }
    }
    let named: Vec<String> = expressions.iter().flat_map(|e| profiles_named(e)).collect();
    for name in named {
        let holders: Vec<&String> = (models.iter())
            .filter(|(_, (p, _))| p.as_ref().is_some_and(|p| p.contains(&name)))
            .map(|(product, _)| product)
            .collect();
        if holders.is_empty() {
            let others: Vec<String> = (models.iter())
                .filter_map(|(product, (p, _))| {
                    Some(format!("{product}: {}", p.as_ref()?.join(" ")))
                })
                .collect();
            let there = if others.is_empty() {
                "no GPU here has MIG".to_owned()
            } else {
                format!("the profiles here are {}", others.join("; "))
            };
            why.push(format!(
                "no GPU of this node has a MIG profile {name:?}: {there}"
            ));
        }
    }
    why
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use gpuslice_proto::gpuslice::v1 as pb;
    use gpuslice_proto::gpuslice::v1::attribute_value::Value as AttrValue;

    use super::{is_profile_name, why_no_slice};

    fn gpu(product: &str, profiles: Option<&[&str]>, managed: bool) -> pb::Device {
        let attr = |v: AttrValue| pb::AttributeValue { value: Some(v) };
        pb::Device {
            attributes: HashMap::from([
                (
                    "productName".to_owned(),
                    attr(AttrValue::String(product.into())),
                ),
                ("migManaged".to_owned(), attr(AttrValue::Bool(managed))),
            ]),
            features: Some(pb::GpuFeatures {
                mig: profiles.is_some(),
                mig_profiles: profiles
                    .unwrap_or_default()
                    .iter()
                    .map(|p| (*p).to_owned())
                    .collect(),
                ..pb::GpuFeatures::default()
            }),
            ..pb::Device::default()
        }
    }

    #[test]
    fn profile_names_are_told_from_other_strings() {
        for name in ["1g.23gb", "3g.40gb+me", "1g.24gb+me.all", "2g.48gb-me"] {
            assert!(is_profile_name(name), "{name}");
        }
        for other in ["mig", "gpu", "NVIDIA L4", "g.10gb", "1g.gb", "1g10gb"] {
            assert!(!is_profile_name(other), "{other}");
        }
    }

    #[test]
    fn an_l4_has_no_mig_and_an_h100_without_a_layout_runs_none() {
        let inventory = pb::GetInventoryResponse {
            devices: vec![
                gpu("NVIDIA L4", None, false),
                gpu(
                    "NVIDIA H100 80GB HBM3",
                    Some(&["1g.10gb", "7g.80gb"]),
                    false,
                ),
            ],
            ..pb::GetInventoryResponse::default()
        };
        let why = why_no_slice(
            &["device.attributes['gpu.nvidia.com'].type == 'mig'"],
            &inventory,
        );
        assert_eq!(
            why,
            [
                "the NVIDIA H100 80GB HBM3 has MIG (1g.10gb 7g.80gb), but gpusliced runs none on it: \
                 give it a [mig] layout (or advertise = \"partitionable\") in gpuslice.toml",
                "the NVIDIA L4 has no MIG: it offers no slices"
            ]
        );
        assert!(
            why_no_slice(
                &["device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'"],
                &inventory
            )
            .is_empty()
        );
    }

    #[test]
    fn a_profile_no_model_has_is_named_with_the_ones_there_are() {
        let inventory = pb::GetInventoryResponse {
            devices: vec![gpu("NVIDIA B200", Some(&["1g.23gb", "7g.180gb"]), true)],
            ..pb::GetInventoryResponse::default()
        };
        let why = why_no_slice(
            &["device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"],
            &inventory,
        );
        assert_eq!(
            why,
            [
                "no GPU of this node has a MIG profile \"1g.10gb\": the profiles here are NVIDIA B200: \
              1g.23gb 7g.180gb"
            ]
        );
    }
}
