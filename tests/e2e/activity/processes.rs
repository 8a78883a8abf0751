//! The fake GPU processes of the activity test, ended however the test
//! ends: `gpuslicectl sim exec` is sent SIGTERM (it passes it on to its
//! command and removes its process file), a bare process is killed and its
//! file removed.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::harness::Daemon;

/// The fake GPU processes of a test, ended however the test ends: `sim
/// exec` is sent SIGTERM (it passes it on and removes its file), a bare
/// process SIGKILL and its file removed.
#[derive(Default)]
pub struct Processes {
    execs: Vec<Child>,
    bare: Vec<(Child, PathBuf)>,
}

impl Processes {
    /// `gpuslicectl sim exec --claim uid <args> -- sleep 600`.
    pub fn exec(&mut self, daemon: &Daemon, uid: &str, args: &[&str]) -> usize {
        self.sim_exec(daemon, &[&["--claim", uid], args].concat())
    }

    /// `gpuslicectl sim exec --no-claim --device <gpu> -- sleep 600`.
    pub fn exec_no_claim(&mut self, daemon: &Daemon, gpu: &str) -> usize {
        self.sim_exec(daemon, &["--no-claim", "--device", gpu])
    }

    fn sim_exec(&mut self, daemon: &Daemon, args: &[&str]) -> usize {
        let child = Command::new(crate::binaries::gpuslicectl())
            .arg("--socket")
            .arg(&daemon.socket)
            .args(["sim", "exec"])
            .args(args)
            .args(["--", "sleep", "600"])
            .stdin(Stdio::null())
            .spawn()
            .expect("run gpuslicectl sim exec");
        self.execs.push(child);
        self.execs.len() - 1
    }

    /// Waits for the `i`th `sim exec` to exit by itself; its exit code.
    pub fn exit_code(&mut self, i: usize) -> Option<i32> {
        self.execs[i].wait().expect("wait for sim exec").code()
    }

    /// Whether the `i`th `sim exec` still runs.
    pub fn running(&mut self, i: usize) -> bool {
        self.execs[i].try_wait().expect("poll sim exec").is_none()
    }

    /// Ends the `i`th `sim exec` and checks it exits as its command did.
    pub fn end_exec(&mut self, i: usize) {
        let child = &mut self.execs[i];
        term(child);
        let status = child.wait().expect("wait for sim exec");
        assert_eq!(status.code(), Some(128 + 15), "sleep ended by SIGTERM");
    }

    /// A process with no claim in its environment, registered in the
    /// simulator's folder as a GPU process on `uuid`.
    pub fn unclaimed(&mut self, dir: &str, uuid: &str) -> u32 {
        let child = Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .expect("start sleep");
        let pid = child.id();
        let path = PathBuf::from(dir).join(format!("{pid}.json"));
        let file = serde_json::json!({
            "pid": pid, "device": uuid, "memory_bytes": 512u64 << 20, "sm_percent": 5,
        });
        std::fs::create_dir_all(dir).expect("create the sim processes folder");
        std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, file.to_string().as_bytes()))
            .expect("write a process file");
        self.bare.push((child, path));
        pid
    }

    pub fn end_unclaimed(&mut self) {
        for (mut child, path) in self.bare.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(path);
        }
    }
}

fn term(child: &Child) {
    let pid = i32::try_from(child.id()).expect("pid fits");
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
}

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.execs {
            term(child);
            let _ = child.wait();
        }
        self.end_unclaimed();
    }
}
