//! `[mig] advertise`: which form of MIG slices gpusliced offers, and why.
//!
//! Only the DRA plugin can see what the API server keeps, so under
//! `advertise = "auto"` (the default) gpusliced offers whichever form the
//! plugin asks for (`SetMigAdvertise`), and the layout until it asks: the
//! layout is the form every cluster takes. An explicit `"layout"` or
//! `"partitionable"` in the config wins over the plugin, and so does
//! `create = "ahead"` (its slices are the layout's, made before any claim).
//!
//! [`in_force`] is the pure rule. [`Advertiser`] keeps the config and the
//! plugin's last request, and applies a change of form through
//! [`Engine::setup_mig`] with the form written into the `[mig]` it passes:
//! the engine never sees `Auto`. One change at a time (a SIGHUP and a
//! request never interleave), so the form applied is the last one decided.
//! The plugin's request is kept in memory only: after a restart gpusliced
//! offers the layout until the plugin asks again (it asks before every
//! GetInventory). Device names are the same in both forms
//! (`gpu-<i>-mig-<profile>-<start>`), so a claim prepared in one form is
//! unprepared and restored by name after a switch.

use std::sync::Mutex;

use crate::claims::{ClaimError, Engine};
use crate::config::{MigAdvertise, MigConfig, MigCreate};

/// A form the inventory can be in; its text is "layout" or "partitionable",
/// as the config spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Form {
    /// The concrete slices of each GPU's layout, no counters.
    Layout,
    /// Every (profile, placement), with shared counters.
    Partitionable,
}

/// What a client (the DRA plugin) asked for, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The form it wants.
    pub form: Form,
    /// Its reason, one line.
    pub reason: String,
}

/// The form in force and why: what `gpuslicectl status` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InForce {
    /// The form offered.
    pub form: Form,
    /// `[mig] advertise` as configured.
    pub configured: MigAdvertise,
    /// Why, e.g. "auto: the API server keeps shared counters".
    pub reason: String,
}

/// The form in force for `config`, given what the plugin last `asked`.
pub fn in_force(config: &MigConfig, asked: Option<&Asked>) -> InForce {
    let (form, reason) = match (config.advertise, config.create, asked) {
        (MigAdvertise::Layout, ..) => (Form::Layout, "set in the config".to_owned()),
        (MigAdvertise::Partitionable, ..) => (Form::Partitionable, "set in the config".to_owned()),
        (MigAdvertise::Auto, MigCreate::Ahead, _) => (
            Form::Layout,
            "auto: create = \"ahead\" makes the layout's slices ahead".to_owned(),
        ),
        (MigAdvertise::Auto, MigCreate::OnPrepare, Some(asked)) => {
            (asked.form, format!("auto: {}", asked.reason))
        }
        (MigAdvertise::Auto, MigCreate::OnPrepare, None) => (
            Form::Layout,
            "auto: no DRA plugin has asked yet; the layout is the safe form".to_owned(),
        ),
    };
    InForce {
        form,
        configured: config.advertise,
        reason,
    }
}

/// `config` with its advertise set to `form`: what the engine is given.
pub fn resolved(config: &MigConfig, form: Form) -> MigConfig {
    MigConfig {
        advertise: match form {
            Form::Layout => MigAdvertise::Layout,
            Form::Partitionable => MigAdvertise::Partitionable,
        },
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
    /// Whether the form in force was logged (once at start-up, then at
    /// every change).
    logged: bool,
}

/// The config's `[mig]`, the plugin's last request and the form in force.
#[derive(Debug)]
pub struct Advertiser {
    state: Mutex<State>,
}

impl Advertiser {
    /// Before anything is applied: the config's form, no request yet.
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

    /// The form in force and why.
    pub fn in_force(&self) -> InForce {
        self.lock().in_force.clone()
    }

    /// Runs `read` with the form in force, no switch of form meanwhile: an
    /// inventory read inside it is in that form.
    pub fn read<T>(&self, read: impl FnOnce(&InForce) -> T) -> T {
        read(&self.lock().in_force)
    }

    /// Applies `config` (start-up, SIGHUP): `[mig]` with the form in force
    /// under it. Blocking; returns the engine's MIG problems.
    pub fn apply_config(
        &self,
        engine: &Engine,
        config: MigConfig,
    ) -> Result<Vec<String>, ClaimError> {
        let mut state = self.lock();
        let next = in_force(&config, state.asked.as_ref());
        let problems = engine.setup_mig(&resolved(&config, next.form))?;
        state.config = config;
        Self::install(&mut state, next);
        Ok(problems)
    }

    /// The plugin asks for `asked`: applied when the config leaves the form
    /// to it and the form changes (a MIG rescan). Blocking. A switch that
    /// fails leaves the request unrecorded, so the plugin's retry runs it
    /// again.
    pub fn ask(&self, engine: &Engine, asked: Asked) -> Result<InForce, ClaimError> {
        let mut state = self.lock();
        if state.asked.as_ref() == Some(&asked) {
            return Ok(state.in_force.clone());
        }
        let next = in_force(&state.config, Some(&asked));
        if next.form != state.in_force.form {
            engine.setup_mig(&resolved(&state.config, next.form))?;
        }
        state.asked = Some(asked);
        Self::install(&mut state, next);
        Ok(state.in_force.clone())
    }

    fn install(state: &mut State, next: InForce) {
        if next != state.in_force || !state.logged {
            tracing::info!(
                form = <&str>::from(next.form),
                configured = <&str>::from(next.configured),
                reason = %next.reason,
                "MIG advertise"
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
mod tests;
