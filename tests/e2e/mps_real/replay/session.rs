//! One program's replay of the transcript: the folders of each daemon, the
//! directives, each client run judged.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use gpuslice::claims::mps_daemon::folders::strip_log_prefix;

use super::daemon::{PID_FILE, Running};
use super::{BOUND, FRAMING, Outcome, VISIBLE};
use crate::mps_real::ask_as;
use crate::tools::is_root;

/// The replay of one program.
pub(super) struct Replay {
    program: PathBuf,
    base: tempfile::TempDir,
    daemons: usize,
    pipe: PathBuf,
    log: PathBuf,
    no_folders: bool,
    pipe_length: Option<usize>,
    stale: Option<String>,
    daemon: Option<Running>,
    outcome: Outcome,
}

impl Replay {
    pub(super) fn run(program: &Path, transcript: &str) -> Outcome {
        let base = tempfile::tempdir().expect("temp dir");
        // Other users' clients must reach the sockets.
        std::fs::set_permissions(
            base.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("open the temp dir to other users");
        let mut replay = Self {
            program: program.to_path_buf(),
            pipe: base.path().join("none"),
            log: base.path().join("none"),
            base,
            daemons: 0,
            no_folders: false,
            pipe_length: None,
            stale: None,
            daemon: None,
            outcome: Outcome {
                problems: Vec::new(),
                logs: Vec::new(),
            },
        };
        let lines: Vec<&str> = transcript.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let at = i + 1;
            let line = lines[i];
            i += 1;
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some((user, command)) = client_line(line) {
                let mut printed = Vec::new();
                let mut refused = None;
                while let Some(next) = lines.get(i) {
                    if let Some(text) = next.strip_prefix("< ") {
                        printed.push(text);
                    } else if let Some(text) = next.strip_prefix("! ") {
                        refused = Some(text);
                    } else {
                        break;
                    }
                    i += 1;
                }
                replay.client(at, user, command, &printed, refused);
            } else {
                replay.directive(at, line);
            }
        }
        if replay.daemon.as_ref().is_some_and(|d| d.exited.is_none()) {
            replay.problem(
                lines.len(),
                "the transcript left a daemon running".to_owned(),
            );
        }
        replay.outcome
    }

    fn problem(&mut self, line: usize, what: String) {
        self.outcome.problems.push((line, what));
    }

    fn client(
        &mut self,
        at: usize,
        user: Option<u32>,
        command: &str,
        printed: &[&str],
        refused: Option<&str>,
    ) {
        if user.is_some() && !is_root() {
            eprintln!("(transcript line {at}: a client as another user needs root; not run)");
            return;
        }
        let answer = ask_as(&self.program, &self.pipe, command, user);
        let want_stdout: String = printed.iter().map(|l| format!("{l}\n")).collect();
        let ok = match refused {
            Some(text) => {
                answer.code == Some(1)
                    && answer.stdout.is_empty()
                    && answer.stderr.trim_end() == text
            }
            None => {
                answer.code == Some(0) && answer.stdout == want_stdout && answer.stderr.is_empty()
            }
        };
        if !ok {
            let want = refused.map_or_else(
                || format!("exit 0, stdout {want_stdout:?}"),
                |t| format!("exit 1, stderr {t:?}"),
            );
            self.problem(
                at,
                format!(
                    "{command:?}: wanted {want}; got exit {:?}, stdout {:?}, stderr {:?}",
                    answer.code, answer.stdout, answer.stderr
                ),
            );
        }
    }

    fn directive(&mut self, at: usize, line: &str) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[0] {
            "daemon" => {
                self.new_folders();
                self.start(at, &words[1..]);
            }
            "again" => self.start(at, &words[1..]),
            "no-folders" => self.no_folders = true,
            "pipe-length" => self.pipe_length = words.get(1).and_then(|n| n.parse().ok()),
            "exit" => {
                let want: i32 = words.get(1).and_then(|n| n.parse().ok()).unwrap_or(-1);
                let Some(mut daemon) = self.daemon.take() else {
                    return self.problem(at, "no daemon to exit".to_owned());
                };
                let code = daemon.wait_exit();
                if code != want {
                    self.problem(at, format!("the daemon exited {code}, not {want}"));
                }
                if code == 0 {
                    let log = self.normalized(&daemon.said);
                    self.outcome.logs.extend(log);
                }
                self.daemon = Some(daemon);
            }
            "kill" => {
                if let Some(daemon) = &mut self.daemon {
                    let _ = daemon.child.kill();
                }
            }
            "files" => {
                let mut have: Vec<String> = std::fs::read_dir(&self.pipe)
                    .map(|d| {
                        d.flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                have.sort();
                if have != words[1..] {
                    self.problem(at, format!("the pipe dir holds {have:?}"));
                }
            }
            "stale-pid" => {
                let digits = words.get(1).copied().unwrap_or("");
                std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(self.pipe.join(PID_FILE))
                    .and_then(|mut f| std::io::Write::write_all(&mut f, digits.as_bytes()))
                    .expect("write over the pid file");
                self.stale = Some(digits.to_owned());
            }
            "pidfile" => {
                let Some(pid) = self.daemon.as_ref().map(|d| d.child.id().to_string()) else {
                    return self.problem(at, "no daemon".to_owned());
                };
                let stale = self.stale.clone().unwrap_or_default();
                let want = format!("{pid}{}", stale.get(pid.len()..).unwrap_or(""));
                let got = std::fs::read_to_string(self.pipe.join(PID_FILE)).unwrap_or_default();
                if got != want {
                    self.problem(at, format!("the pid file holds {got:?}, not {want:?}"));
                }
            }
            "second" => self.second(at, line),
            other => self.problem(at, format!("unknown line {other:?}")),
        }
    }

    /// Folders for the next daemon: `d<N>`, padded to the pipe length asked.
    fn new_folders(&mut self) {
        self.daemons += 1;
        let mut root = self.base.path().join(format!("d{}", self.daemons));
        if let Some(length) = self.pipe_length.take() {
            let pad = length
                .checked_sub(root.as_os_str().len() + "//pipe".len())
                .filter(|p| *p > 0)
                .expect("a temp dir short enough for the pipe length");
            root = root.join("p".repeat(pad));
        }
        self.pipe = root.join("pipe");
        self.log = root.join("log");
        std::fs::create_dir_all(&root).expect("create the daemon's folder");
        if !std::mem::take(&mut self.no_folders) {
            std::fs::create_dir_all(&self.pipe).expect("create the pipe dir");
            std::fs::create_dir_all(&self.log).expect("create the log dir");
        }
        self.stale = None;
    }

    fn daemon_command(&self, extra: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command
            .arg("-f")
            .current_dir("/")
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("CUDA_VISIBLE_DEVICES", VISIBLE)
            .env("CUDA_MPS_PIPE_DIRECTORY", &self.pipe)
            .env("CUDA_MPS_LOG_DIRECTORY", &self.log)
            .envs(extra.iter().filter_map(|kv| kv.split_once('=')));
        command
    }

    fn start(&mut self, at: usize, extra: &[&str]) {
        if self.daemon.as_ref().is_some_and(|d| d.exited.is_none()) {
            self.problem(at, "a daemon still runs".to_owned());
        }
        let mut child = self
            .daemon_command(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the daemon");
        let (tx, lines) = mpsc::channel();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut daemon = Running {
            child,
            lines,
            said: Vec::new(),
            exited: None,
        };
        daemon.wait_started(&self.pipe);
        self.daemon = Some(daemon);
    }

    /// `second exits N: TEXT`: a second daemon on the same folders.
    fn second(&mut self, at: usize, line: &str) {
        let Some((want_code, want_text)) = line
            .strip_prefix("second exits ")
            .and_then(|rest| rest.split_once(": "))
        else {
            return self.problem(at, format!("cannot read {line:?}"));
        };
        let child = self
            .daemon_command(&[])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a second daemon");
        let pid = child.id();
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            if rx.recv_timeout(BOUND).is_err() {
                gpuslice::claims::mps_daemon::child::kill_pid(pid);
            }
        });
        let out = child
            .wait_with_output()
            .expect("the second daemon's output");
        let _ = tx.send(());
        let _ = waiter.join();
        let said = String::from_utf8_lossy(&out.stdout).trim_end().to_owned();
        let code = out.status.code();
        if code.map(|c| c.to_string()).as_deref() != Some(want_code) || said != want_text {
            self.problem(
                at,
                format!(
                    "a second daemon exited {code:?} saying {said:?} (stderr {:?})",
                    String::from_utf8_lossy(&out.stderr)
                ),
            );
        }
    }

    /// A daemon's log lines without times, pids, connection lines and this
    /// replay's folder.
    fn normalized(&self, said: &[String]) -> Vec<String> {
        let base = self.base.path().display().to_string();
        said.iter()
            .map(|line| strip_log_prefix(line).replace(&base, "<dir>"))
            .filter(|line| !FRAMING.contains(&line.as_str()))
            .collect()
    }
}

/// `> COMMAND` (root) or `nobody> COMMAND` (uid 65534).
fn client_line(line: &str) -> Option<(Option<u32>, &str)> {
    let (user, rest) = match line.strip_prefix("nobody>") {
        Some(rest) => (Some(65534), rest),
        None => (None, line.strip_prefix('>')?),
    };
    Some((user, rest.strip_prefix(' ').unwrap_or(rest)))
}
