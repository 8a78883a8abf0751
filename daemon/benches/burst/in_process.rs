//! The in-process mode, to tell the engine from the socket: N threads
//! calling `Engine::prepare` on one engine over N simulated H100s (the same
//! fake driver root and disk as the daemon's), no gRPC, no logging
//! subscriber. Thread `i` prepares an exclusive claim on `gpu-<i>`.

use std::path::Path;
use std::sync::Arc;

use gpuslice::claims::Engine;
use gpuslice::testkit::SimNode;

use crate::crew::Worker;
use crate::engine::{node, request};
use crate::uid;

/// The uid prefix of in-process claims.
pub const MODE: u16 = 2;

/// An engine on `gpus` GPUs in a fresh folder under `parent` (kept until
/// the returned node drops).
pub fn start(parent: &Path, gpus: usize) -> (SimNode, Arc<Engine>) {
    let node = node(parent, gpus);
    let engine = Arc::clone(node.engine());
    (node, engine)
}

/// One thread's part: the shared engine and its GPU.
pub struct Caller {
    pub engine: Arc<Engine>,
    pub gpu: usize,
}

impl Worker for Caller {
    fn timed(&mut self, round: usize) -> Result<(), String> {
        let claim = uid(MODE, round, self.gpu);
        self.engine
            .prepare(&request(claim.clone(), self.gpu))
            .map(drop)
            .map_err(|e| format!("in-process prepare of {claim} on gpu-{}: {e}", self.gpu))
    }

    fn clean(&mut self, round: usize) -> Result<(), String> {
        let claim = uid(MODE, round, self.gpu);
        self.engine
            .unprepare(&claim)
            .map(drop)
            .map_err(|e| format!("in-process unprepare of {claim}: {e}"))
    }
}
