//! One bash session per walk-through, as a user's second terminal: the
//! functions, variables and `&` jobs a block makes are there for the next
//! block. Commands go in one at a time; what each prints (stdout and stderr
//! in one pipe, in the order a terminal would show it) is read up to a
//! marker line the session prints after it, with its status.
//!
//! - Job control is on (`set -m`), as in a terminal: a `&` job has its own
//!   process group, so `kill %1` ends the job's programs, not only the
//!   shell that started them; bash prints its `[1]+ Done …` notices as an
//!   interactive one does.
//! - bash reads its commands from a FIFO, and its stdin (so every command's,
//!   `&` jobs' included) is /dev/null: nothing a command does eats the next.
//! - A command ending in `&` is followed until its **first line on
//!   stderr** (`gpuslicectl sim exec` prints one once its fake GPU process
//!   is registered): that line is part of the command's output, and the next
//!   command starts only after it. The job runs as typed, so `jobs` and
//!   bash's notices show its text; its stderr goes through a reader that
//!   hands the first line to the runner and passes everything on. A job that
//!   ends without a line is not waited for.
//! - A command bash cannot parse is refused before it is sent (`bash -n`),
//!   so a quoting mistake in a doc fails with bash's message, not a hang.
//!
//! Every wait has an upper bound ([`BOUND`]) for a hung command; nothing
//! sleeps.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long one command may take before the walk-through fails (a bound for
/// a hang, not a wait).
pub const BOUND: Duration = Duration::from_secs(60);

/// Set up once: stderr into the same pipe, job control, and the reader of a
/// `&` job's first stderr line (copies it to the session's stderr and to the
/// FIFO the session waits on, then passes the rest through).
const PRELUDE: &str = r#"exec 2>&1
set -m
__walkthrough_first_line() {
  local line=
  if IFS= read -r line; then printf '%s\n' "$line" >&2; fi
  printf '%s\n' "$line" > "$1"
  cat >&2
}
"#;

/// What one command printed, and its exit status.
#[derive(Debug)]
pub struct Printed {
    pub text: String,
    pub status: i32,
}

/// A running bash.
pub struct Session {
    child: Child,
    commands: File,
    output: mpsc::Receiver<Vec<u8>>,
    pending: Vec<u8>,
    token: String,
    scratch: PathBuf,
    jobs: usize,
}

impl Session {
    /// Starts bash in `cwd` with `env` added; `scratch` holds its FIFOs.
    pub fn start(cwd: &Path, scratch: &Path, env: &[(&str, &Path)]) -> Result<Self, String> {
        let script = scratch.join("commands");
        nix::unistd::mkfifo(&script, nix::sys::stat::Mode::S_IRWXU)
            .map_err(|e| format!("cannot make {}: {e}", script.display()))?;
        let mut command = Command::new("bash");
        command
            .args(["--norc", "--noprofile"])
            .arg(&script)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .env_remove("NOTIFY_SOCKET");
        // The walk-through is a user's shell: none of the test run's own
        // gpuslice settings.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GPUSLICE_") {
                command.env_remove(name);
            }
        }
        command.envs(env.iter().map(|(k, v)| (k, v.as_os_str())));
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run bash: {e}"))?;
        // Opens once bash opens its end, which it does first thing.
        let commands = std::fs::OpenOptions::new()
            .write(true)
            .open(&script)
            .map_err(|e| format!("cannot open {}: {e}", script.display()))?;
        let mut stdout = child.stdout.take().ok_or("bash has no stdout")?;
        let (sender, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = stdout.read(&mut buf) {
                if sender.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let token = format!(
            "__walkthrough_done_{}_{}",
            std::process::id(),
            fastrand::u64(..)
        );
        let mut session = Self {
            child,
            commands,
            output,
            pending: Vec::new(),
            token,
            scratch: scratch.to_path_buf(),
            jobs: 0,
        };
        session.send(PRELUDE)?;
        let ready = session.run(":")?;
        if !ready.text.is_empty() {
            return Err(format!("bash said at start: {}", ready.text));
        }
        Ok(session)
    }

    /// Defines `text` (functions, variables) in the session; it must print
    /// nothing.
    pub fn define(&mut self, text: &str) -> Result<(), String> {
        let printed = self.run(text)?;
        if printed.text.is_empty() && printed.status == 0 {
            Ok(())
        } else {
            Err(format!(
                "the session's set-up failed (exit {}): {}",
                printed.status, printed.text
            ))
        }
    }

    /// Runs `command` and returns what it printed.
    pub fn run(&mut self, command: &str) -> Result<Printed, String> {
        check_syntax(command)?;
        let script = match background(command) {
            Some(job) => {
                self.jobs += 1;
                let fifo = self.scratch.join(format!("job{}", self.jobs));
                let fifo = fifo.to_string_lossy();
                // The job inherits a stderr that goes through the reader;
                // the session's own stderr is back before the wait.
                format!(
                    "mkfifo '{fifo}'\nexec 3>&2 2> >(__walkthrough_first_line '{fifo}')\n\
                     {job} &\nexec 2>&3 3>&-\nIFS= read -r __walkthrough_line < '{fifo}'\n\
                     rm -f '{fifo}'\n"
                )
            }
            None => format!("{command}\n"),
        };
        self.send(&format!(
            "{script}printf '\\n%s %s\\n' '{}' \"$?\"\n",
            self.token
        ))?;
        self.read_until_token()
    }

    fn send(&mut self, text: &str) -> Result<(), String> {
        self.commands
            .write_all(text.as_bytes())
            .and_then(|()| self.commands.flush())
            .map_err(|e| format!("bash stopped reading its commands: {e}"))
    }

    /// Reads until the marker line; returns what came before it.
    fn read_until_token(&mut self) -> Result<Printed, String> {
        let marker = format!("\n{} ", self.token);
        loop {
            let text = String::from_utf8_lossy(&self.pending).into_owned();
            if let Some(at) = text.find(&marker) {
                let rest = &text[at + marker.len()..];
                if let Some(end) = rest.find('\n') {
                    let status = rest[..end].trim().parse().unwrap_or(-1);
                    let printed = text[..at].to_owned();
                    self.pending = rest.as_bytes()[end + 1..].to_vec();
                    return Ok(Printed {
                        text: printed,
                        status,
                    });
                }
            }
            match self.output.recv_timeout(BOUND) {
                Ok(chunk) => self.pending.extend_from_slice(&chunk),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(format!("no end within {BOUND:?}; printed so far:\n{text}"));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(format!("bash exited; printed:\n{text}"));
                }
            }
        }
    }
}

impl Drop for Session {
    /// Ends the session's jobs (each its own process group), then bash:
    /// waits (bounded) for its output to close, and kills it if a hung
    /// command keeps it from reading.
    fn drop(&mut self) {
        let _ = self.send("for p in $(jobs -p); do kill -9 -- -$p; done 2>/dev/null\nexit 0\n");
        let began = std::time::Instant::now();
        while let Some(left) = (BOUND / 6).checked_sub(began.elapsed()) {
            if let Err(mpsc::RecvTimeoutError::Disconnected | mpsc::RecvTimeoutError::Timeout) =
                self.output.recv_timeout(left)
            {
                break;
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The job of a command ending in a single `&`, without it.
fn background(command: &str) -> Option<&str> {
    let trimmed = command.trim_end();
    let job = trimmed.strip_suffix('&')?;
    (!job.ends_with('&')).then_some(job.trim_end())
}

/// Ok when bash can parse `command`, else its message.
fn check_syntax(command: &str) -> Result<(), String> {
    let out = Command::new("bash")
        .args(["-n", "-c", command])
        .output()
        .map_err(|e| format!("cannot run bash -n: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "bash cannot parse it: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> (tempfile::TempDir, Session) {
        let dir = tempfile::tempdir().expect("temp dir");
        let session = Session::start(dir.path(), dir.path(), &[]).expect("bash starts");
        (dir, session)
    }

    #[test]
    fn functions_variables_and_output_carry_from_command_to_command() {
        let (_dir, mut s) = session();
        s.define("f() { echo \"hi $1\"; echo oops >&2; }\nX=there")
            .expect("defines");
        let printed = s.run("f \"$X\"").expect("runs");
        assert_eq!(
            (printed.text.as_str(), printed.status),
            ("hi there\noops\n", 0)
        );
        let printed = s.run("printf 'no newline'; false").expect("runs");
        assert_eq!((printed.text.as_str(), printed.status), ("no newline", 1));
        // stdin is not the session's.
        assert_eq!(s.run("cat").expect("runs").text, "");
    }

    #[test]
    fn a_background_job_is_waited_for_until_its_first_stderr_line() {
        let (_dir, mut s) = session();
        // The line is in this command's output only if the runner waited
        // for it: the job prints it after a second command of its own.
        let printed = s
            .run("sh -c 'sleep 0; echo registered >&2; exec sleep 600' &")
            .expect("runs");
        assert_eq!(printed.text, "registered\n");
        assert_eq!(
            s.run("jobs").expect("runs").text.matches("Running").count(),
            1
        );
        let printed = s.run("kill %1; wait").expect("runs");
        assert!(printed.text.contains("Terminated"), "{}", printed.text);
        assert_eq!(s.run("jobs -p").expect("runs").text, "");
    }

    #[test]
    fn a_job_that_prints_nothing_is_not_waited_for_forever() {
        let (_dir, mut s) = session();
        let printed = s.run("true &").expect("runs");
        assert_eq!(printed.text, "");
    }

    #[test]
    fn a_command_bash_cannot_parse_fails_at_once() {
        let (_dir, mut s) = session();
        let err = s.run("echo 'unclosed").expect_err("refused");
        assert!(err.starts_with("bash cannot parse it"), "{err}");
        assert_eq!(s.run("echo still here").expect("runs").text, "still here\n");
    }
}
