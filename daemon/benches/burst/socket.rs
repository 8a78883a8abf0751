//! The socket mode: the real gpusliced on N simulated H100s (a fake driver
//! root, so a claim's CDI spec has its real size; logging at info, the
//! packaged default, into a file; `GPUSLICE_BENCH_BURST_LOG` sets another
//! filter, e.g. `warn` to bound what logging costs), and N clients, each on its own thread
//! with its own current-thread runtime and its own connection, made before
//! the first burst. Client `i` prepares an exclusive claim on `gpu-<i>`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gpuslice::testkit::root::real_size_root;

use crate::crew::Worker;
use crate::harness::{self, Client, Daemon, prepare_request, unprepare_request};
use crate::uid;

/// The uid prefix of socket claims.
pub const MODE: u16 = 1;

/// A running gpusliced with N GPUs.
pub struct Node {
    pub daemon: Daemon,
    pub gpus: usize,
}

impl Node {
    /// Starts gpusliced on `gpus` simulated H100s in a fresh folder under `parent`.
    pub fn start(parent: &Path, gpus: usize) -> Self {
        let dir = tempfile::Builder::new()
            .prefix(&format!("socket-{gpus}-"))
            .tempdir_in(parent)
            .expect("cannot create the daemon's folder");
        real_size_root(&dir.path().join("root"), gpus);
        harness::write_config(dir.path(), gpus, "");
        Self {
            daemon: Daemon::start_logged(dir, &log_filter()),
            gpus,
        }
    }

    /// The records folder.
    pub fn records_dir(&self) -> PathBuf {
        self.daemon.state_dir.join("claims")
    }

    /// One connected client per GPU.
    pub fn clients(&self) -> Vec<SocketClient> {
        (0..self.gpus)
            .map(|gpu| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a client runtime");
                let api = runtime.block_on(harness::connect(&self.daemon.socket));
                SocketClient {
                    runtime,
                    api,
                    gpu,
                    device: format!("gpu-{gpu}"),
                }
            })
            .collect()
    }

    /// The CPU time gpusliced has used so far, user and system, all its
    /// threads (those gone included): /proc/<pid>/stat, in the kernel's
    /// 10 ms ticks (USER_HZ is 100), so only sums over many bursts mean
    /// anything.
    pub fn cpu(&self) -> Duration {
        let path = format!("/proc/{}/stat", self.daemon.pid());
        let stat = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // Fields after the command's closing parenthesis: state is field 3,
        // utime 14, stime 15.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let ticks: u64 = after
            .split_whitespace()
            .skip(11)
            .take(2)
            .map(|t| t.parse::<u64>().unwrap_or_else(|e| panic!("{path}: {e}")))
            .sum();
        Duration::from_millis(ticks * 10)
    }

    /// Stops the daemon; panics (with its log) if it did not exit cleanly.
    pub fn stop(self) {
        let log = self.daemon.log();
        let (status, _dir) = self.daemon.stop();
        assert!(
            status.success(),
            "gpusliced exited with {status}; log:\n{log}"
        );
    }
}

/// gpusliced's log filter: `GPUSLICE_BENCH_BURST_LOG`, else info.
pub fn log_filter() -> String {
    std::env::var("GPUSLICE_BENCH_BURST_LOG").unwrap_or_else(|_| "info".to_owned())
}

/// One client: its runtime, its connection, its GPU.
#[derive(Debug)]
pub struct SocketClient {
    runtime: tokio::runtime::Runtime,
    api: Client,
    gpu: usize,
    device: String,
}

impl Worker for SocketClient {
    fn timed(&mut self, round: usize) -> Result<(), String> {
        let claim = uid(MODE, round, self.gpu);
        let request = prepare_request(&claim, &[&self.device]);
        self.runtime
            .block_on(self.api.prepare(request))
            .map(drop)
            .map_err(|e| format!("prepare of {claim} on {} over the socket: {e}", self.device))
    }

    fn clean(&mut self, round: usize) -> Result<(), String> {
        let claim = uid(MODE, round, self.gpu);
        self.runtime
            .block_on(self.api.unprepare(unprepare_request(&claim)))
            .map(drop)
            .map_err(|e| format!("unprepare of {claim}: {e}"))
    }
}
