//! The MIG advertise form, before each sync: the probe's verdict
//! ([`crate::probe::MigFormProbe`]: kept, or the steps still open asked
//! now), told to gpusliced (`SetMigAdvertise`, every sync: gpusliced
//! forgets it when it restarts), and what gpusliced put in force logged,
//! once and again on change. Under an explicit form in gpusliced's config
//! the log says the probe was not used, and warns when that form is one the
//! API server drops.
//!
//! What can change the verdict is the API server's configuration (its
//! feature gates, served versions, admission and authorization), which
//! changes when it restarts (an upgrade to another version included). So
//! the verdict is kept across syncs and their retries, and forgotten (the
//! next sync probes from the start) only when:
//! - the slice watch relists (it reconnected: the API server may have
//!   restarted with other gates);
//! - a write is refused as invalid or forbidden (400, 401, 403, 422: the
//!   API server no longer takes what the probe found it takes);
//! - a write's answer lost counters it sent (the gate went off under it);
//! - the plugin restarts (it keeps nothing).
//!
//! A write that decides nothing (408, 409, 429, 5xx, no answer) or that
//! names a slice gone (404) is retried and forgets nothing; the plugin has
//! no config reload, and gpusliced's config does not bear on the verdict.

use gpuslice_proto::gpuslice::v1 as pb;
use tracing::{debug, info, warn};

use super::{PublishError, Publisher};
use crate::advertise::{Decision, Form};
use crate::probe::ProbeTarget;

impl Publisher {
    /// Probes if needed, then asks gpusliced for the form.
    pub(super) async fn settle_mig_form(&mut self) -> Result<(), PublishError> {
        // The first relist is the watch starting, not a reconnect.
        let relists = self.echoes.relists();
        if relists > 1 && relists != self.probed_at_relists {
            self.mig_probe.forget();
            self.probed_at_relists = relists;
        }
        let decision = match self.mig_probe.decision() {
            Some(decision) => decision.clone(),
            None => {
                let owner = self.owner().await?;
                let target = ProbeTarget {
                    node: &self.node_name,
                    driver: &self.driver,
                    owner: &owner,
                };
                let decision = (self.mig_probe.decide(&self.kube, &target).await)
                    .map_err(PublishError::Probe)?;
                debug!(form = ?decision.form, reason = %decision.reason, "probed the API server");
                decision
            }
        };
        let request = pb::SetMigAdvertiseRequest {
            form: form_pb(decision.form).into(),
            reason: decision.reason.clone(),
        };
        match self.gpusliced.set_mig_advertise(request).await {
            Ok(state) => self.log_in_force(&decision, state.into_inner()),
            Err(status) if status.code() == tonic::Code::Unimplemented => {
                debug!("gpusliced has no SetMigAdvertise (older); it chooses the form");
            }
            Err(status) => return Err(PublishError::Advertise(status)),
        }
        Ok(())
    }

    /// Probe again at the next sync (a write was refused as invalid or
    /// forbidden, or lost fields).
    pub(super) fn probe_again(&mut self) {
        self.mig_probe.forget();
    }

    fn log_in_force(&mut self, probe: &Decision, state: pb::MigAdvertiseState) {
        if self.mig_in_force.as_ref() == Some(&state) {
            return;
        }
        let form = form_name(state.form);
        let overridden = state.configured != "auto";
        if overridden && form == "partitionable" && probe.form == Form::Layout {
            warn!(
                form, configured = %state.configured, probe = %probe.reason,
                "MIG advertise: partitionable (set in gpusliced's config), but {}: the scheduler \
                 may place overlapping MIG slices; set [mig] advertise = \"auto\" or \"layout\"",
                probe.reason
            );
        } else if overridden {
            info!(
                form, configured = %state.configured, probe = %probe.reason,
                "MIG advertise: {form} ({}: [mig] advertise = \"{}\" in gpusliced's config; the \
                 probe found {} and is not used)",
                state.reason, state.configured, probe.reason
            );
        } else {
            info!(form, configured = %state.configured, reason = %state.reason,
                  "MIG advertise: {form} ({})", state.reason);
        }
        self.mig_in_force = Some(state);
    }
}

fn form_pb(form: Form) -> pb::MigAdvertise {
    match form {
        Form::Layout => pb::MigAdvertise::Layout,
        Form::Partitionable => pb::MigAdvertise::Partitionable,
    }
}

fn form_name(form: i32) -> &'static str {
    match pb::MigAdvertise::try_from(form) {
        Ok(pb::MigAdvertise::Partitionable) => "partitionable",
        Ok(pb::MigAdvertise::Layout) => "layout",
        _ => "unknown",
    }
}
