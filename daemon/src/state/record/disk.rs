//! A record's device as it is written: the fields in the order every
//! release wrote them, and the `kind` word ("exclusive", "mig", "shared")
//! earlier releases read to tell how the device is handed out. The word is
//! derived from the device's `mig` and `sharing` when written, and checked
//! against them when read: a record whose word and fields disagree is
//! refused rather than guessed at. Pure (serde).

use serde::{Deserialize, Serialize};

use super::{DeviceSharing, MigSlice, RecordDevice};

/// The word of a MIG slice.
const MIG: &str = "mig";
/// The word of a whole GPU shared with other claims.
const SHARED: &str = "shared";
/// The word of a whole GPU, the claim's alone.
const EXCLUSIVE: &str = "exclusive";

/// [`RecordDevice`] on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct DeviceOnDisk {
    device: String,
    uuid: String,
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mig: Option<MigSlice>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    restore_mig_mode: bool,
    request_names: Vec<String>,
    pool: String,
    cdi_device_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sharing: Option<DeviceSharing>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    consumed_memory: Option<u64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    share_id: String,
}

/// The word for a device with these fields.
fn word(mig: Option<&MigSlice>, sharing: Option<&DeviceSharing>) -> &'static str {
    match (mig, sharing) {
        (Some(_), _) => MIG,
        (None, Some(_)) => SHARED,
        (None, None) => EXCLUSIVE,
    }
}

impl From<RecordDevice> for DeviceOnDisk {
    fn from(d: RecordDevice) -> Self {
        Self {
            kind: word(d.mig.as_ref(), d.sharing.as_ref()).to_owned(),
            device: d.device,
            uuid: d.uuid,
            mig: d.mig,
            restore_mig_mode: d.restore_mig_mode,
            request_names: d.request_names,
            pool: d.pool,
            cdi_device_ids: d.cdi_device_ids,
            sharing: d.sharing,
            consumed_memory: d.consumed_memory,
            share_id: d.share_id,
        }
    }
}

impl TryFrom<DeviceOnDisk> for RecordDevice {
    type Error = String;

    fn try_from(d: DeviceOnDisk) -> Result<Self, String> {
        let derived = word(d.mig.as_ref(), d.sharing.as_ref());
        if d.kind != derived {
            return Err(format!(
                "device {} is of kind {:?}, but its fields make it {derived:?} (a slice: mig; a \
                 whole GPU shared: sharing)",
                d.device, d.kind
            ));
        }
        Ok(Self {
            device: d.device,
            uuid: d.uuid,
            mig: d.mig,
            restore_mig_mode: d.restore_mig_mode,
            request_names: d.request_names,
            pool: d.pool,
            cdi_device_ids: d.cdi_device_ids,
            sharing: d.sharing,
            consumed_memory: d.consumed_memory,
            share_id: d.share_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::RecordDevice;

    fn device(kind: &str, extra: &str) -> String {
        format!(
            r#"{{"device":"gpu-0","uuid":"GPU-1","kind":"{kind}","request_names":["a"],"pool":"p","cdi_device_ids":["x"]{extra}}}"#
        )
    }

    #[test]
    fn the_kind_word_is_written_from_the_fields_and_read_back() {
        let mps = r#","sharing":{"mode":"mps","devices":["gpu-0"]}"#;
        for (kind, extra) in [("exclusive", ""), ("shared", mps)] {
            let text = device(kind, extra);
            let read: RecordDevice = serde_json::from_str(&text).unwrap();
            assert_eq!(serde_json::to_string(&read).unwrap(), text);
        }
    }

    #[test]
    fn a_kind_its_fields_contradict_is_refused() {
        let err = serde_json::from_str::<RecordDevice>(&device("shared", "")).unwrap_err();
        assert!(
            err.to_string().contains(
                "device gpu-0 is of kind \"shared\", but its fields make it \"exclusive\""
            ),
            "{err}"
        );
        for word in ["mig", "gpu"] {
            let err = serde_json::from_str::<RecordDevice>(&device(word, "")).unwrap_err();
            assert!(err.to_string().contains("its fields make it"), "{err}");
        }
    }
}
