//! An MPS claim at start-up and when asked again: back into the policy and
//! the memory books ([`adopt`]), its daemons brought back, the running one
//! adopted and a missing one started again ([`restore`], after the MIG
//! set-up: a slice's daemon needs the slice), started again when the
//! kubelet asks again for a claim whose daemon is gone ([`ensure`]); and,
//! before any of that, the daemons of claims that are gone stopped
//! ([`sweep`]).

use super::held::{mps_devices, mps_uses};
use crate::claims::access::{Cx, Restored, Swept};
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::gpu::ComputeMode;
use crate::state::{ClaimRecord, DeviceSharing};

/// Start-up, before any acquire: stops the daemons no prepared claim uses
/// (with their units, mounts and folders), and puts their whole GPUs that no
/// live claim shares back to compute mode DEFAULT.
pub(super) fn sweep(cx: &Cx<'_>) -> Swept {
    let Some(tools) = &cx.shared.tools else {
        return Swept::default();
    };
    let live: Vec<_> = lock(cx.table)
        .records()
        .iter()
        .flat_map(mps_uses)
        .map(|one| one.key)
        .collect();
    match tools.mps.cleanup_stale(&live) {
        Ok(stopped) => {
            for daemon in &stopped {
                tracing::info!(daemon = %daemon.hash, devices = ?daemon.devices, "stopped an MPS control daemon whose claims are gone");
                for uuid in &daemon.devices {
                    if cx.shared.unused(uuid) {
                        // A MIG UUID is no whole GPU: nothing to reset.
                        cx.shared.reset_compute_mode(cx, uuid);
                    }
                }
            }
            Swept {
                stopped: stopped.len(),
                problems: Vec::new(),
            }
        }
        Err(err) => Swept {
            stopped: 0,
            problems: vec![format!(
                "MPS control daemons left from claims that are gone could not all be stopped: \
                 {err}"
            )],
        },
    }
}

/// Back into the policy and the memory books: every MPS whole GPU of
/// `record`, or none (the books stay as they were).
pub(super) fn adopt(cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
    let inventory = cx.env.inventory();
    let joined = {
        let mut books = lock(&cx.shared.books);
        mps_devices(record).try_for_each(|d| {
            books.policy.join_mps(&d.uuid, &record.uid)?;
            match &d.sharing {
                Some(DeviceSharing::Mps(mps)) => match mps.memory_share {
                    Some(bytes) => books.promise(&d.uuid, &record.uid, bytes, &inventory),
                    None => Ok(()),
                },
                _ => Ok(()),
            }
        })
    };
    if joined.is_err() {
        super::verbs::unreserve(cx, record);
    }
    joined
}

/// Brings every daemon of a prepared claim back (adopting the one still
/// running, starting it again after a reboot), with its GPUs in
/// EXCLUSIVE_PROCESS. Returns problems instead of failing: the other
/// claims still come back.
pub(super) fn restore(cx: &Cx<'_>, record: &mut ClaimRecord) -> Restored {
    let Some(tools) = &cx.shared.tools else {
        return Restored {
            problems: vec![format!(
                "claim {} uses MPS, but this gpusliced runs without MPS support",
                record.uid
            )],
            record_changed: false,
        };
    };
    let mut problems = Vec::new();
    for one in mps_uses(record) {
        let done = cx
            .shared
            .ensure_compute_modes(cx, &one.whole_gpus, ComputeMode::ExclusiveProcess)
            .and_then(|_| {
                tools
                    .mps
                    .acquire(&record.uid, &one.key, &one.limits)
                    .map_err(ClaimError::from)
            });
        match done {
            Ok(daemon) => {
                tracing::info!(claim_uid = %record.uid, daemon = %one.key, pid = ?daemon.status.pid, "MPS control daemon of a prepared claim is running");
            }
            Err(err) => problems.push(format!(
                "claim {}: the MPS control daemon of {} could not be brought back: {err}",
                record.uid, one.key
            )),
        }
    }
    Restored {
        problems,
        record_changed: false,
    }
}

/// A prepare of a claim prepared already: its daemons must run, so the
/// kubelet's retry repairs one that start-up could not bring back.
pub(super) fn ensure(cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
    let uses = mps_uses(record);
    if uses.is_empty() {
        return Ok(());
    }
    let tools = cx.shared.tools(&record.uid)?;
    let running = tools.mps.daemons();
    for one in uses {
        if running.iter().any(|d| d.key == one.key) {
            continue;
        }
        cx.shared
            .ensure_compute_modes(cx, &one.whole_gpus, ComputeMode::ExclusiveProcess)?;
        tools.mps.acquire(&record.uid, &one.key, &one.limits)?;
        tracing::warn!(claim_uid = %record.uid, daemon = %one.key, "MPS control daemon of a prepared claim was not running; started it");
    }
    Ok(())
}
