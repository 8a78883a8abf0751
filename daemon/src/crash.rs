//! Crash points: named places right after each durable step (a file
//! written, renamed or removed, a hardware change, a process started or
//! stopped) where a test makes gpusliced die, to show that every state a
//! crash can leave is recovered at the next start.
//!
//! * [`ALL`] is the one list of names; [`crash_point`] marks a place. A unit
//!   test checks that each listed name marks exactly one place in the sources
//!   and that every place is listed; the e2e test `crash_points` crashes the
//!   real gpusliced at every point, in every context its workload passes it.
//! * Points sit at the lowest layer that takes the step, so no path can take
//!   it without passing the point: the atomic writer's observer for records,
//!   specs and the MIG ledger, a wrapper around the GPU backend for every
//!   hardware change (`gpu::observed`), the MPS manager for daemons, and the
//!   nvidia-smi runner for time-slices.
//! * Compiled in only with the `failpoints` feature (tikv fail-rs), which the
//!   package's tests turn on and release builds never have: without it
//!   [`crash_point`] is an empty inline function, `gpu::observed::observe`
//!   returns the backend as it is, and [`arm_from_env`] only warns.
//!
//! Arming, read once at start: `GPUSLICE_CRASH_AT=<point>` aborts the
//! process at the point's first pass, `<point>@<n>` at its n-th. The abort
//! (SIGABRT: no unwinding, no destructor, no flush of anything but the line
//! below) is what a SIGKILL leaves, for a daemon whose writes are fsynced.
//! `gpusliced: crash point <point> (pass <n>): aborting` goes to stderr
//! first. `GPUSLICE_CRASH_TRACE=<file>` appends `start <pid>` at start and
//! each point's name as it is passed, so a test learns which points its
//! workload passes, in order.
//!
//! * [`HOOKS`] lists the test hooks: named places where a unit test runs
//!   code of its own, on its own thread, to make a race deterministic (a
//!   rescan landing between two reads, say); [`hook`] marks one. The same
//!   unit test holds them to one place each. Like the points, they exist only
//!   with `failpoints`; the daemon never arms one, and `GPUSLICE_CRASH_AT`
//!   does not know them.

use std::path::PathBuf;

/// Every crash point, grouped by the layer that takes the step.
pub const ALL: &[&str] = &[
    // Claim records (state/store.rs).
    "record.after_temp_synced",
    "record.after_rename",
    "record.after_unlink",
    // CDI specs (claims/spec.rs).
    "spec.after_temp_synced",
    "spec.after_rename",
    "spec.after_unlink",
    // The ledger of MIG slices made ahead (claims/access/mig/ahead.rs).
    "mig_ledger.after_temp_synced",
    "mig_ledger.after_rename",
    // Hardware, through the backend (gpu/observed.rs).
    "gpu.after_mig_mode_set",
    "gpu.after_gi_created",
    "gpu.after_ci_created",
    "gpu.after_ci_destroyed",
    "gpu.after_gi_destroyed",
    "gpu.after_compute_mode_set",
    // MPS control daemons (claims/access/mps/control_daemon/manager/*.rs).
    "mps.after_dirs_created",
    "mps.after_shm_mounted",
    "mps.after_daemon_spawned",
    "mps.after_limits_applied",
    "mps.after_quit",
    "mps.after_dirs_removed",
    "mps.after_stale_stopped",
    // Time-slices (claims/access/timeslicing/compute_policy/nvidia_smi.rs).
    "timeslice.after_set",
    // ComputeDomain channel claims' records and CDI specs
    // (compute_domains/record.rs, compute_domains/spec.rs).
    "channel_record.after_temp_synced",
    "channel_record.after_rename",
    "channel_record.after_unlink",
    "channel_spec.after_temp_synced",
    "channel_spec.after_rename",
    "channel_spec.after_unlink",
    // IMEX daemons (compute_domains/runner/mod.rs, child.rs).
    "imex.after_launcher_spawned",
    "imex.after_daemon_started",
    "imex.after_daemon_stopped",
];

/// Every test hook (see [`hook`]).
pub const HOOKS: &[&str] = &[
    // Between the inventory an answer is built from and the holdings paired
    // with it (claims/view/mod.rs).
    "view.between_reads",
];

/// Arms a point: `<point>` or `<point>@<n>`.
pub const ARM_ENV: &str = "GPUSLICE_CRASH_AT";
/// Traces the points passed into this file.
pub const TRACE_ENV: &str = "GPUSLICE_CRASH_TRACE";
/// What the process writes to stderr before it aborts at a point.
pub const ABORT_LINE: &str = "gpusliced: crash point";

/// A crash point setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CrashError {
    /// The point is not in [`ALL`].
    #[error("{ARM_ENV}={value:?}: there is no crash point {point:?}; the points are: {known}")]
    Unknown {
        /// The variable's value.
        value: String,
        /// The name asked for.
        point: String,
        /// Every name, comma-separated.
        known: String,
    },
    /// The pass count is not a whole number from 1.
    #[error("{ARM_ENV}={value:?}: the pass after '@' must be a whole number from 1")]
    BadPass {
        /// The variable's value.
        value: String,
    },
    /// The trace file cannot be opened.
    #[error("{TRACE_ENV}={path}: {error}")]
    Trace {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

/// A point to abort at: its name and which pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Armed {
    /// The point, one of [`ALL`].
    pub point: &'static str,
    /// Abort at this pass (1 = the first).
    pub pass: u32,
}

/// Parses `<point>` or `<point>@<n>`.
pub fn parse_armed(value: &str) -> Result<Armed, CrashError> {
    let (name, pass) = match value.split_once('@') {
        Some((name, pass)) => {
            let pass = pass
                .parse::<u32>()
                .ok()
                .filter(|p| *p >= 1)
                .ok_or_else(|| CrashError::BadPass {
                    value: value.to_owned(),
                })?;
            (name, pass)
        }
        None => (value, 1),
    };
    let point = ALL
        .iter()
        .copied()
        .find(|p| *p == name)
        .ok_or_else(|| CrashError::Unknown {
            value: value.to_owned(),
            point: name.to_owned(),
            known: ALL.join(", "),
        })?;
    Ok(Armed { point, pass })
}

/// Marks the place right after a durable step: with `failpoints`, where a
/// test armed `name`, the process aborts here.
#[inline]
pub fn crash_point(name: &'static str) {
    #[cfg(feature = "failpoints")]
    fail::fail_point!(name);
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}

/// Marks a place where a unit test may run code of its own
/// (`fail::cfg_callback` on the name, acting only on the test's thread: the
/// registry is global). With `failpoints` only; empty otherwise.
#[inline]
pub fn hook(name: &'static str) {
    #[cfg(feature = "failpoints")]
    fail::fail_point!(name);
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}

/// Reads [`ARM_ENV`] and [`TRACE_ENV`] and arms what they say. Returns a
/// line for the log when anything is set, or an error that stops start-up
/// (a misspelt point must not pass as a test that never crashes). Without
/// the feature the variables are only reported as ignored: the point names
/// are then nowhere in the binary (packaging/check.sh looks).
pub fn arm_from_env() -> Result<Option<String>, CrashError> {
    let armed = std::env::var(ARM_ENV).ok().filter(|v| !v.is_empty());
    let trace = std::env::var_os(TRACE_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    if armed.is_none() && trace.is_none() {
        return Ok(None);
    }
    #[cfg(feature = "failpoints")]
    return arm(armed.as_deref().map(parse_armed).transpose()?, trace);
    #[cfg(not(feature = "failpoints"))]
    Ok(Some(format!(
        "{ARM_ENV} or {TRACE_ENV} is set, but this gpusliced has no crash points (only test \
         builds do); ignored"
    )))
}

#[cfg(feature = "failpoints")]
fn arm(armed: Option<Armed>, trace: Option<PathBuf>) -> Result<Option<String>, CrashError> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};

    let trace = match trace {
        Some(path) => {
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .map_err(|error| CrashError::Trace {
                    path: path.clone(),
                    error,
                })?;
            file.write_all(format!("start {}\n", std::process::id()).as_bytes())
                .map_err(|error| CrashError::Trace { path, error })?;
            Some(Arc::new(Mutex::new(file)))
        }
        None => None,
    };
    let mut said = Vec::new();
    for &point in ALL {
        let abort_at = armed.filter(|a| a.point == point).map(|a| a.pass);
        if trace.is_none() && abort_at.is_none() {
            continue;
        }
        let trace = trace.clone();
        let passes = AtomicU32::new(0);
        let registered = fail::cfg_callback(point, move || {
            let pass = passes.fetch_add(1, Ordering::SeqCst).saturating_add(1);
            if let Some(file) = &trace {
                let mut file = file
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let _ = file.write_all(format!("{point}\n").as_bytes());
            }
            if abort_at == Some(pass) {
                abort(point, pass);
            }
        });
        if let (Ok(()), Some(pass)) = (registered, abort_at) {
            said.push(format!("aborting at crash point {point}, pass {pass}"));
        }
    }
    if trace.is_some() {
        said.push("tracing crash points".to_owned());
    }
    Ok(Some(said.join("; ")))
}

/// Dies at once, as a SIGKILL would: one line on stderr, then SIGABRT.
#[cfg(feature = "failpoints")]
fn abort(point: &str, pass: u32) -> ! {
    use std::io::Write;
    let line = format!("{ABORT_LINE} {point} (pass {pass}): aborting\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    std::process::abort()
}

#[cfg(test)]
pub(crate) mod test_hook;
#[cfg(test)]
mod tests;
