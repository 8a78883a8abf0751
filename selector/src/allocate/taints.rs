//! Device taints against a request's tolerations (upstream incubating
//! `taintPreventsAllocation`, `taintTolerated`, and
//! `resourceclaim.ToleratesTaint`, the core/v1 toleration rule). Pure.
//!
//! Only the effects NoSchedule and NoExecute prevent allocation; any other
//! (None, or one a later release adds) is ignored. A toleration matches a
//! taint when its effect is empty or the same, its key is empty or the
//! same, and its operator is Exists, or Equal (the default) with the same
//! value.

use k8s_openapi::api::resource::v1::{Device, DeviceTaint, DeviceToleration};

/// `ToleratesTaint`.
pub fn tolerates(toleration: &DeviceToleration, taint: &DeviceTaint) -> bool {
    fn given(s: &Option<String>) -> Option<&str> {
        s.as_deref().filter(|s| !s.is_empty())
    }
    if given(&toleration.effect).is_some_and(|e| e != taint.effect) {
        return false;
    }
    if given(&toleration.key).is_some_and(|k| k != taint.key) {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}

/// `taintPreventsAllocation`: the first taint that keeps `device` from a
/// request with `tolerations`.
pub fn preventing<'d>(
    device: &'d Device,
    tolerations: &[DeviceToleration],
) -> Option<&'d DeviceTaint> {
    device.taints.iter().flatten().find(|taint| {
        matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            && !tolerations.iter().any(|t| tolerates(t, taint))
    })
}

/// A taint as `key=value:Effect` (`key:Effect` without a value).
pub fn show(taint: &DeviceTaint) -> String {
    match taint.value.as_deref() {
        Some(v) if !v.is_empty() => format!("{}={v}:{}", taint.key, taint.effect),
        _ => format!("{}:{}", taint.key, taint.effect),
    }
}
