//! How a device of a claim is used, in one word: the kind of access the
//! claim engine gives it. The one encoding of a device's use in the daemon:
//! the claim engine's kinds of access, the claim table's sharing, the
//! activity sampler, the metrics' labels and the API's words all take it
//! from here. Derived from the persisted record (a device's `sharing` and
//! `mig`), never stored as such, so the record's format does not depend on
//! it. Its text ("exclusive", "mig", "timeslicing", "mps") is the metric
//! label and the API's word. Pure.

use super::{ClaimRecord, DeviceSharing, RecordDevice};

/// The kind of access a device of a claim has. Declared in the order the
/// metrics list them; prepare applies them in its own order (exclusive,
/// MIG, time-slicing, MPS: a slice exists before a daemon on it starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[derive(strum::Display, strum::IntoStaticStr, strum::VariantArray)]
#[derive(strum::EnumString)]
#[strum(serialize_all = "lowercase")]
pub enum AccessKind {
    /// A whole GPU, the claim's alone.
    Exclusive,
    /// A MIG slice, the claim's alone.
    Mig,
    /// Devices served by an MPS control daemon: whole GPUs shared with other
    /// claims, or the claim's own MIG slices.
    Mps,
    /// A whole GPU time-sliced with other claims.
    TimeSlicing,
}

impl AccessKind {
    /// The kind a device is used in: its sharing when it has one (MPS on a
    /// MIG slice is MPS), else MIG for a slice, else exclusive.
    pub fn of_device(device: &RecordDevice) -> Self {
        match (&device.sharing, &device.mig) {
            (Some(sharing), _) => Self::of_sharing(sharing),
            (None, Some(_)) => Self::Mig,
            (None, None) => Self::Exclusive,
        }
    }

    /// The kind of a sharing: MPS or time-slicing.
    pub fn of_sharing(sharing: &DeviceSharing) -> Self {
        match sharing {
            DeviceSharing::Mps(_) => Self::Mps,
            DeviceSharing::TimeSlicing { .. } => Self::TimeSlicing,
        }
    }

    /// The kind of a claim: the sharing of its devices when any is shared,
    /// else MIG when any device is a slice, else exclusive.
    pub fn of_claim(record: &ClaimRecord) -> Self {
        let sharing = record.devices.iter().find_map(|d| d.sharing.as_ref());
        match sharing {
            Some(sharing) => Self::of_sharing(sharing),
            None if record.devices.iter().any(|d| d.mig.is_some()) => Self::Mig,
            None => Self::Exclusive,
        }
    }

    /// Whether the device takes part in this kind: a slice under MPS takes
    /// part in MIG and in MPS.
    pub fn takes_part(self, device: &RecordDevice) -> bool {
        match self {
            Self::Exclusive => Self::of_device(device) == Self::Exclusive,
            Self::Mig => device.mig.is_some(),
            Self::TimeSlicing => {
                matches!(device.sharing, Some(DeviceSharing::TimeSlicing { .. }))
            }
            Self::Mps => matches!(device.sharing, Some(DeviceSharing::Mps(_))),
        }
    }

    /// Whether claims share a whole GPU under it.
    pub fn shares_gpus(self) -> bool {
        matches!(self, Self::TimeSlicing | Self::Mps)
    }

    /// The kind in a sentence: "a whole GPU", "MIG", "time-slicing", "MPS".
    pub fn words(self) -> &'static str {
        match self {
            Self::Exclusive => "a whole GPU",
            Self::Mig => "MIG",
            Self::TimeSlicing => "time-slicing",
            Self::Mps => "MPS",
        }
    }
}

#[cfg(test)]
mod tests {
    use strum::VariantArray;

    use super::AccessKind;

    #[test]
    fn the_text_of_each_kind_is_its_label_and_reads_back() {
        let texts: Vec<String> = AccessKind::VARIANTS
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(texts, ["exclusive", "mig", "mps", "timeslicing"]);
        for kind in AccessKind::VARIANTS {
            assert_eq!(kind.to_string().parse::<AccessKind>(), Ok(*kind));
        }
    }
}
