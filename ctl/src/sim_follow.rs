//! `gpuslicectl sim exec --pid PID`: registers a process that already runs
//! as a fake GPU process of the simulated backend, instead of starting a
//! command. The process was started elsewhere (a container's, by its host
//! pid) and keeps the environment it has: what gpusliced's sampler reads
//! from `/proc/<pid>/environ` is what its runtime gave it, so a claim's
//! marker there proves the claim's CDI environment reached it.
//!
//! Owns the wait for a process that is not our child: the process file is
//! written, then `/proc/<pid>` is watched until the process ends (it is gone,
//! a zombie, or its pid now names a process with another start time), and the
//! file is removed. SIGTERM, SIGINT or SIGHUP to gpuslicectl removes the file
//! too and leaves the process alone: it is not ours to stop.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use gpuslice_sim_files::{
    SimProcessFile, proc_start_time, remove_process_file, write_process_file,
};
use tokio::signal::unix::{SignalKind, signal};

/// How often `/proc/<pid>` is looked at; the simulator itself ignores a
/// file whose process is gone, so this only bounds how long the file stays.
const POLL: Duration = Duration::from_millis(200);

/// How the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The process ended.
    Process,
    /// gpuslicectl got this signal first.
    Signal(i32),
}

impl Ended {
    /// gpuslicectl's exit status: 0 when the process ended, 128 + the
    /// signal that stopped the wait.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Process => 0,
            Self::Signal(signal) => u8::try_from(128 + signal).unwrap_or(1),
        }
    }
}

/// Registers `file.pid` (whose start time the caller read) in `dir`, says
/// so on stderr with `announcement` (as `sim exec` does), waits
/// until it ends, removes the file; returns the exit status.
pub async fn follow(dir: &Path, file: SimProcessFile, announcement: &str) -> anyhow::Result<u8> {
    let pid = file.pid;
    let Some(start) = file.start_time else {
        bail!("no process {pid} runs now (--pid registers a running process by its host pid)");
    };
    write_process_file(dir, &file)
        .with_context(|| format!("cannot register process {pid} with the simulator"))?;
    eprintln!("{announcement}");
    let ended = wait_for_end(pid, start).await;
    let removed = remove_process_file(dir, pid);
    let ended = ended?;
    removed.with_context(|| format!("process {pid} ended, but its file stays"))?;
    Ok(ended.exit_code())
}

/// Waits until process `pid` started at `start` is no more, or a signal
/// comes.
async fn wait_for_end(pid: u32, start: u64) -> anyhow::Result<Ended> {
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut tick = tokio::time::interval(POLL);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if proc_start_time(pid) != Some(start) {
                    return Ok(Ended::Process);
                }
            }
            _ = int.recv() => return Ok(Ended::Signal(libc::SIGINT)),
            _ = term.recv() => return Ok(Ended::Signal(libc::SIGTERM)),
            _ = hup.recv() => return Ok(Ended::Signal(libc::SIGHUP)),
        }
    }
}

#[cfg(test)]
#[path = "sim_follow_tests.rs"]
mod tests;
