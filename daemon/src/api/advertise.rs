//! SetMigAdvertise and the `mig_advertise` of GetInventory and GetStatus:
//! proto to [`crate::advertise`] and back. No rule lives here.

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Status;

use crate::advertise::{Asked, Form, InForce, MAX_REASON};

/// The request as the advertiser takes it; INVALID_ARGUMENT for no form or
/// an overlong or multi-line reason.
pub fn asked(request: pb::SetMigAdvertiseRequest) -> Result<Asked, Status> {
    let form = match pb::MigAdvertise::try_from(request.form) {
        Ok(pb::MigAdvertise::Layout) => Form::Layout,
        Ok(pb::MigAdvertise::Partitionable) => Form::Partitionable,
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
        form,
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
        form: form(in_force.form).into(),
        configured: in_force.configured.to_string(),
        reason: in_force.reason.clone(),
    }
}

/// The state of an inventory answer: its form is the inventory's own (the
/// answer is in it; they differ only while a failed switch is retried), the
/// rest from the advertiser.
pub fn inventory_state(in_force: &InForce, partitionable: bool) -> pb::MigAdvertiseState {
    let mut state = state(in_force);
    state.form = form(if partitionable {
        Form::Partitionable
    } else {
        Form::Layout
    })
    .into();
    state
}

fn form(form: Form) -> pb::MigAdvertise {
    match form {
        Form::Layout => pb::MigAdvertise::Layout,
        Form::Partitionable => pb::MigAdvertise::Partitionable,
    }
}
