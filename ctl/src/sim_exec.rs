//! `gpuslicectl sim exec --claim UID -- CMD...`: runs CMD as a fake GPU
//! process of a claim on the simulated backend, for demos and tests. CMD
//! gets the claim's CDI environment (the spec's edits and its device's, as
//! a container runtime would inject them), and a process file in the
//! simulator's folder (GetStatus `sim_processes_dir`) tells the simulator
//! that CMD's pid uses the device, with the memory and SM figures given.
//! With `--no-claim --device gpu-N` instead, CMD runs on a whole GPU with
//! no claim's environment, as a workload that bypassed the scheduler would
//! (gpusliced shows it as unclaimed and warns). Once the file is written,
//! so the next sample sees the process, one line on stderr says so
//! ([`announcement`]): a script started `sim exec … &` waits for it. The
//! file is removed when CMD ends; the exit status is CMD's (128 + the
//! signal that ended it).
//! SIGTERM and SIGHUP are passed on to CMD; Ctrl-C reaches it from the
//! terminal. `--pid PID` registers a process already running instead
//! (`sim_follow`).

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use anyhow::{Context, bail};
use gpuslice_cdi::spec::Spec;
use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use gpuslice_quantity::bytes::parse_bytes;
use gpuslice_quantity::show::cell;
use gpuslice_sim_files::{
    SimProcessFile, proc_start_time, remove_process_file, write_process_file,
};
use tokio::signal::unix::{SignalKind, signal};
use tonic::transport::Channel;

/// `sim exec`'s options.
#[derive(Debug, clap::Args)]
pub struct SimExecArgs {
    /// The claim (its uid) the process belongs to.
    #[arg(
        long,
        required_unless_present = "no_claim",
        conflicts_with = "no_claim"
    )]
    claim: Option<String>,
    /// Run it outside any claim (no CDI environment), on the whole GPU
    /// `--device` names: a workload that bypassed the scheduler.
    #[arg(long, requires = "device")]
    no_claim: bool,
    /// The device it runs on, by inventory name (default: the claim's first).
    #[arg(long)]
    device: Option<String>,
    /// GPU memory it uses, a Kubernetes quantity: 4Gi is 4 GiB (2^30
    /// bytes each), 4G is 4×10^9 bytes; "4GiB" is refused ("write 4Gi").
    #[arg(long, value_parser = parse_bytes, default_value = "1Gi")]
    memory: u64,
    /// SM utilization it shows, percent (0 reads as idle).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    sm: u32,
    /// Register it as an MPS client (the default on a device the claim
    /// shares through MPS).
    #[arg(long)]
    mps: bool,
    /// Register the process PID, already running, instead of starting CMD
    /// (a container's, by its host pid); its file goes when it ends.
    #[arg(long, conflicts_with = "command")]
    pid: Option<u32>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required_unless_present = "pid", value_name = "CMD")]
    command: Vec<String>,
}

/// Where and as what the process runs.
struct Target {
    dir: PathBuf,
    uuid: String,
    mps: bool,
    env: Vec<(String, String)>,
    /// The device's inventory name.
    device: String,
    /// The claim, "namespace/name (uid)"; `None` for `--no-claim`.
    claim: Option<String>,
}

/// Runs CMD to its end; returns its exit status as ours.
pub async fn run(mut client: GpuSliceClient<Channel>, args: SimExecArgs) -> anyhow::Result<u8> {
    let target = target(&mut client, &args).await?;
    drop(client);
    if let Some(pid) = args.pid {
        let file = process_file(pid, &target, &args);
        let line = announcement(&file, &target);
        return crate::sim_follow::follow(&target.dir, file, &line).await;
    }
    let (program, rest) = args
        .command
        .split_first()
        .context("no command given after --")?;
    let mut child = std::process::Command::new(program)
        .args(rest)
        .envs(target.env.iter().map(|(k, v)| (k, v)))
        .spawn()
        .with_context(|| format!("cannot run {program}"))?;
    let pid = child.id();
    let file = process_file(pid, &target, &args);
    let written = write_process_file(&target.dir, &file)
        .with_context(|| format!("cannot register process {pid} with the simulator"));
    let status = match written {
        Ok(()) => {
            eprintln!("{}", announcement(&file, &target));
            wait(child).await
        }
        Err(err) => {
            let _ = nix::sys::signal::kill(as_pid(pid), nix::sys::signal::Signal::SIGTERM);
            let _ = child.wait();
            return Err(err);
        }
    };
    if let Err(err) = remove_process_file(&target.dir, pid) {
        eprintln!("gpuslicectl sim exec: {err}");
    }
    Ok(exit_code(status?))
}

/// The simulator's file for process `pid` on `target`, with the limits
/// `args` asks for.
fn process_file(pid: u32, target: &Target, args: &SimExecArgs) -> SimProcessFile {
    SimProcessFile {
        pid,
        start_time: proc_start_time(pid),
        device: target.uuid.clone(),
        memory_bytes: args.memory,
        sm_percent: args.sm,
        mps_client: target.mps,
    }
}

/// The line printed once `file` is written: "sim exec: pid 1234 on gpu-2
/// as claim ml/infer-a (7a1e0c2d-…), 12.0 GiB, SM 40%, MPS client".
fn announcement(file: &SimProcessFile, target: &Target) -> String {
    let owner = match &target.claim {
        Some(claim) => format!("as claim {claim}"),
        None => "outside any claim".to_owned(),
    };
    let mps = if file.mps_client { ", MPS client" } else { "" };
    format!(
        "sim exec: pid {} on {} {owner}, {}, SM {}%{mps}",
        file.pid,
        target.device,
        cell(file.memory_bytes),
        file.sm_percent
    )
}

fn as_pid(pid: u32) -> nix::unistd::Pid {
    nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX))
}

/// Waits for `child`, passing SIGTERM and SIGHUP on to it. SIGINT is only
/// waited through: Ctrl-C on the terminal reaches CMD itself (same process
/// group), and the file is still removed when CMD ends.
async fn wait(mut child: std::process::Child) -> anyhow::Result<ExitStatus> {
    use nix::sys::signal::Signal;
    let pid = as_pid(child.id());
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let done = tokio::task::spawn_blocking(move || child.wait());
    tokio::pin!(done);
    loop {
        let forward = tokio::select! {
            status = &mut done => return Ok(status.context("the wait for the command was lost")??),
            _ = int.recv() => None,
            _ = term.recv() => Some(Signal::SIGTERM),
            _ = hup.recv() => Some(Signal::SIGHUP),
        };
        if let Some(signal) = forward {
            let _ = nix::sys::signal::kill(pid, signal);
        }
    }
}

/// The exit code of a status: its code, or 128 + the signal that ended it.
fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    u8::try_from(code).unwrap_or(1)
}

async fn target(
    client: &mut GpuSliceClient<Channel>,
    args: &SimExecArgs,
) -> anyhow::Result<Target> {
    let status = client
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner();
    if status.backend != "sim" || status.sim_processes_dir.is_empty() {
        bail!(
            "sim exec runs fake GPU processes on the simulated backend only; this gpusliced \
             runs backend {:?}",
            status.backend
        );
    }
    let dir = PathBuf::from(status.sim_processes_dir);
    let Some(uid) = &args.claim else {
        let name = args.device.as_deref().unwrap_or_default();
        return Ok(Target {
            dir,
            uuid: gpu_uuid(client, name).await?,
            mps: args.mps,
            env: Vec::new(),
            device: name.to_owned(),
            claim: None,
        });
    };
    let claims = client
        .list_claims(pb::ListClaimsRequest {})
        .await?
        .into_inner();
    let claim = claims
        .claims
        .into_iter()
        .find(|c| c.claim.as_ref().is_some_and(|r| &r.uid == uid))
        .with_context(|| format!("no claim {uid} is prepared (gpuslicectl claims)"))?;
    let device = match &args.device {
        Some(name) => claim.devices.iter().find(|d| &d.device == name),
        None => claim.devices.first(),
    }
    .with_context(|| {
        let held: Vec<&str> = claim.devices.iter().map(|d| d.device.as_str()).collect();
        format!(
            "claim {uid} does not hold {}; it holds {}",
            args.device.as_deref().unwrap_or("any device"),
            held.join(", ")
        )
    })?
    .clone();
    let uuid = device_uuid(client, uid, &device.device).await?;
    let spec = read_spec(Path::new(&claim.cdi_spec_path))?;
    let named = claim.claim.unwrap_or_default();
    Ok(Target {
        dir,
        uuid,
        mps: args.mps || device.sharing.starts_with("mps"),
        env: cdi_env(&spec, &device.cdi_device_ids),
        claim: Some(format!("{}/{} ({uid})", named.namespace, named.name)),
        device: device.device,
    })
}

/// The device's own UUID: from the activity snapshot, else the MIG layout
/// (a GPU's UUID, or a slice's MIG UUID).
async fn device_uuid(
    client: &mut GpuSliceClient<Channel>,
    uid: &str,
    device: &str,
) -> anyhow::Result<String> {
    let activity = client
        .get_activity(pb::GetActivityRequest::default())
        .await?
        .into_inner();
    let sampled = activity
        .claims
        .iter()
        .filter(|c| c.claim.as_ref().is_some_and(|r| r.uid == uid))
        .flat_map(|c| &c.devices)
        .find(|d| d.device == device && !d.uuid.is_empty());
    if let Some(d) = sampled {
        return Ok(d.uuid.clone());
    }
    mig_layout(client)
        .await?
        .gpus
        .iter()
        .find_map(|g| {
            if g.device == device {
                return Some(g.uuid.clone());
            }
            g.instances
                .iter()
                .find(|i| i.device == device && !i.uuid.is_empty())
                .map(|i| i.uuid.clone())
        })
        .with_context(|| format!("cannot find the UUID of {device}"))
}

/// The UUID of the whole GPU named `name`, from the MIG layout (which lists
/// every GPU, in MIG mode or not).
async fn gpu_uuid(client: &mut GpuSliceClient<Channel>, name: &str) -> anyhow::Result<String> {
    let layout = mig_layout(client).await?;
    layout
        .gpus
        .iter()
        .find(|g| g.device == name)
        .map(|g| g.uuid.clone())
        .with_context(|| {
            let names: Vec<&str> = layout.gpus.iter().map(|g| g.device.as_str()).collect();
            format!(
                "--no-claim runs on a whole GPU: no GPU {name} in the inventory; the GPUs are {}",
                names.join(", ")
            )
        })
}

async fn mig_layout(
    client: &mut GpuSliceClient<Channel>,
) -> anyhow::Result<pb::GetMigLayoutResponse> {
    Ok(client
        .get_mig_layout(pb::GetMigLayoutRequest {})
        .await?
        .into_inner())
}

fn read_spec(path: &Path) -> anyhow::Result<Spec> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the claim's CDI spec {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("cannot parse the claim's CDI spec {}", path.display()))
}

/// The environment a runtime injects for `device_ids` (fully qualified CDI
/// names): the spec's edits, then each device's, later entries winning.
pub fn cdi_env(spec: &Spec, device_ids: &[String]) -> Vec<(String, String)> {
    let names: Vec<&str> = device_ids
        .iter()
        .filter_map(|id| id.split_once('=').map(|(_, name)| name))
        .collect();
    let devices = spec
        .devices
        .iter()
        .filter(|d| names.contains(&d.name.as_str()));
    std::iter::once(&spec.container_edits)
        .chain(devices.map(|d| &d.container_edits))
        .flat_map(|edits| &edits.env)
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[cfg(test)]
#[path = "sim_exec_tests.rs"]
mod tests;
