//! The inventory's devices as tests look at them: a device's string
//! attribute, and the MIG slice of a profile a test prepares.

use gpuslice_proto::gpuslice::v1 as pb;

/// The string attribute `key` of `device` (`type`, `profile`, `uuid`...);
/// None when it has none or it is not a string.
pub fn text_attr(device: &pb::Device, key: &str) -> Option<String> {
    match device.attributes.get(key)?.value.as_ref()? {
        pb::attribute_value::Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// The name of the first MIG slice of `profile` (e.g. `3g.40gb`) that
/// `inventory` offers; fails the test naming the profile when there is
/// none.
pub fn slice_of_profile(inventory: &pb::GetInventoryResponse, profile: &str) -> String {
    (inventory.devices.iter())
        .find(|d| {
            text_attr(d, "type").as_deref() == Some("mig")
                && text_attr(d, "profile").as_deref() == Some(profile)
        })
        .map(|d| d.name.clone())
        .unwrap_or_else(|| panic!("no {profile} slice offered: {inventory:?}"))
}
