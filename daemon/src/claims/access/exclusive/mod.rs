//! Exclusive (whole-GPU) access: the claim gets the GPU's device node and no
//! other claim may hold the GPU. No hardware step is needed, so prepare is one
//! spec write and one record write, and there is nothing to roll back on the
//! GPU. Its only book is the claim table's whole-GPU holding. A whole GPU
//! shared by time-slicing or MPS gets the same device node: its CDI device
//! is built here too ([`cdi`]).

mod cdi;

use super::{Access, Cx};
use crate::cdi_build::ClaimDevice;
use crate::claims::error::ClaimError;
use crate::inventory::{DeviceRef, GpuDevice};
use crate::state::AccessKind;
use crate::state::{ClaimRecord, RecordDevice};

/// Whole GPUs: the [`Access`] with no steps but its CDI device.
#[derive(Debug, Default)]
pub(in crate::claims) struct Exclusive;

impl Access for Exclusive {
    fn kind(&self) -> AccessKind {
        AccessKind::Exclusive
    }

    /// Never: a whole GPU needs no step under a `preparing` record.
    fn takes_part(&self, _record: &ClaimRecord, _devices: &[DeviceRef<'_>]) -> bool {
        false
    }

    fn reserve(
        &self,
        _cx: &Cx<'_>,
        _record: &mut ClaimRecord,
        _devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        Ok(())
    }

    fn unreserve(&self, _cx: &Cx<'_>, _record: &ClaimRecord) {}

    fn apply(
        &self,
        _cx: &Cx<'_>,
        _record: &mut ClaimRecord,
        _devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        Ok(())
    }

    fn release(&self, _cx: &Cx<'_>, _record: &ClaimRecord) -> Result<(), ClaimError> {
        Ok(())
    }

    fn roll_back(&self, _cx: &Cx<'_>, _record: &ClaimRecord) -> Result<Vec<String>, ClaimError> {
        Ok(Vec::new())
    }
}

impl Exclusive {
    /// CDI: the device nodes of every device that is not a MIG slice (a
    /// whole GPU, exclusive or shared).
    pub(in crate::claims) fn cdi_device(
        &self,
        cx: &Cx<'_>,
        device: &RecordDevice,
        gpu: &GpuDevice,
    ) -> Result<ClaimDevice, ClaimError> {
        cdi::claim_device(gpu, &device.device, &cx.env.settings.dev_root)
    }
}
