//! The parts of a config only the host can judge, without changing it: the
//! programs and library gpusliced runs or loads where the config names them,
//! the folders it reads or writes into, the socket's group, and the log
//! filter.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::Problem;
use crate::config::{BackendKind, Config};

/// The problems found on this host.
pub(super) fn check(config: &Config) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut add = |key, text: Option<String>| {
        problems.extend(text.map(|text| Problem { key, text }));
    };
    add(
        "mps.control_program",
        config.mps.control_program.as_deref().and_then(|p| {
            program(p, "MPS claims would fail at prepare; install the driver's nvidia-cuda-mps-control or fix the path")
        }),
    );
    add(
        "timeslice.nvidia_smi",
        config.timeslice.nvidia_smi.as_deref().and_then(|p| {
            program(p, "time-slice settings would fail at prepare; install the driver's nvidia-smi or fix the path")
        }),
    );
    add(
        "cdi_hook",
        config.cdi_hook.as_deref().and_then(|p| {
            program(p, "every CDI spec would name a hook that cannot run, and containers would not start; install nvidia-container-toolkit's nvidia-cdi-hook or unset cdi_hook")
        }),
    );
    if config.backend.kind == BackendKind::Nvml {
        add(
            "backend.nvml.library",
            config.backend.nvml.library.as_deref().and_then(|p| {
                missing(p, "gpusliced would not start; fix the path or unset it to let the loader find libnvidia-ml.so.1")
            }),
        );
    }
    add(
        "driver_root",
        folder(&config.driver_root, "the driver's files are found under it"),
    );
    add(
        "dev_root",
        config
            .dev_root
            .as_deref()
            .and_then(|p| folder(p, "the /dev/nvidia* nodes are found under it")),
    );
    add(
        "metrics.textfile",
        config.metrics.textfile.as_deref().and_then(textfile_folder),
    );
    add(
        "socket_group",
        config.socket_group.as_deref().and_then(group),
    );
    add("log.level", log_filter(&config.log.level));
    problems
}

/// Why the program at `path` cannot run, if it cannot.
fn program(path: &Path, then: &str) -> Option<String> {
    match std::fs::metadata(path) {
        Err(err) => Some(format!("{} cannot be used ({err}): {then}", path.display())),
        Ok(meta) if !meta.is_file() => Some(format!("{} is not a file: {then}", path.display())),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => Some(format!(
            "{} is not executable (chmod +x): {then}",
            path.display()
        )),
        Ok(_) => None,
    }
}

/// Why the file at `path` cannot be read, if it cannot.
fn missing(path: &Path, then: &str) -> Option<String> {
    std::fs::metadata(path)
        .err()
        .map(|err| format!("{} cannot be used ({err}): {then}", path.display()))
}

/// Why `path` is not a folder, if it is not.
fn folder(path: &Path, what: &str) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => None,
        Ok(_) => Some(format!(
            "{} is not a folder; {what}: fix the path",
            path.display()
        )),
        Err(err) => Some(format!(
            "{} cannot be used ({err}); {what}: fix the path",
            path.display()
        )),
    }
}

/// Why the textfile's folder will not take it, if it will not.
fn textfile_folder(path: &Path) -> Option<String> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty())?;
    folder(
        parent,
        "gpusliced writes the metrics textfile into it and would not start without it",
    )
}

/// Why the group cannot own the socket, if it cannot.
fn group(name: &str) -> Option<String> {
    crate::api::socket::group_gid(name)
        .err()
        .map(|err| format!("{err}; gpusliced would not start"))
}

/// Why the log filter does not parse, if it does not.
fn log_filter(filter: &str) -> Option<String> {
    tracing_subscriber::EnvFilter::try_new(filter)
        .err()
        .map(|err| {
            format!(
                "{filter:?} is not a valid filter ({err}); gpusliced would not start: try \
                 \"info\" or \"gpuslice=debug\""
            )
        })
}
