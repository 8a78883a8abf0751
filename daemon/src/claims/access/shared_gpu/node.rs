//! The fixture of the sharing engine tests: the test kit's simulated node
//! with the fake MPS control daemons and nvidia-smi, and the record each
//! fake keeps (the lines the stand-ins in tests/tools record).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::claims::Engine;
use crate::claims::compute_policy::FakeNvidiaSmi;
use crate::claims::mps_daemon::{FakeMps, StartGate};
use crate::config::MigConfig;
use crate::gpu::ComputeMode;
use crate::gpu::sim::SimBackend;
use crate::testkit::{SimNode, SimNodeBuilder};

/// Upper bound for a restarted daemon to come back; only a hang reaches it.
pub(in crate::claims) const BOUND: Duration = Duration::from_secs(30);

/// A simulated node with the fakes; every claim is unprepared when the
/// test ends (the kit's node does it).
pub(in crate::claims) struct Node {
    node: SimNode,
    pub(in crate::claims) backend: Arc<SimBackend>,
    /// Holds daemon starts, for [`Node::gated`].
    pub(in crate::claims) gate: Option<StartGate>,
}

impl Node {
    /// `fail_start`: the first daemon started exits before it answers.
    pub(in crate::claims) fn new(gpus: usize, mig: &MigConfig, fail_start: bool) -> Self {
        let node = SimNodeBuilder::h100s(gpus)
            .mig(mig.clone())
            .fake_tools()
            .start();
        let node = Self {
            backend: Arc::clone(&node.sim),
            node,
            gate: None,
        };
        if fail_start {
            node.mps().fail_next_start();
        }
        node
    }

    /// A node whose daemon starts wait at [`Node::gate`] once begun: a test
    /// can hold a prepare mid-way with no sleep.
    pub(in crate::claims) fn gated(gpus: usize) -> Self {
        let mut node = Self::new(gpus, &MigConfig::default(), false);
        node.gate = Some(node.mps().gate_starts());
        node
    }

    pub(in crate::claims) fn plain(gpus: usize) -> Self {
        Self::new(gpus, &MigConfig::default(), false)
    }

    pub(in crate::claims) fn engine(&self) -> &Engine {
        self.node.engine()
    }

    pub(in crate::claims) fn dir(&self) -> &Path {
        self.node.dir.path()
    }

    pub(in crate::claims) fn mps(&self) -> &FakeMps {
        self.node.mps.as_deref().expect("the node has fake tools")
    }

    pub(in crate::claims) fn smi(&self) -> &FakeNvidiaSmi {
        self.node.smi.as_deref().expect("the node has fake tools")
    }

    /// The fake's record: `mps.record` (daemon starts and commands) or
    /// `smi.record` (nvidia-smi's arguments, one call a line).
    pub(in crate::claims) fn lines(&self, file: &str) -> Vec<String> {
        match file {
            "mps.record" => self.mps().record(),
            "smi.record" => self.smi().calls(),
            other => panic!("no record {other}"),
        }
    }

    pub(in crate::claims) fn starts(&self) -> usize {
        self.mps().starts()
    }

    pub(in crate::claims) fn spec(&self, uid: &str) -> Option<serde_json::Value> {
        self.node.spec(uid)
    }

    pub(in crate::claims) fn has_record(&self, uid: &str) -> bool {
        self.node.has_record(uid)
    }

    pub(in crate::claims) fn uuid(&self, index: usize) -> String {
        self.node.uuid(index)
    }

    pub(in crate::claims) fn mode(&self, index: u32) -> ComputeMode {
        self.node.mode(index)
    }
}
