//! The published slices in the resource.k8s.io/v1beta1 shape (the 1.33/1.34
//! beta: each device's fields under `basic`, counter sets in the slice
//! spec's `sharedCounters`), through k8s-openapi's v1beta1 types, and back:
//! a case that reads v1beta1 hands the scheduler the slices that went
//! through the v1beta1 types, and the round trip must lose nothing the
//! scheduler reads.

use k8s_openapi::api::resource::{v1, v1beta1};

/// Through JSON: v1 and v1beta1 share every field name below the device
/// (attributes, capacity with requestPolicy, consumesCounters, taints,
/// allowMultipleAllocations), so the device's fields move under `basic`
/// and the rest stays; deserializing into the v1beta1 types checks that the
/// result is a valid v1beta1 object.
pub fn to_v1beta1(slices: &[v1::ResourceSliceSpec]) -> Vec<v1beta1::ResourceSliceSpec> {
    slices
        .iter()
        .map(|spec| {
            let mut json = serde_json::to_value(spec).expect("v1 slice to JSON");
            if let Some(devices) = json.get_mut("devices").and_then(|d| d.as_array_mut()) {
                for device in devices {
                    let name = device.get("name").cloned().unwrap_or_default();
                    let mut basic = device.take();
                    if let Some(fields) = basic.as_object_mut() {
                        fields.remove("name");
                    }
                    *device = serde_json::json!({ "name": name, "basic": basic });
                }
            }
            serde_json::from_value(json).expect("a valid v1beta1 slice")
        })
        .collect()
}

/// Back to v1: the device's `basic` fields move up beside its name.
pub fn from_v1beta1(slices: &[v1beta1::ResourceSliceSpec]) -> Vec<v1::ResourceSliceSpec> {
    slices
        .iter()
        .map(|spec| {
            let mut json = serde_json::to_value(spec).expect("v1beta1 slice to JSON");
            if let Some(devices) = json.get_mut("devices").and_then(|d| d.as_array_mut()) {
                for device in devices {
                    let name = device.get("name").cloned().unwrap_or_default();
                    let basic = device.get_mut("basic").map(serde_json::Value::take);
                    let mut flat = serde_json::json!({ "name": name });
                    if let (Some(serde_json::Value::Object(fields)), Some(out)) =
                        (basic, flat.as_object_mut())
                    {
                        out.extend(fields);
                    }
                    *device = flat;
                }
            }
            serde_json::from_value(json).expect("a valid v1 slice")
        })
        .collect()
}

/// The slices as a v1beta1 reader gets them; they must be the v1 slices.
pub fn through_v1beta1(slices: &[v1::ResourceSliceSpec]) -> Vec<v1::ResourceSliceSpec> {
    let back = from_v1beta1(&to_v1beta1(slices));
    assert_eq!(back, slices, "the v1beta1 shape loses something");
    back
}
