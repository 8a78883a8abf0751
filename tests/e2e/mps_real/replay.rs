//! `tests/tools/fake-mps-control.transcript` replayed against NVIDIA's
//! control program and against the stand-in, each through its own client
//! (the two speak different socket protocols), as gpusliced drives them:
//! daemons in the foreground with an empty environment but their variables,
//! one client run per command. Each must give the transcript's answers, exit
//! statuses, files and pid file, and the two daemons' logs (times, pids and
//! connection lines left out) must be the same line for line. The stand-in
//! runs without NVIDIA's package (python3 only), so it cannot drift from the
//! transcript anywhere; the real one checks the transcript itself.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use gpuslice::mps::folders::strip_log_prefix;

use super::{ask_as, real_control, version};
use crate::tools::{is_root, repo_root, skip, which};

/// Upper bound for a daemon to start or exit; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(30);
/// The daemons' CUDA_VISIBLE_DEVICES.
const VISIBLE: &str =
    "GPU-aaaaaaaa-0000-0000-0000-000000000000,GPU-bbbbbbbb-0000-0000-0000-000000000000";
/// Connection lines, whose order against other lines is the real daemon's
/// log thread's to choose.
const FRAMING: [&str; 3] = ["Accepting connection...", "NEW UI", "UI closed"];

#[test]
fn mps_transcript_holds_for_nvidias_daemon_and_the_stand_in() {
    let test = "mps_transcript_holds_for_nvidias_daemon_and_the_stand_in";
    let transcript_path = repo_root().join("tests/tools/fake-mps-control.transcript");
    let transcript = std::fs::read_to_string(&transcript_path).expect("read the transcript");
    let mut failures = Vec::new();
    let mut logs = Vec::new();
    if which("python3").is_some() {
        let stand_in = repo_root().join("tests/tools/fake-mps-control");
        let outcome = Replay::run(&stand_in, &transcript);
        failures.extend(outcome.problems("the stand-in tests/tools/fake-mps-control"));
        logs.push(("the stand-in", outcome.logs));
    } else {
        skip(test, "python3 (the stand-in's interpreter) is missing");
    }
    if let Some(real) = real_control(test) {
        let outcome = Replay::run(&real, &transcript);
        let name = format!("NVIDIA's nvidia-cuda-mps-control {}", version());
        failures.extend(outcome.problems(&name));
        logs.push(("NVIDIA's", outcome.logs));
    }
    if let [(_, fake), (_, real)] = logs.as_slice()
        && fake != real
    {
        failures.push(format!(
            "the daemons' logs differ:\n{}",
            line_diff(real, fake, "NVIDIA's", "the stand-in's")
        ));
    }
    assert!(
        failures.is_empty(),
        "{} disagree(s) with {} (fix the stand-in; a new driver's answers go in the \
         transcript, and gpusliced must then work with them):\n{}",
        failures.len(),
        transcript_path.display(),
        failures.join("\n")
    );
}

/// What one program did over the transcript.
struct Outcome {
    /// Transcript line and what differed.
    problems: Vec<(usize, String)>,
    /// The logs of the daemons that quit, normalized.
    logs: Vec<String>,
}

impl Outcome {
    fn problems(&self, name: &str) -> Vec<String> {
        self.problems
            .iter()
            .map(|(line, what)| format!("  {name}, transcript line {line}: {what}"))
            .collect()
    }
}

/// One daemon process and its output so far.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    said: Vec<String>,
    exited: Option<i32>,
}

impl Running {
    /// Reads output until the daemon has logged its start (or ended), then
    /// waits until it has written its pid (after its sockets listen: NVIDIA's
    /// daemon logs its start lines before it binds them) or exited.
    fn wait_started(&mut self, pipe: &Path) {
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
        let _ = gpuslice::mps::control::wait_on_dir(pipe, BOUND, &|| {
            let written = std::fs::read_to_string(&pid_file).is_ok_and(|t| t.starts_with(&pid));
            let exited = child.borrow_mut().try_wait().is_ok_and(|s| s.is_some());
            Ok(written || exited)
        });
    }

    /// Waits for the exit (bounded) and the rest of the output; the status
    /// as a shell shows it (128 + a signal).
    fn wait_exit(&mut self) -> i32 {
        if let Some(code) = self.exited {
            return code;
        }
        let (tx, rx) = mpsc::channel();
        let pid = self.child.id();
        let waiter = std::thread::spawn(move || {
            if rx.recv_timeout(BOUND).is_err() {
                gpuslice::mps::child::kill_pid(pid);
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

/// The replay of one program.
struct Replay {
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
    fn run(program: &Path, transcript: &str) -> Outcome {
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
                let t = std::time::Instant::now();
                replay.directive(at, line);
                if t.elapsed() > Duration::from_secs(1) {
                    eprintln!("SLOW {at} {line} {:?}", t.elapsed());
                }
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
                gpuslice::mps::child::kill_pid(pid);
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

const PID_FILE: &str = "nvidia-cuda-mps-control.pid";

/// `> COMMAND` (root) or `nobody> COMMAND` (uid 65534).
fn client_line(line: &str) -> Option<(Option<u32>, &str)> {
    let (user, rest) = match line.strip_prefix("nobody>") {
        Some(rest) => (Some(65534), rest),
        None => (None, line.strip_prefix('>')?),
    };
    Some((user, rest.strip_prefix(' ').unwrap_or(rest)))
}

/// The first lines where `a` and `b` part, with a few around them.
fn line_diff(a: &[String], b: &[String], a_name: &str, b_name: &str) -> String {
    let first = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = first.saturating_sub(2);
    let show = |lines: &[String]| -> String {
        lines
            .iter()
            .enumerate()
            .skip(from)
            .take(6)
            .map(|(n, l)| format!("    {:>4} {l}\n", n + 1))
            .collect()
    };
    format!(
        "  from log line {} on ({} and {} lines in all):\n  {a_name}:\n{}  {b_name}:\n{}",
        first + 1,
        a.len(),
        b.len(),
        show(a),
        show(b)
    )
}
