//! A prepare of a claim already prepared (`Engine::prepare_again`, in
//! `prepare`). The same devices and configs: the same claim again (the
//! kubelet retries, the plugin restarts), answered with its record after
//! each kind's effects (its MPS daemon) and its CDI spec are checked.
//! Anything else is refused, and the refusal says what differs, in the terms a user
//! wrote it ([`difference`], pure): the devices; else the sharing of the
//! devices where it differs ("gpu-3 time-sliced (interval Long)" against
//! "gpu-3 shared by MPS (active threads 50%)"); else the opaque configs
//! themselves, which may differ without changing what they mean. A claim's
//! allocation never changes in Kubernetes, so a difference is a hand-made
//! prepare reusing a uid: unprepare first, or use a new uid.

use std::collections::BTreeMap;

use super::access::{mps, timeslicing};
use super::request::PrepareRequest;
use crate::state::{ClaimRecord, DeviceSharing};

/// What a refused prepare asked for, against what the claim has, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Difference {
    /// What the claim is prepared with, e.g. "devices [gpu-0]".
    pub prepared: String,
    /// What this prepare asks for, in the same terms.
    pub asked: String,
}

/// Device name → its sharing (`None`: the claim's alone), sorted by name.
type Devices<'a> = BTreeMap<&'a str, Option<&'a DeviceSharing>>;

/// What differs between `record` and `req` (with its `sharing`), or `None`
/// when it asks for the same devices with the same configs.
pub(super) fn difference(
    record: &ClaimRecord,
    req: &PrepareRequest,
    sharing: &[Option<DeviceSharing>],
) -> Option<Difference> {
    let held: Devices<'_> = record
        .devices
        .iter()
        .map(|d| (d.device.as_str(), d.sharing.as_ref()))
        .collect();
    let asked: Devices<'_> = req
        .devices
        .iter()
        .zip(
            sharing
                .iter()
                .map(Option::as_ref)
                .chain(std::iter::repeat(None)),
        )
        .map(|(d, s)| (d.device.as_str(), s))
        .collect();
    let configs: Vec<&str> = req
        .configs
        .iter()
        .map(|c| c.parameters_json.as_str())
        .collect();
    if held.keys().eq(asked.keys()) {
        if configs == record.configs {
            return None;
        }
        return Some(other_sharing(&held, &asked).unwrap_or_else(|| Difference {
            prepared: configs_words(record.configs.iter().map(String::as_str)),
            asked: format!(
                "{} (the same devices and sharing)",
                configs_words(configs.iter().copied())
            ),
        }));
    }
    let list = |devices: &Devices<'_>| {
        let words: Vec<String> = devices.iter().map(|(d, s)| device_words(d, *s)).collect();
        format!("devices [{}]", words.join(", "))
    };
    Some(Difference {
        prepared: list(&held),
        asked: list(&asked),
    })
}

/// The devices whose sharing differs, each side; `None` when none does.
fn other_sharing(held: &Devices<'_>, asked: &Devices<'_>) -> Option<Difference> {
    let (prepared, wanted): (Vec<String>, Vec<String>) = held
        .iter()
        .filter(|(device, sharing)| asked.get(*device) != Some(*sharing))
        .map(|(device, sharing)| {
            let now = asked.get(device).copied().flatten();
            (device_words(device, *sharing), device_words(device, now))
        })
        .unzip();
    (!prepared.is_empty()).then(|| Difference {
        prepared: prepared.join(", "),
        asked: wanted.join(", "),
    })
}

/// "gpu-3", "gpu-3 time-sliced (interval Long)", "gpu-3 shared by MPS
/// (active threads 50%, memory share 20.0 GiB)".
pub(super) fn device_words(device: &str, sharing: Option<&DeviceSharing>) -> String {
    match sharing {
        None => device.to_owned(),
        Some(DeviceSharing::TimeSlicing { interval }) => {
            timeslicing::view::words(device, *interval)
        }
        Some(DeviceSharing::Mps(sharing)) => mps::view::words(device, sharing),
    }
}

/// Longest config shown whole in a refusal; longer ones end in "…".
const CONFIG_SHOWN: usize = 160;

/// "the opaque configs [{…}, {…}]", or "no opaque configs".
fn configs_words<'a>(configs: impl Iterator<Item = &'a str>) -> String {
    let shown: Vec<String> = configs
        .map(|c| match c.char_indices().nth(CONFIG_SHOWN) {
            Some((cut, _)) => format!("{}…", &c[..cut]),
            None => c.to_owned(),
        })
        .collect();
    if shown.is_empty() {
        "no opaque configs".to_owned()
    } else {
        format!("the opaque configs [{}]", shown.join(", "))
    }
}

#[cfg(test)]
mod tests;
