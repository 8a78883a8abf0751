//! Evaluation errors in words, with what to do about them. Pure.

use cel::ExecutionError;

use crate::device::DeviceView;
use crate::hints::nearest;

const NAMES: [&str; 5] = ["device", "quantity", "semver", "isQuantity", "isSemver"];

/// The message and hint for `error`, raised on `device`.
pub fn explain(error: &ExecutionError, device: &DeviceView) -> (String, Option<String>) {
    match error {
        ExecutionError::NoSuchKey(key) => missing_key(key, device),
        ExecutionError::NoSuchOverload(overload) => {
            let types = overload.argument_types();
            let special = |t: &String| t == "kubernetes.Quantity" || t == "kubernetes.Semver";
            let hint = match overload.function() {
                "_<_" | "_<=_" | "_>_" | "_>=_" if types.iter().any(special) => Some(
                    "quantities and versions have no <, <=, >, >=: write a.compareTo(b) >= 0, or a.isGreaterThan(b) / a.isLessThan(b)"
                        .to_owned(),
                ),
                "compareTo" | "isGreaterThan" | "isLessThan" if types.iter().any(|t| t == "string") => Some(
                    "compare a quantity with quantity(\"40Gi\") and a version with semver(\"1.2.3\"), not with a string"
                        .to_owned(),
                ),
                _ => None,
            };
            (overload.to_string(), hint)
        }
        ExecutionError::UndeclaredReference(name) => (
            format!("unknown name {name:?}"),
            nearest(name, NAMES.iter().copied()).map(|n| format!("did you mean {n}?")),
        ),
        other => (other.to_string(), None),
    }
}

fn missing_key(key: &str, device: &DeviceView) -> (String, Option<String>) {
    let message = format!(
        "device {} has no attribute or capacity {key:?} where the selector looks",
        device.name
    );
    let elsewhere = device
        .attributes
        .iter()
        .find(|(_, ids)| ids.contains_key(key))
        .map(|(d, _)| ("attributes", d))
        .or_else(|| {
            device
                .capacity
                .iter()
                .find(|(_, ids)| ids.contains_key(key))
                .map(|(d, _)| ("capacity", d))
        });
    if let Some((field, domain)) = elsewhere {
        return (
            message,
            Some(format!("it is device.{field}[{domain:?}].{key}")),
        );
    }
    let names = device
        .attributes
        .values()
        .flat_map(|ids| ids.keys())
        .chain(device.capacity.values().flat_map(|ids| ids.keys()))
        .map(String::as_str);
    let hint = match nearest(key, names) {
        Some(n) => format!("did you mean {n}?"),
        None => format!(
            "not every device has it: guard the lookup, e.g. `\"{key}\" in device.attributes[\"{}\"] && …`",
            device.driver
        ),
    };
    (message, Some(hint))
}
