//! The MPS edits of a claim's CDI devices: the first device of each daemon
//! the claim uses gets the daemon's client edits (pipe dir, shm, the claim's
//! memory share), so a container that gets all the request's devices gets
//! them once.

use super::held::mps_uses;
use crate::cdi_build::ClaimDevice;
use crate::claims::access::Cx;
use crate::claims::error::ClaimError;
use crate::state::ClaimRecord;

/// Gives the first device of each MPS daemon the claim uses the
/// daemon's client edits (pipe dir, shm, the claim's memory share), so a
/// container that gets all the request's devices gets them once.
pub(super) fn cdi_edits(
    cx: &Cx<'_>,
    record: &ClaimRecord,
    devices: &mut [ClaimDevice],
) -> Result<(), ClaimError> {
    let uses = mps_uses(record);
    if uses.is_empty() {
        return Ok(());
    }
    let tools = cx.shared.tools(&record.uid)?;
    for one in uses {
        let edits = tools.mps.client_edits(&one.key, &one.memory_share);
        if let Some(device) = devices.iter_mut().find(|d| d.name == one.first_device) {
            device.edits.env.extend(edits.env);
            device.edits.mounts.extend(edits.mounts);
        }
    }
    Ok(())
}
