//! The IMEX side of a GB200 node of the crash-point test: its `[imex]`
//! section and the stand-ins' wrappers it names, and its domains' daemons
//! found (by their folders' pid files, checked against /proc by start time,
//! and by their command lines) and killed. The daemons outlive gpusliced
//! by design, so the node kills its own when dropped, and a reboot kills
//! them all.

use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use gpuslice::supervise::process::{ProcessId, kill_pid};

use super::BOUND;
use crate::tools::repo_root;

/// The `[imex]` section of a GB200 node in `dir` bound to `address`,
/// writing the wrappers of the stand-ins it names (each under `python3 -S`;
/// the daemon's record in the node's folder). The daemons run as children
/// of gpusliced, through gpusliced itself (`--imex-launch`).
pub fn imex_section(dir: &Path, address: Ipv4Addr) -> String {
    let tools = repo_root().join("tests/tools");
    let record = format!("FAKE_IMEX_RECORD={} ", dir.join("imex.record").display());
    for (name, tool, env) in [
        ("nvidia-imex", "fake-nvidia-imex", record.as_str()),
        ("nvidia-imex-ctl", "fake-nvidia-imex-ctl", ""),
    ] {
        let body = format!(
            "#!/bin/sh\n{env}exec python3 -S {} \"$@\"\n",
            tools.join(tool).display()
        );
        gpuslice_cdi::write_atomic(dir, name, body.as_bytes(), 0o755)
            .expect("write an IMEX stand-in's wrapper");
    }
    format!(
        "[imex]\nprogram = \"{}\"\nctl_program = \"{}\"\nrun_dir = \"run\"\n\
         bind_address = \"{address}\"\nrack_network = [\"127.0.0.0/8\"]\n\
         supervisor = \"child\"\n",
        dir.join("nvidia-imex").display(),
        dir.join("nvidia-imex-ctl").display(),
    )
}

/// The process a domain's folder names in `daemon.pid` (`{pid,
/// start_ticks}`, as gpusliced keeps it), while that very process runs.
pub fn kept_daemon(folder: &Path) -> Option<ProcessId> {
    let bytes = std::fs::read(folder.join("daemon.pid")).ok()?;
    let process: ProcessId = serde_json::from_slice(&bytes).ok()?;
    process.alive().then_some(process)
}

/// SIGKILLs the IMEX daemons of the domains under `imex_dir`, by their
/// folders' pid files (and any other process started on a domain's config
/// there), as a reboot does, and waits (bounded) until they are gone: a
/// daemon started next binds the same address.
pub fn kill_imex_daemons(imex_dir: &Path) {
    let mut killed: Vec<ProcessId> = crate::harness::list(imex_dir)
        .iter()
        .filter_map(|domain| kept_daemon(&imex_dir.join(domain)))
        .collect();
    killed.extend(
        imex_processes(imex_dir)
            .into_iter()
            .filter_map(|(pid, _)| ProcessId::of(pid)),
    );
    for process in &killed {
        kill_pid(process.pid);
    }
    // Not our children: nothing tells their end, so it is probed.
    let (gate, pause) = (Mutex::new(()), Condvar::new());
    let deadline = Instant::now() + BOUND;
    let mut guard = gate.lock().expect("gate");
    while killed.iter().any(ProcessId::alive) && Instant::now() < deadline {
        guard = pause
            .wait_timeout(guard, Duration::from_millis(10))
            .expect("gate")
            .0;
    }
}

/// Every running IMEX daemon (pid) of a domain under `imex_dir`, with that
/// domain: a process whose command line ends in `-c
/// <imex_dir>/<domain>/imexd.cfg` (the launcher and the daemon it becomes;
/// `nvidia-imex-ctl` names the config too, but a query after it).
pub fn imex_processes(imex_dir: &Path) -> Vec<(u32, String)> {
    let prefix = format!("{}/", imex_dir.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline
            .strip_suffix(b"\0")
            .unwrap_or(&cmdline)
            .split(|b| *b == 0)
            .collect();
        let domain = match args.as_slice() {
            [.., flag, config] if *flag == b"-c" => std::str::from_utf8(config)
                .ok()
                .and_then(|c| c.strip_prefix(&prefix)?.strip_suffix("/imexd.cfg"))
                .map(str::to_owned),
            _ => None,
        };
        if let Some(domain) = domain
            && ProcessId::of(pid).is_some()
        {
            found.push((pid, domain));
        }
    }
    found.sort();
    found
}
