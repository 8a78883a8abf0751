//! `gpuslicectl gpus`: each physical GPU and what gpuslice can offer on it,
//! from the features gpusliced reports with its inventory: MIG (the
//! model's profiles, and whether the `[mig]` config manages it), MPS and its
//! client limits, time-slice intervals (learned from nvidia-smi), NVLink
//! and the multi-node fabric clique. Then each model's MIG profiles.

use std::collections::BTreeMap;

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::attribute_value::Value as AttrValue;
use serde_json::{Value, json};

use crate::render::{doc, gib, table};

/// A string or version attribute of `device`, or "".
fn text(device: &pb::Device, key: &str) -> String {
    match device.attributes.get(key).and_then(|a| a.value.as_ref()) {
        Some(AttrValue::String(s) | AttrValue::Version(s)) => s.clone(),
        _ => String::new(),
    }
}

fn managed(device: &pb::Device) -> bool {
    matches!(
        device
            .attributes
            .get("migManaged")
            .and_then(|a| a.value.as_ref()),
        Some(AttrValue::Bool(true))
    )
}

/// The whole GPUs of the reply that report their features.
fn gpus(reply: &pb::GetInventoryResponse) -> Vec<(&pb::Device, &pb::GpuFeatures)> {
    (reply.devices.iter())
        .filter_map(|d| d.features.as_ref().map(|f| (d, f)))
        .collect()
}

fn mig_cell(device: &pb::Device, features: &pb::GpuFeatures) -> String {
    match (features.mig, managed(device)) {
        (false, _) => "no".to_owned(),
        (true, false) => format!("{} profiles", features.mig_profiles.len()),
        (true, true) => format!("{} profiles, managed", features.mig_profiles.len()),
    }
}

fn mps_cell(features: &pb::GpuFeatures) -> &'static str {
    match (features.mps, features.mps_limits) {
        (false, _) => "no",
        (true, false) => "yes, no limits",
        (true, true) => "yes, limits",
    }
}

fn dash(value: &str) -> String {
    if value.is_empty() {
        "-".to_owned()
    } else {
        value.to_owned()
    }
}

/// The table (or JSON document) of `reply`'s GPUs.
pub fn render(reply: &pb::GetInventoryResponse, json: bool) -> String {
    let gpus = gpus(reply);
    if json {
        return doc(&gpus_json(&gpus));
    }
    let rows: Vec<Vec<String>> = (gpus.iter())
        .map(|(device, f)| {
            vec![
                device.name.clone(),
                text(device, "productName"),
                text(device, "architecture"),
                gib(device.capacity.get("memory").copied().unwrap_or(0)),
                mig_cell(device, f),
                mps_cell(f).to_owned(),
                f.timeslice_settings
                    .split(" (")
                    .next()
                    .unwrap_or("")
                    .to_owned(),
                f.nvlink_links.to_string(),
                dash(&f.clique),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "GPU",
            "PRODUCT",
            "ARCHITECTURE",
            "MEMORY",
            "MIG",
            "MPS",
            "TIME-SLICE INTERVALS",
            "NVLINK",
            "CLIQUE",
        ],
        &rows,
    );
    let mut models: BTreeMap<String, &[String]> = BTreeMap::new();
    for (device, f) in &gpus {
        if f.mig {
            models.insert(text(device, "productName"), &f.mig_profiles);
        }
    }
    for (product, profiles) in models {
        out.push_str(&format!(
            "MIG profiles of {product}: {}\n",
            profiles.join(" ")
        ));
    }
    for (device, f) in &gpus {
        if let Some(why) = f.timeslice_settings.strip_prefix("no ") {
            out.push_str(&format!(
                "{} takes no time-slice interval {why}: time-slicing at the driver's default only\n",
                device.name
            ));
        }
    }
    out
}

fn gpus_json(gpus: &[(&pb::Device, &pb::GpuFeatures)]) -> Value {
    let gpus: Vec<Value> = (gpus.iter())
        .map(|(device, f)| {
            json!({
                "device": device.name,
                "product": text(device, "productName"),
                "architecture": text(device, "architecture"),
                "memory_bytes": device.capacity.get("memory").copied().unwrap_or(0),
                "mig": f.mig,
                "mig_managed": managed(device),
                "mig_profiles": f.mig_profiles,
                "mps": f.mps,
                "mps_limits": f.mps_limits,
                "timeslice_settings": f.timeslice_settings,
                "nvlink_links": f.nvlink_links,
                "clique": f.clique,
            })
        })
        .collect();
    json!({ "gpus": gpus })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use gpuslice_proto::gpuslice::v1 as pb;
    use gpuslice_proto::gpuslice::v1::attribute_value::Value as AttrValue;

    use super::render;

    fn gpu(name: &str, product: &str, features: pb::GpuFeatures) -> pb::Device {
        let attr = |v: AttrValue| pb::AttributeValue { value: Some(v) };
        pb::Device {
            name: name.into(),
            attributes: HashMap::from([
                (
                    "productName".to_owned(),
                    attr(AttrValue::String(product.into())),
                ),
                (
                    "architecture".to_owned(),
                    attr(AttrValue::String("Blackwell".into())),
                ),
                (
                    "migManaged".to_owned(),
                    attr(AttrValue::Bool(name == "gpu-1")),
                ),
            ]),
            capacity: HashMap::from([("memory".to_owned(), 24 << 30)]),
            features: Some(features),
            ..pb::Device::default()
        }
    }

    fn reply() -> pb::GetInventoryResponse {
        let mig = pb::GpuFeatures {
            mig: true,
            mig_profiles: vec!["1g.23gb".into(), "7g.186gb".into()],
            mps: true,
            mps_limits: true,
            timeslice_settings: "untried".into(),
            nvlink_links: 18,
            clique: "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.1".into(),
        };
        let l4 = pb::GpuFeatures {
            mps: true,
            mps_limits: true,
            timeslice_settings: "no (Not Supported)".into(),
            ..pb::GpuFeatures::default()
        };
        pb::GetInventoryResponse {
            devices: vec![
                gpu("gpu-0", "NVIDIA GB200", mig.clone()),
                gpu("gpu-1", "NVIDIA GB200", mig),
                gpu("gpu-2", "NVIDIA L4", l4),
                pb::Device {
                    name: "gpu-1-mig-1g23gb-0".into(),
                    ..pb::Device::default()
                },
            ],
            ..pb::GetInventoryResponse::default()
        }
    }

    #[test]
    fn a_row_per_gpu_then_each_models_profiles_and_what_nvidia_smi_refused() {
        let text = render(&reply(), false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(lines[0].starts_with("GPU    PRODUCT"), "{text}");
        assert!(lines[1].contains("2 profiles  "), "{text}");
        assert!(lines[2].contains("2 profiles, managed"), "{text}");
        assert!(lines[3].starts_with("gpu-2  NVIDIA L4"), "{text}");
        assert!(lines[3].contains("  no    "), "{text}");
        assert!(
            lines[1].ends_with("18      4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.1"),
            "{text}"
        );
        assert_eq!(lines[4], "MIG profiles of NVIDIA GB200: 1g.23gb 7g.186gb");
        assert_eq!(
            lines[5],
            "gpu-2 takes no time-slice interval (Not Supported): time-slicing at the driver's \
             default only"
        );
    }

    #[test]
    fn json_lists_every_gpu_and_no_slice() {
        let doc: serde_json::Value = serde_json::from_str(&render(&reply(), true)).unwrap();
        let gpus = doc["gpus"].as_array().unwrap();
        assert_eq!(gpus.len(), 3);
        assert_eq!(gpus[1]["mig_managed"], true);
        assert_eq!(gpus[2]["mig_profiles"], serde_json::json!([]));
        assert_eq!(gpus[0]["clique"], "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.1");
    }
}
