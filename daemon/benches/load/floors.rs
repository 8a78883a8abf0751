//! Floors, measured on the load's node before the load, idle, one client:
//!
//! - **rpc**: an Unprepare of a claim the daemon does not know: the gRPC
//!   round trip on the same socket, through the blocking pool and the claim
//!   lock, with nothing to do.
//! - **exclusive** against **fsync**: an exclusive prepare of a free GPU
//!   (the claim unprepared again, untimed) against two durable writes of its
//!   spec's and record's sizes with raw std calls (create_new, write_all,
//!   fsync, rename, fsync dir; twice), on the same disk, the order alternating
//!   as in the prepare bench.
//! - **mps** against **stand_in**: an MPS prepare that starts a daemon (then
//!   unprepared, untimed, which stops it) against the stand-in control
//!   program doing the same work alone: the daemon process started, its
//!   control socket up, the three control commands gpusliced sends
//!   (get_server_list, set and read back the thread percentage). The
//!   stand-in is python behind a shell wrapper: its cost is the interpreter's
//!   start-up, not gpusliced's.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::durable::durable_write;
use crate::harness::{prepare_request, unprepare_request};
use crate::load::driver::Node;
use crate::load::observe::spec_name;
use crate::load::report::{ms, percentile};
use crate::stand_ins::{mps, shared_request};

const RPC_SAMPLES: usize = 500;
const EXCLUSIVE_SAMPLES: usize = 200;
const MPS_SAMPLES: usize = 10;

/// Sorted samples.
#[derive(Debug, Default)]
pub struct Samples(Vec<Duration>);

impl Samples {
    fn push(&mut self, d: Duration) {
        self.0.push(d);
        self.0.sort_unstable();
    }

    pub fn p50(&self) -> Duration {
        percentile(&self.0, 50)
    }

    pub fn p99(&self) -> Duration {
        percentile(&self.0, 99)
    }

    fn words(&self) -> String {
        format!(
            "p50 {} p99 {} (n={})",
            ms(self.p50()),
            ms(self.p99()),
            self.0.len()
        )
    }
}

/// Every floor, with what it is compared with.
#[derive(Debug, Default)]
pub struct Floors {
    pub rpc: Samples,
    pub exclusive: Samples,
    pub fsync: Samples,
    pub mps: Samples,
    pub stand_in: Samples,
    spec_bytes: usize,
    record_bytes: usize,
}

fn uid(kind: u8, n: usize) -> String {
    format!("f100000{kind}-0000-4000-8000-{n:012x}")
}

/// Measures every floor on the idle node; leaves it empty.
pub async fn measure(node: &Node) -> Floors {
    let mut out = Floors::default();
    let mut api = node.api.clone();
    for n in 0..RPC_SAMPLES {
        let started = Instant::now();
        let reply = api.unprepare(unprepare_request(&uid(1, n))).await;
        out.rpc.push(started.elapsed());
        assert!(!reply.expect("unprepare").into_inner().was_prepared);
    }
    let shareable = node.catalogue.shareable();
    let (whole, shared) = (shareable[0].name.clone(), shareable[2].name.clone());
    let floor_dir = node.daemon.path().join("floor");
    for sub in ["cdi", "records", "mps"] {
        std::fs::create_dir_all(floor_dir.join(sub)).expect("floor folder");
    }
    for n in 0..EXCLUSIVE_SAMPLES {
        let claim = uid(2, n);
        let floor_first = n % 2 == 1 && out.spec_bytes > 0;
        if floor_first {
            out.fsync.push(fsync_floor(&floor_dir, &out, n));
        }
        let started = Instant::now();
        api.prepare(prepare_request(&claim, &[&whole]))
            .await
            .expect("exclusive prepare on the idle node");
        out.exclusive.push(started.elapsed());
        if out.spec_bytes == 0 {
            out.spec_bytes = size(&node.daemon.cdi_dir.join(spec_name(&claim)));
            let record = node
                .daemon
                .state_dir
                .join("claims")
                .join(format!("{claim}.json"));
            out.record_bytes = size(&record);
        }
        if !floor_first {
            out.fsync.push(fsync_floor(&floor_dir, &out, n));
        }
        api.unprepare(unprepare_request(&claim))
            .await
            .expect("unprepare");
    }
    let program = node.daemon.path().join("mps-control");
    let uuid = shareable[2].uuid.clone();
    for n in 0..MPS_SAMPLES {
        let claim = uid(3, n);
        let started = Instant::now();
        api.prepare(shared_request(&claim, &[&shared], &[mps(50)]))
            .await
            .expect("MPS prepare on the idle node");
        out.mps.push(started.elapsed());
        api.unprepare(unprepare_request(&claim))
            .await
            .expect("unprepare");
        let (program, dir, uuid) = (
            program.clone(),
            floor_dir.join("mps").join(n.to_string()),
            uuid.clone(),
        );
        let took = tokio::task::spawn_blocking(move || stand_in(&program, &dir, &uuid))
            .await
            .expect("stand-in floor");
        out.stand_in.push(took);
    }
    out
}

fn size(path: &Path) -> usize {
    let len = std::fs::metadata(path).expect("a claim file").len();
    usize::try_from(len).expect("fits")
}

/// Two durable writes of the spec's and the record's sizes.
fn fsync_floor(dir: &Path, sizes: &Floors, n: usize) -> Duration {
    let spec = vec![b'x'; sizes.spec_bytes];
    let record = vec![b'x'; sizes.record_bytes];
    let (cdi, records) = (dir.join("cdi"), dir.join("records"));
    let started = Instant::now();
    durable_write(&cdi, &format!("spec-{n}.json"), &spec);
    durable_write(&records, &format!("record-{n}.json"), &record);
    let took = started.elapsed();
    for (d, name) in [
        (&cdi, format!("spec-{n}.json")),
        (&records, format!("record-{n}.json")),
    ] {
        std::fs::remove_file(d.join(name)).expect("remove a floor file");
    }
    took
}

/// The stand-in control program's own cost of what gpusliced asks of it
/// when it starts a daemon: the process, the socket, three commands.
fn stand_in(program: &Path, dir: &Path, uuid: &str) -> Duration {
    let (pipe, log) = (dir.join("pipe"), dir.join("log"));
    for d in [&pipe, &log] {
        std::fs::create_dir_all(d).expect("stand-in folder");
    }
    let started = Instant::now();
    let mut daemon = Command::new(program)
        .arg("-f")
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("CUDA_VISIBLE_DEVICES", uuid)
        .env("CUDA_MPS_PIPE_DIRECTORY", &pipe)
        .env("CUDA_MPS_LOG_DIRECTORY", &log)
        .env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the stand-in daemon");
    wait_for(&pipe.join("control"));
    for command in [
        "get_server_list",
        "set_default_active_thread_percentage 50",
        "get_default_active_thread_percentage",
    ] {
        control(program, &pipe, &log, command);
    }
    let took = started.elapsed();
    control(program, &pipe, &log, "quit");
    daemon.wait().expect("the stand-in daemon exits");
    took
}

/// One control command through the program, as gpusliced sends it.
fn control(program: &Path, pipe: &Path, log: &Path, command: &str) {
    let mut client = Command::new(program)
        .env("CUDA_MPS_PIPE_DIRECTORY", pipe)
        .env("CUDA_MPS_LOG_DIRECTORY", log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run the stand-in client");
    if let Some(mut stdin) = client.stdin.take() {
        stdin
            .write_all(format!("{command}\n").as_bytes())
            .expect("send a control command");
    }
    let out = client.wait_with_output().expect("the stand-in client");
    assert!(
        out.status.success(),
        "control command {command}: {}",
        out.status
    );
}

#[expect(
    clippy::disallowed_methods,
    reason = "a bench polls for the stand-in's socket at 1 ms (under 1% of its start); tests never sleep"
)]
fn wait_for(path: &Path) {
    let bound = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(Instant::now() < bound, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl Floors {
    pub fn print(&self) {
        println!("floors (idle node, one client, same socket and disk, before the load):");
        println!(
            "  gRPC round trip (unprepare of an unknown claim): {}",
            self.rpc.words()
        );
        println!(
            "  exclusive prepare: {}; two durable writes ({} B spec + {} B record): {}; \
             ratio p50 {:.2}x p99 {:.2}x",
            self.exclusive.words(),
            self.spec_bytes,
            self.record_bytes,
            self.fsync.words(),
            ratio(self.exclusive.p50(), self.fsync.p50()),
            ratio(self.exclusive.p99(), self.fsync.p99()),
        );
        println!(
            "  MPS prepare that starts a daemon: {}; the stand-in alone (start, socket, 3 \
             commands): {}; ratio p50 {:.2}x",
            self.mps.words(),
            self.stand_in.words(),
            ratio(self.mps.p50(), self.stand_in.p50()),
        );
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}
