//! The floor: what a prepare cannot avoid, done by N threads at once. Each
//! thread makes the same two durable writes as an exclusive prepare, with
//! the project's one atomic writer (`gpuslice_cdi::atomic::write_atomic`:
//! temp file, write, fsync, rename, fsync dir) and the same modes: the
//! spec's size into the daemon's CDI folder, then the record's size into
//! its records folder, under fresh names. Removed again, untimed.

use std::path::PathBuf;
use std::sync::Arc;

use gpuslice_cdi::atomic::{remove_durable, write_atomic};

use crate::crew::Worker;
use crate::uid;

/// The uid prefix of floor files.
const MODE: u16 = 3;
/// The modes the daemon gives a spec and a record.
const SPEC_MODE: u32 = 0o644;
const RECORD_MODE: u32 = 0o600;

/// Where the floor writes and what.
#[derive(Debug)]
pub struct Target {
    pub cdi_dir: PathBuf,
    pub records_dir: PathBuf,
    pub spec: Vec<u8>,
    pub record: Vec<u8>,
}

/// One thread's part.
#[derive(Debug)]
pub struct Writer {
    pub target: Arc<Target>,
    pub index: usize,
}

impl Writer {
    fn names(&self, round: usize) -> (String, String) {
        let id = uid(MODE, round, self.index);
        (
            format!("floor-spec_{id}.json"),
            format!("floor-record_{id}.json"),
        )
    }
}

impl Worker for Writer {
    fn timed(&mut self, round: usize) -> Result<(), String> {
        let (spec, record) = self.names(round);
        let t = &self.target;
        write_atomic(&t.cdi_dir, &spec, &t.spec, SPEC_MODE)
            .and_then(|()| write_atomic(&t.records_dir, &record, &t.record, RECORD_MODE))
            .map_err(|e| format!("floor write: {e}"))
    }

    fn clean(&mut self, round: usize) -> Result<(), String> {
        let (spec, record) = self.names(round);
        let t = &self.target;
        remove_durable(&t.cdi_dir, &spec)
            .and_then(|_| remove_durable(&t.records_dir, &record))
            .map(drop)
            .map_err(|e| format!("floor removal: {e}"))
    }
}
