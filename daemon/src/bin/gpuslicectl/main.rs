//! gpuslicectl: the operator's CLI for gpusliced, over the same API socket.
//!
//! Human output is aligned tables; `--output json` prints one JSON document.

mod activity_render;
#[cfg(test)]
mod fixture;
mod health;
mod match_render;
mod match_verdict;
mod matching;
mod mig_map;
mod render;
mod sharing;
mod sim_exec;
mod top;
mod top_render;
mod units;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

/// Operator CLI for gpusliced.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// gpusliced's API socket.
    #[arg(long, default_value = "/run/gpuslice/gpusliced.sock", global = true)]
    socket: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Table, global = true)]
    output: Output,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Table,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Daemon health, versions and counts.
    Status,
    /// Every device with its attributes and holders.
    Inventory {
        /// Print it again at each change, until gpusliced stops.
        #[arg(long)]
        watch: bool,
    },
    /// Every prepared claim; with --idle, the claims without GPU activity
    /// for at least that long (exit status 0 whether any is found or not).
    Claims {
        /// Only claims idle this long or longer, e.g. 30m, 2h, 1d, 1h30m.
        #[arg(long, value_parser = units::parse_duration, value_name = "DURATION")]
        idle: Option<u64>,
    },
    /// Per-claim GPU use, live: memory, SM utilization, processes, last
    /// activity, unclaimed processes and warnings. Redraws in place on a
    /// terminal (q quits); prints once when piped or with --once.
    Top(top::TopArgs),
    /// The simulated backend's fake GPU processes (demos and tests).
    Sim {
        #[command(subcommand)]
        action: SimAction,
    },
    /// Per GPU, the map of MIG slices: which profile and claim hold which slices.
    Mig,
    /// Unhealthy devices (XIDs, ECC errors, lost GPUs) with the claims on them.
    Health {
        #[command(subcommand)]
        action: Option<HealthAction>,
    },
    /// Per GPU, how it is shared: mode, time-slice, MPS daemons, claims, memory.
    Sharing,
    /// Prepare a claim by hand (what the DRA plugin does for the kubelet).
    Prepare {
        /// Claim uid (a UUID).
        #[arg(long)]
        uid: String,
        /// Claim namespace.
        #[arg(long, default_value = "default")]
        namespace: String,
        /// Claim name.
        #[arg(long, default_value = "manual")]
        name: String,
        /// Device to allocate, by inventory name; repeat for several.
        #[arg(long = "device", required = true)]
        devices: Vec<String>,
        /// Request name the devices satisfy.
        #[arg(long, default_value = "gpu")]
        request: String,
        /// Opaque config from the claim (JSON object, or @FILE), applying to
        /// every request; repeat for several, later ones win.
        #[arg(long = "config", alias = "config-json", value_name = "JSON_OR_@FILE")]
        configs: Vec<String>,
        /// Opaque config from the DeviceClass (JSON object, or @FILE); claim
        /// configs win over these.
        #[arg(long = "class-config", value_name = "JSON_OR_@FILE")]
        class_configs: Vec<String>,
    },
    /// Check a DRA CEL selector (an expression, --class NAME, or -f FILE with
    /// DeviceClasses/ResourceClaims) against this node's devices as the DRA
    /// plugin publishes them, with Kubernetes' CEL rules: which devices match,
    /// the clause that failed on the others, and the common mistakes; with
    /// -f, whether each claim can be allocated now and on an empty node.
    /// Exit status: 0 every target matches a device and every claim can be
    /// allocated now, 1 one matches none, a device raised an evaluation error
    /// or a claim cannot be allocated now, 2 invalid selector or input.
    Match(matching::MatchArgs),
    /// Unprepare a claim.
    Unprepare {
        /// Claim uid.
        #[arg(long)]
        uid: String,
    },
}

#[derive(Debug, Subcommand)]
enum SimAction {
    /// Run CMD with a claim's CDI environment as a fake GPU process on one
    /// of the claim's devices, using --memory and --sm; exits with CMD's
    /// status. Needs `[backend] kind = "sim"`.
    Exec(sim_exec::SimExecArgs),
}

#[derive(Debug, Subcommand)]
enum HealthAction {
    /// Mark a device healthy again after fixing it (GPU reset, reboot): an XID
    /// or ECC fault never clears by itself. A GPU clears with its slices.
    Clear {
        /// The device, by inventory name (e.g. gpu-0).
        device: String,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("gpuslicectl: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    if let Command::Match(match_args) = args.command {
        let json = args.output == Output::Json;
        return match runtime.block_on(matching::run(args.socket, match_args, json)) {
            Ok((text, code)) => {
                print!("{text}");
                ExitCode::from(code)
            }
            Err(err) => {
                eprintln!("gpuslicectl match: {err:#}");
                ExitCode::from(2)
            }
        };
    }
    if let Command::Sim {
        action: SimAction::Exec(exec),
    } = args.command
    {
        let ran = runtime.block_on(async {
            let client = connect(args.socket).await?;
            sim_exec::run(client, exec).await
        });
        return match ran {
            Ok(code) => ExitCode::from(code),
            Err(err) => {
                report(&err, "sim exec");
                ExitCode::FAILURE
            }
        };
    }
    match runtime.block_on(run(args)) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            report(&err, "");
            ExitCode::FAILURE
        }
    }
}

/// Prints an error once: a gRPC status as code and message, else the chain.
fn report(err: &anyhow::Error, command: &str) {
    let who = match command {
        "" => "gpuslicectl".to_owned(),
        command => format!("gpuslicectl {command}"),
    };
    match err.downcast_ref::<tonic::Status>() {
        Some(status) => eprintln!("{who}: {:?}: {}", status.code(), status.message()),
        None => eprintln!("{who}: {err:#}"),
    }
}

pub(crate) async fn connect(socket: PathBuf) -> anyhow::Result<GpuSliceClient<Channel>> {
    let path = socket.clone();
    // The URI is a placeholder: the connector dials the unix socket.
    let channel = Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_| {
            let path = path.clone();
            async move {
                tokio::net::UnixStream::connect(path)
                    .await
                    .map(TokioIo::new)
            }
        }))
        .await
        .with_context(|| format!("cannot connect to gpusliced at {}", socket.display()))?;
    Ok(GpuSliceClient::new(channel))
}

async fn run(args: Args) -> anyhow::Result<String> {
    let json = args.output == Output::Json;
    let mut client = connect(args.socket).await?;
    let text = match args.command {
        Command::Status => {
            let reply = client
                .get_status(pb::GetStatusRequest {})
                .await?
                .into_inner();
            render::status(&reply, json)
        }
        Command::Inventory { watch: true } => {
            watch::inventory(&mut client, json).await?;
            String::new()
        }
        Command::Inventory { watch: false } => {
            let reply = client
                .get_inventory(pb::GetInventoryRequest {})
                .await?
                .into_inner();
            render::inventory(&reply, json)
        }
        Command::Mig => {
            let reply = client
                .get_mig_layout(pb::GetMigLayoutRequest {})
                .await?
                .into_inner();
            mig_map::render(&reply, json)
        }
        Command::Health { action: None } => {
            let reply = client
                .get_health(pb::GetHealthRequest {})
                .await?
                .into_inner();
            health::render(&reply, json)
        }
        Command::Health {
            action: Some(HealthAction::Clear { device }),
        } => {
            let req = pb::ClearHealthRequest {
                device: device.clone(),
            };
            let reply = client.clear_health(req).await?.into_inner();
            health::cleared(&device, &reply, json)
        }
        Command::Sharing => {
            let reply = client
                .get_sharing(pb::GetSharingRequest {})
                .await?
                .into_inner();
            sharing::render(&reply, json)
        }
        Command::Claims { idle: None } => {
            let reply = client
                .list_claims(pb::ListClaimsRequest {})
                .await?
                .into_inner();
            render::claims(&reply, json)
        }
        Command::Claims { idle: Some(idle) } => {
            let reply = client
                .get_activity(pb::GetActivityRequest {})
                .await?
                .into_inner();
            if !reply.enabled {
                anyhow::bail!(
                    "gpusliced does not sample GPU use ([activity] interval_s = 0), so it \
                     cannot tell which claims are idle"
                );
            }
            activity_render::idle_claims(&reply, idle, json)
        }
        Command::Top(top) => top::run(&mut client, top, json).await?,
        Command::Sim { .. } => anyhow::bail!("sim exec is run by main"),
        Command::Prepare {
            uid,
            namespace,
            name,
            devices,
            request,
            configs,
            class_configs,
        } => {
            let configs = opaque_configs(&class_configs, &configs)?;
            let req = pb::PrepareRequest {
                claim: Some(pb::ClaimRef {
                    uid: uid.clone(),
                    namespace,
                    name,
                }),
                devices: devices
                    .into_iter()
                    .map(|device| pb::AllocatedDevice {
                        device,
                        request_names: vec![request.clone()],
                        pool: String::new(),
                        consumed_memory_bytes: None,
                        share_id: String::new(),
                    })
                    .collect(),
                configs,
            };
            let reply = client.prepare(req).await?.into_inner();
            render::prepared(&uid, &reply, json)
        }
        Command::Match(_) => anyhow::bail!("match is run by main"),
        Command::Unprepare { uid } => {
            let req = pb::UnprepareRequest {
                claim: Some(pb::ClaimRef {
                    uid: uid.clone(),
                    ..Default::default()
                }),
            };
            let reply = client.unprepare(req).await?.into_inner();
            render::unprepared(&uid, &reply, json)
        }
    };
    Ok(text)
}

/// Class configs first, then claim configs, as the DRA plugin sends them.
fn opaque_configs(class: &[String], claim: &[String]) -> anyhow::Result<Vec<pb::OpaqueConfig>> {
    let entry = |text: &String, source: pb::ConfigSource| {
        Ok(pb::OpaqueConfig {
            source: source.into(),
            requests: vec![],
            parameters_json: json_or_file(text)?,
        })
    };
    class
        .iter()
        .map(|t| entry(t, pb::ConfigSource::Class))
        .chain(claim.iter().map(|t| entry(t, pb::ConfigSource::Claim)))
        .collect()
}

/// The text itself, or the contents of the file after an `@`.
fn json_or_file(text: &str) -> anyhow::Result<String> {
    match text.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("cannot read config file {path}"))
        }
        None => Ok(text.to_owned()),
    }
}
