//! `[mig] advertise`: which [`MigOffering`] the engine makes, and why.
//!
//! Only the DRA plugin can see what the API server keeps, so under
//! `advertise = "auto"` (the default) gpusliced makes whichever offering the
//! plugin asks for (`SetMigAdvertise`), and the layout until it asks: the
//! layout is the offering every cluster takes. An explicit `"layout"` or
//! `"partitionable"` in the config wins over the plugin, and so does
//! `create = "ahead"` (its slices are the layout's, made before any claim).
//!
//! [`in_force`] is the pure rule. [`OfferingSwitch`] keeps the config and the
//! plugin's last request, and applies a change of offering through the
//! engine's MIG set-up, given the `[mig]` with the offering written into it:
//! the engine never sees "auto". One change at a time (a SIGHUP and a
//! request never interleave), so the offering applied is the last one
//! decided. The plugin's request is kept in memory only: after a restart
//! gpusliced offers the layout until the plugin asks again (it asks before
//! every GetInventory). Device names are the same in both offerings
//! (`gpu-<i>-mig-<profile>-<start>`), so a claim prepared under one is
//! unprepared and restored by name after a switch.

use std::sync::Mutex;

use super::config::{MigConfig, MigCreate, MigOffering};
use crate::claims::ClaimError;

/// What a client (the DRA plugin) asked for, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The offering it wants.
    pub offering: MigOffering,
    /// Its reason, one line.
    pub reason: String,
}

/// The offering in force and why: what `gpuslicectl status` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InForce {
    /// The offering made.
    pub offering: MigOffering,
    /// `[mig] advertise` as configured (`None`: "auto").
    pub configured: Option<MigOffering>,
    /// Why, e.g. "auto: the API server keeps shared counters".
    pub reason: String,
}

/// The offering in force for `config`, given what the plugin last `asked`.
pub fn in_force(config: &MigConfig, asked: Option<&Asked>) -> InForce {
    let (offering, reason) = match (config.advertise, config.create, asked) {
        (Some(offering), ..) => (offering, "set in the config".to_owned()),
        (None, MigCreate::Ahead, _) => (
            MigOffering::Layout,
            "auto: create = \"ahead\" makes the layout's slices ahead".to_owned(),
        ),
        (None, MigCreate::OnPrepare, Some(asked)) => {
            (asked.offering, format!("auto: {}", asked.reason))
        }
        (None, MigCreate::OnPrepare, None) => (
            MigOffering::Layout,
            "auto: no DRA plugin has asked yet; the layout is the safe form".to_owned(),
        ),
    };
    InForce {
        offering,
        configured: config.advertise,
        reason,
    }
}

/// `config` with its advertise set to `offering`: what the engine is given.
pub fn resolved(config: &MigConfig, offering: MigOffering) -> MigConfig {
    MigConfig {
        advertise: Some(offering),
        ..config.clone()
    }
}

/// Longest reason a client may give, in bytes.
pub const MAX_REASON: usize = 256;

#[derive(Debug)]
struct State {
    config: MigConfig,
    asked: Option<Asked>,
    in_force: InForce,
    /// Whether the offering in force was logged (once at start-up, then at
    /// every change).
    logged: bool,
}

/// The engine's MIG set-up, given `[mig]` with the offering written into it
/// (`Engine::setup_mig`): how the switch applies a change. Blocking;
/// returns the set-up's problems.
pub trait ApplyMig {
    /// Sets the engine's MIG up for `mig`.
    fn apply_mig(&self, mig: &MigConfig) -> Result<Vec<String>, ClaimError>;
}

impl<T: ApplyMig + ?Sized> ApplyMig for std::sync::Arc<T> {
    fn apply_mig(&self, mig: &MigConfig) -> Result<Vec<String>, ClaimError> {
        (**self).apply_mig(mig)
    }
}

/// The config's `[mig]`, the plugin's last request and the offering in
/// force.
#[derive(Debug)]
pub struct OfferingSwitch {
    state: Mutex<State>,
}

impl OfferingSwitch {
    /// Before anything is applied: the config's offering, no request yet.
    pub fn new(config: MigConfig) -> Self {
        let in_force = in_force(&config, None);
        Self {
            state: Mutex::new(State {
                config,
                asked: None,
                in_force,
                logged: false,
            }),
        }
    }

    /// The offering in force and why.
    pub fn in_force(&self) -> InForce {
        self.lock().in_force.clone()
    }

    /// Runs `read` with the offering in force, no switch meanwhile: an
    /// inventory read inside it is of that offering.
    pub fn read<T>(&self, read: impl FnOnce(&InForce) -> T) -> T {
        read(&self.lock().in_force)
    }

    /// Applies `config` (start-up, SIGHUP): `[mig]` with the offering in
    /// force under it. Blocking; returns the engine's MIG problems.
    pub fn apply_config(
        &self,
        engine: &dyn ApplyMig,
        config: MigConfig,
    ) -> Result<Vec<String>, ClaimError> {
        let mut state = self.lock();
        let next = in_force(&config, state.asked.as_ref());
        let problems = engine.apply_mig(&resolved(&config, next.offering))?;
        state.config = config;
        Self::install(&mut state, next);
        Ok(problems)
    }

    /// The plugin asks for `asked`: applied when the config leaves the
    /// offering to it and the offering changes (a MIG rescan). Blocking. A
    /// switch that fails leaves the request unrecorded, so the plugin's
    /// retry runs it again.
    pub fn ask(&self, engine: &dyn ApplyMig, asked: Asked) -> Result<InForce, ClaimError> {
        let mut state = self.lock();
        if state.asked.as_ref() == Some(&asked) {
            return Ok(state.in_force.clone());
        }
        let next = in_force(&state.config, Some(&asked));
        if next.offering != state.in_force.offering {
            engine.apply_mig(&resolved(&state.config, next.offering))?;
        }
        state.asked = Some(asked);
        Self::install(&mut state, next);
        Ok(state.in_force.clone())
    }

    fn install(state: &mut State, next: InForce) {
        if next != state.in_force || !state.logged {
            tracing::info!(
                offering = <&str>::from(next.offering),
                configured = super::config::advertise_text(next.configured),
                reason = %next.reason,
                "MIG offering"
            );
        }
        state.in_force = next;
        state.logged = true;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
#[path = "offering_tests.rs"]
mod tests;
