//! One tool process answering many questions (`allocator -stream`): a test
//! that asks once per pod pays the process start and the CEL compilation
//! once, not per question.
//!
//! Owns: the process, writing each question and reading its answer line.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::{Input, Outcome, ToolError, answer_error};

/// A running `allocator -stream`; it ends when dropped.
#[derive(Debug)]
pub struct Session {
    binary: PathBuf,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Session {
    pub(super) fn start(binary: &Path) -> Result<Self, ToolError> {
        let spawn_error = |error| ToolError::Spawn {
            binary: binary.to_path_buf(),
            error,
        };
        let mut child = Command::new(binary)
            .arg("-stream")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| spawn_error(std::io::Error::other("the child has no stdout pipe")))?;
        Ok(Session {
            binary: binary.to_path_buf(),
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// The upstream allocator's answer to `input`.
    pub fn allocate(&mut self, input: &Input) -> Result<Outcome, ToolError> {
        let json = serde_json::to_vec(input).map_err(ToolError::Input)?;
        self.allocate_json(&json)
    }

    /// The answer to `json` as it is (one JSON object).
    pub fn allocate_json(&mut self, json: &[u8]) -> Result<Outcome, ToolError> {
        let written = match self.stdin.as_mut() {
            Some(pipe) => pipe
                .write_all(json)
                .and_then(|()| pipe.write_all(b"\n"))
                .and_then(|()| pipe.flush()),
            None => Err(std::io::Error::other("the session has ended")),
        };
        let mut line = String::new();
        let read = written.and_then(|()| self.stdout.read_line(&mut line));
        match read {
            Ok(n) if n > 0 => {
                serde_json::from_str(&line).map_err(|source| answer_error(source, line.as_bytes()))
            }
            // No answer: the tool exited (a refused input), or the pipe
            // broke; its status and stderr say which.
            _ => Err(self.ended()),
        }
    }

    /// The error of a tool that stopped answering.
    fn ended(&mut self) -> ToolError {
        self.stdin = None;
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            // What it said before exiting; a read error leaves it empty.
            let _ignored = pipe.read_to_string(&mut stderr);
        }
        match self.child.wait() {
            Ok(status) => ToolError::Exit {
                code: status.code(),
                status: status.to_string(),
                stderr,
            },
            Err(error) => ToolError::Spawn {
                binary: self.binary.clone(),
                error,
            },
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closing stdin ends the stream; the tool then exits 0.
        self.stdin = None;
        let _ignored = self.child.wait();
    }
}
