//! SetMigAdvertise and the `mig_advertise` of GetInventory and GetStatus:
//! proto to [`crate::claims::mig_offering`] and back. No rule lives here.
//! The wire keeps its names (`MigAdvertise`, `form`) so that a plugin and a
//! daemon of different releases still understand each other.

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Status;

use crate::claims::mig_offering::{Asked, InForce, MAX_REASON};
use crate::config::{MigOffering, advertise_text};

/// The request as the offering switch takes it; INVALID_ARGUMENT for no
/// form or an overlong or multi-line reason.
pub fn asked(request: pb::SetMigAdvertiseRequest) -> Result<Asked, Status> {
    let offering = match pb::MigAdvertise::try_from(request.form) {
        Ok(pb::MigAdvertise::Layout) => MigOffering::Layout,
        Ok(pb::MigAdvertise::Partitionable) => MigOffering::Partitionable,
        _ => {
            return Err(Status::invalid_argument(format!(
                "form: {} is neither MIG_ADVERTISE_LAYOUT nor MIG_ADVERTISE_PARTITIONABLE",
                request.form
            )));
        }
    };
    let reason = request.reason.trim();
    if reason.len() > MAX_REASON || reason.contains(['\n', '\r']) {
        return Err(Status::invalid_argument(format!(
            "reason: one line of at most {MAX_REASON} bytes, please"
        )));
    }
    Ok(Asked {
        offering,
        reason: if reason.is_empty() {
            "asked by a client".to_owned()
        } else {
            reason.to_owned()
        },
    })
}

/// The state as the API reports it.
pub fn state(in_force: &InForce) -> pb::MigAdvertiseState {
    pb::MigAdvertiseState {
        form: wire(in_force.offering).into(),
        configured: advertise_text(in_force.configured).to_owned(),
        reason: in_force.reason.clone(),
    }
}

/// The state of an inventory answer: its offering is the inventory's own
/// (the answer is in it; they differ only while a failed switch is
/// retried), the rest from the switch.
pub fn inventory_state(in_force: &InForce, offering: MigOffering) -> pb::MigAdvertiseState {
    let mut state = state(in_force);
    state.form = wire(offering).into();
    state
}

fn wire(offering: MigOffering) -> pb::MigAdvertise {
    match offering {
        MigOffering::Layout => pb::MigAdvertise::Layout,
        MigOffering::Partitionable => pb::MigAdvertise::Partitionable,
    }
}
