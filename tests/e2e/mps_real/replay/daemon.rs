//! One daemon process of a replay, its output gathered line by line.

use std::path::Path;
use std::process::Child;
use std::sync::mpsc;

use super::BOUND;

/// The pid file in the pipe dir.
pub const PID_FILE: &str = "nvidia-cuda-mps-control.pid";

/// One daemon process and its output so far.
pub(super) struct Running {
    pub(super) child: Child,
    pub(super) lines: mpsc::Receiver<String>,
    pub(super) said: Vec<String>,
    pub(super) exited: Option<i32>,
}

impl Running {
    /// Reads output until the daemon has logged its start (or ended), then
    /// waits until it has written its pid (after its sockets listen: NVIDIA's
    /// daemon logs its start lines before it binds them) or exited.
    pub(super) fn wait_started(&mut self, pipe: &Path) {
        while let Ok(line) = self.lines.recv_timeout(BOUND) {
            let started = line.contains("To connect CUDA applications to this daemon");
            self.said.push(line);
            if started {
                break;
            }
        }
        let pid = self.child.id().to_string();
        let child = std::cell::RefCell::new(&mut self.child);
        let pid_file = pipe.join(PID_FILE);
        let _ = gpuslice::claims::mps_daemon::control::wait_on_dir(pipe, BOUND, &|| {
            let written = std::fs::read_to_string(&pid_file).is_ok_and(|t| t.starts_with(&pid));
            let exited = child.borrow_mut().try_wait().is_ok_and(|s| s.is_some());
            Ok(written || exited)
        });
    }

    /// Waits for the exit (bounded) and the rest of the output; the status
    /// as a shell shows it (128 + a signal).
    pub(super) fn wait_exit(&mut self) -> i32 {
        if let Some(code) = self.exited {
            return code;
        }
        let (tx, rx) = mpsc::channel();
        let pid = self.child.id();
        let waiter = std::thread::spawn(move || {
            if rx.recv_timeout(BOUND).is_err() {
                gpuslice::claims::mps_daemon::child::kill_pid(pid);
            }
        });
        let status = self.child.wait().expect("wait for the daemon");
        let _ = tx.send(());
        let _ = waiter.join();
        while let Ok(line) = self.lines.recv_timeout(BOUND) {
            self.said.push(line);
        }
        let code = status
            .code()
            .or_else(|| std::os::unix::process::ExitStatusExt::signal(&status).map(|s| 128 + s))
            .unwrap_or(-1);
        self.exited = Some(code);
        code
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
