//! Target `daemon_config`: the daemon's TOML file, read as `Config::load`
//! (and so `gpusliced --check-config`) reads it: UTF-8 text, parsed,
//! relative paths resolved against the file's folder, validated.
//!
//! Invariants:
//! * nothing panics;
//! * a parse error carries the line and column whenever the TOML parser
//!   knows the offending span (the module's promise: "unknown keys are
//!   refused with their line and column");
//! * an accepted config is deterministic and passes `validate` again; an
//!   absolute path is kept as written, a relative one is resolved against the
//!   file's folder into an absolute path with no `.` or `..` left.

use std::path::{Component, Path};

use gpuslice::config::{Config, ConfigError};

/// Where the fuzzed file claims to live (as in the packages).
const ORIGIN: &str = "/etc/gpuslice/gpuslice.toml";
/// Its folder, the base of relative paths.
const BASE: &str = "/etc/gpuslice";

/// Runs one input through the config parser.
pub fn check(data: &[u8]) {
    // read_to_string refuses non-UTF-8 before the parser sees it.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Config::parse(text, Path::new(ORIGIN), Path::new(BASE));
    match parsed {
        Ok(config) => check_accepted(text, &config),
        Err(ConfigError::Parse { message, .. }) => check_position(text, &message),
        Err(ConfigError::Invalid { key, problem }) => {
            assert!(
                !key.is_empty() && !problem.is_empty(),
                "empty validation error"
            );
        }
        Err(ConfigError::Read { .. }) => panic!("Config::parse reported a read error"),
    }
}

/// The parser's span, when it has one, shows up as a line in the message.
fn check_position(text: &str, message: &str) {
    let Err(err) = toml::from_str::<Config>(text) else {
        panic!("Config::parse refused what toml accepts: {message}");
    };
    if err.span().is_some() {
        assert!(
            message.contains("line ") && message.contains("column "),
            "parse error without its position: {message}"
        );
    }
}

fn check_accepted(text: &str, config: &Config) {
    let again = Config::parse(text, Path::new(ORIGIN), Path::new(BASE));
    assert!(
        again.as_ref().is_ok_and(|c| c == config),
        "re-parsing an accepted config gave {again:?}"
    );
    if let Err(err) = config.validate() {
        panic!("an accepted config fails validate: {err}");
    }
    let raw: Config = toml::from_str(text).expect("toml accepts what Config::parse accepts");
    for (written, resolved) in paths(&raw).into_iter().zip(paths(config)) {
        let (Some(written), Some(resolved)) = (written, resolved) else {
            assert!(
                written.is_none() && resolved.is_none(),
                "an optional path appeared or vanished"
            );
            continue;
        };
        if written.is_absolute() {
            assert_eq!(
                written, resolved,
                "an absolute path was not kept as written"
            );
        } else {
            assert!(
                resolved.is_absolute(),
                "relative path left: {}",
                resolved.display()
            );
            assert!(
                !resolved
                    .components()
                    .any(|c| matches!(c, Component::CurDir | Component::ParentDir)),
                "{} resolved to {}, not normalised",
                written.display(),
                resolved.display()
            );
        }
    }
}

/// Every path of the config, in one order, optional ones as `None` when unset.
fn paths(config: &Config) -> [Option<&Path>; 11] {
    [
        Some(config.socket.as_path()),
        Some(config.state_dir.as_path()),
        Some(config.cdi_dir.as_path()),
        Some(config.driver_root.as_path()),
        Some(config.mps.run_dir.as_path()),
        config.dev_root.as_deref(),
        config.cdi_hook.as_deref(),
        config.backend.nvml.library.as_deref(),
        config.mps.control_program.as_deref(),
        config.timeslice.nvidia_smi.as_deref(),
        config.backend.sim.hardware_state.as_deref(),
    ]
}
