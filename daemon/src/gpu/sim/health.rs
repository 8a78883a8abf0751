//! Health events of the simulated node: injected by a test in process
//! ([`super::SimBackend::inject_health`]) or, in a running daemon, appended
//! as lines to the health events file (syntax in `health_spec`).
//!
//! Owns the node's event log (every event injected in process, in order) and
//! the file's path. A watch reports what arrives after it is made, as NVML's
//! event sets do: it starts at the end of the log and of the file, reads only
//! whole lines (a line being appended is read once its newline is there), and
//! starts the file again from the top if it was replaced (another inode) or
//! shrank (truncated).
//! Lines it cannot parse, or naming a GPU the node lacks, are logged and
//! skipped. In-process injection wakes a waiting watch at once; the file is
//! polled every [`FILE_POLL`].

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::SimBackend;
use super::health_spec::{InjectedEvent, parse_line};
use crate::gpu::{GpuError, HealthEvent, HealthWatch, Unmonitored};

/// How often a waiting watch looks at the events file.
pub const FILE_POLL: Duration = Duration::from_millis(50);

/// The node's injected events.
#[derive(Debug, Default)]
pub(super) struct SimHealth {
    log: Mutex<Vec<HealthEvent>>,
    arrived: Condvar,
    file: Option<PathBuf>,
}

impl SimHealth {
    pub(super) fn with_file(file: Option<PathBuf>) -> Self {
        Self {
            file,
            ..Self::default()
        }
    }

    pub(super) fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    pub(super) fn push(&self, event: HealthEvent) {
        self.lock().push(event);
        self.arrived.notify_all();
    }

    /// The log holds whole events only, so a poisoned lock is still consistent.
    fn lock(&self) -> MutexGuard<'_, Vec<HealthEvent>> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SimBackend {
    /// The event the line-level `injected` stands for, or why not.
    pub(super) fn health_event(
        &self,
        injected: InjectedEvent,
        message: String,
    ) -> Result<HealthEvent, GpuError> {
        let gpu = self.gpu(injected.gpu)?;
        Ok(HealthEvent {
            gpu_index: injected.gpu,
            gpu_uuid: gpu.uuid.clone(),
            gpu_instance: injected.gpu_instance,
            compute_instance: injected.compute_instance,
            kind: injected.kind,
            message,
        })
    }
}

/// A watch on the simulated node ([`SimBackend::health_watch`]).
#[derive(Debug)]
pub struct SimHealthWatch<'a> {
    backend: &'a SimBackend,
    /// Events of the log already reported (or made before the watch).
    cursor: usize,
    /// Bytes of the file already read (or there before the watch).
    offset: u64,
    /// The file's inode when last read.
    inode: Option<u64>,
}

impl SimBackend {
    /// A watch of this node's health events, as `watch_health` gives it,
    /// as its own type (which may move to another thread).
    pub fn health_watch(&self) -> SimHealthWatch<'_> {
        SimHealthWatch::new(self)
    }
}

impl<'a> SimHealthWatch<'a> {
    pub(super) fn new(backend: &'a SimBackend) -> Self {
        let meta = (backend.health.file()).and_then(|path| std::fs::metadata(path).ok());
        Self {
            backend,
            cursor: backend.health.lock().len(),
            offset: meta.as_ref().map_or(0, |m| m.len()),
            inode: meta.map(|m| m.ino()),
        }
    }

    /// Events from whole lines appended to the file since the last read.
    fn read_file(&mut self) -> Result<Vec<HealthEvent>, GpuError> {
        let Some(path) = self.backend.health.file() else {
            return Ok(Vec::new());
        };
        let unreadable = |err: std::io::Error| GpuError::SimState {
            path: path.display().to_string(),
            reason: format!("cannot read the health events file: {err}"),
        };
        let mut file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                self.offset = 0;
                return Ok(Vec::new());
            }
            Err(err) => return Err(unreadable(err)),
        };
        let meta = file.metadata().map_err(unreadable)?;
        let len = meta.len();
        if len < self.offset || self.inode != Some(meta.ino()) {
            self.offset = 0;
            self.inode = Some(meta.ino());
        }
        if len == self.offset {
            return Ok(Vec::new());
        }
        let mut text = Vec::new();
        file.seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.read_to_end(&mut text))
            .map_err(unreadable)?;
        let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let taken = text.get(..whole).unwrap_or_default();
        self.offset += u64::try_from(whole).unwrap_or(0);
        Ok(String::from_utf8_lossy(taken)
            .lines()
            .filter_map(|line| self.event_of_line(path, line))
            .collect())
    }

    fn event_of_line(&self, path: &Path, line: &str) -> Option<HealthEvent> {
        let parsed = parse_line(line).map_err(|err| err.to_string());
        let event = parsed.and_then(|injected| {
            let Some(injected) = injected else {
                return Ok(None);
            };
            let message = format!("injected through {}", path.display());
            self.backend
                .health_event(injected, message)
                .map_err(|err| format!("injected health event {:?}: {err}", line.trim()))
                .map(Some)
        });
        match event {
            Ok(event) => event,
            Err(problem) => {
                tracing::warn!(file = %path.display(), %problem, "skipped a line of the simulated health events file");
                None
            }
        }
    }
}

impl HealthWatch for SimHealthWatch<'_> {
    fn wait(&mut self, timeout: Duration) -> Result<Vec<HealthEvent>, GpuError> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut events = self.read_file()?;
            let log = self.backend.health.lock();
            events.extend(log.iter().skip(self.cursor).cloned());
            self.cursor = log.len();
            let now = Instant::now();
            if !events.is_empty() || now >= deadline {
                return Ok(events);
            }
            let pause = (deadline - now).min(FILE_POLL);
            drop(
                self.backend
                    .health
                    .arrived
                    .wait_timeout(log, pause)
                    .unwrap_or_else(PoisonError::into_inner),
            );
        }
    }

    fn unmonitored(&self) -> Vec<Unmonitored> {
        Vec::new()
    }
}
