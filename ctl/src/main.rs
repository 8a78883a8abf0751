//! gpuslicectl: the operator's CLI for gpusliced, over the same API socket.
//!
//! Human output is aligned tables; `--output json` prints one JSON document.
//! The socket is `--socket`, else `GPUSLICE_SOCKET`, else the packaged path
//! (`flags`); a failed dial says why and what to do (`connect`).
//!
//! Exit status: 0 on success; 1 when gpusliced cannot be reached or refuses
//! the call; 2 on a usage error; 3 ([`ATTENTION`]) from `status` while it
//! lists a problem or a warning, and from `health` while a device is
//! unhealthy (their output is the same as with 0). `match`, `sim exec` and
//! `claims --cluster` have their own (see each).

mod activity_render;
mod advise;
mod cluster;
mod compute_domains;
mod connect;
#[cfg(test)]
mod fixture;
mod flags;
mod gpus;
mod health;
mod match_notes;
mod match_render;
mod match_verdict;
mod matching;
mod mig_map;
mod prepare;
mod render;
mod sharing;
mod sim_exec;
mod sim_follow;
mod top;
mod top_render;
mod units;
mod watch;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use gpuslice_cli::{Generate, VERSION};
use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use tonic::transport::Channel;

use self::flags::{Conn, Out, Output};

/// The exit status of `status` and `health` while something needs an
/// operator: a problem or warning open, a device unhealthy.
pub const ATTENTION: u8 = 3;

/// Operator CLI for gpusliced.
///
/// gpuslicectl talks to gpusliced over its API socket: daemon health, the
/// GPU inventory, prepared claims with their sharing and health, per-claim
/// GPU use (top, claims --idle), the MIG layout, how each GPU is shared,
/// device health, preparing or unpreparing a claim by hand (what the DRA
/// plugin does for the kubelet), checking a DRA CEL selector against this
/// node's devices, and, on the simulated backend, fake GPU processes. Root
/// and members of the socket's group (gpuslice, packaged) may call it.
#[derive(Debug, Parser)]
#[command(
    name = "gpuslicectl",
    version = VERSION,
    override_usage = "gpuslicectl [OPTIONS] <COMMAND>",
    after_help = "--socket and --output may also be given before the command. \
                  Exit status: 0 ok; 1 gpusliced cannot be reached or refuses; 2 usage; \
                  3 status or health finds something to act on. claims --cluster: 2 when \
                  the API server cannot be read."
)]
struct Args {
    #[command(flatten)]
    conn: Conn,
    #[command(flatten)]
    out: Out,
    /// Write the man page or a shell completion to stdout (packaging).
    #[arg(long, hide = true, value_enum, value_name = "KIND", exclusive = true)]
    generate: Option<Generate>,
    #[command(subcommand)]
    command: Option<Command>,
}

/// The commands, in the order an operator looks: the daemon, its devices,
/// its claims and their use, how GPUs are cut and shared, their health;
/// then the actions (prepare, unprepare), the selector check, and the
/// simulator's tool.
#[derive(Debug, Subcommand)]
enum Command {
    /// Daemon health, versions and counts; exit status 3 while it lists a
    /// problem or a warning.
    Status {
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Every device with its attributes and holders.
    Inventory {
        /// Print it again at each change, until gpusliced stops.
        #[arg(long)]
        watch: bool,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Per GPU, what it has and what gpuslice offers on it: MIG (the
    /// model's profiles), MPS and its client limits, time-slice intervals,
    /// NVLink links and the multi-node fabric clique.
    Gpus {
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Every prepared claim; with --idle, the claims without GPU activity
    /// for at least that long (exit status 0 whether any is found or not);
    /// with --cluster, every claim's devices across all nodes, from the
    /// API server.
    Claims {
        /// Only claims idle this long or longer, e.g. 30m, 2h, 1d, 1h30m.
        #[arg(long, value_parser = units::parse_duration, value_name = "DURATION")]
        idle: Option<u64>,
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Per-claim GPU use, live: memory, SM utilization, processes, last
    /// activity, unclaimed processes and warnings. Redraws in place on a
    /// terminal (q quits); prints once when piped or with --once.
    Top {
        #[command(flatten)]
        top: top::TopArgs,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Right-sizing advice per claim and device, from its observed use: the
    /// smallest MIG slice, MPS share or time-slice it fits with headroom,
    /// give it back, keep, or too little seen yet. --output yaml prints a
    /// ResourceClaimTemplate per advice, each checked first against this
    /// node's published devices (exit status 1 when one would not allocate).
    Advise {
        #[command(flatten)]
        advise: advise::AdviseArgs,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Per GPU, the map of MIG slices: which profile and claim hold which slices.
    Mig {
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Per GPU, how it is shared: mode, time-slice, MPS daemons, claims, memory.
    Sharing {
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// The ComputeDomains with a channel on this node: the node's NVLink
    /// clique and rack network, each domain's IMEX daemon (state, pid,
    /// restarts, READY), its members, whether it knows and reaches them, and
    /// its channel claims.
    Domains {
        #[command(subcommand)]
        action: Option<DomainsAction>,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Unhealthy devices (XIDs, ECC errors, lost GPUs) with the claims on
    /// them; exit status 3 while a device is unhealthy.
    Health {
        #[command(subcommand)]
        action: Option<HealthAction>,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Prepare a claim by hand (what the DRA plugin does for the kubelet).
    Prepare {
        #[command(flatten)]
        claim: prepare::PrepareArgs,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Unprepare a claim.
    Unprepare {
        /// Claim uid.
        #[arg(long)]
        uid: String,
        /// The claim's driver: gpuslice's GPUs (the default), or
        /// compute-domain.nvidia.com for an IMEX channel.
        #[arg(long, default_value = prepare::GPU_DRIVER)]
        driver: String,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// Check a DRA CEL selector (an expression, --class NAME, or -f FILE with
    /// DeviceClasses/ResourceClaims) against this node's devices as the DRA
    /// plugin publishes them, with Kubernetes' CEL rules: which devices match,
    /// the clause that failed on the others, and the common mistakes; with
    /// -f, whether each claim can be allocated now and on an empty node.
    /// Exit status: 0 every target matches a device and every claim can be
    /// allocated now, 1 one matches none, a device raised an evaluation error
    /// or a claim cannot be allocated now, 2 invalid selector or input.
    Match {
        #[command(flatten)]
        selector: matching::MatchArgs,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
    /// The simulated backend's fake GPU processes (demos and tests).
    Sim {
        #[command(subcommand)]
        action: SimAction,
    },
}

#[derive(Debug, Subcommand)]
enum SimAction {
    /// Run CMD with a claim's CDI environment as a fake GPU process on one
    /// of the claim's devices, using --memory and --sm; exits with CMD's
    /// status. Needs `[backend] kind = "sim"`.
    Exec {
        #[command(flatten)]
        exec: sim_exec::SimExecArgs,
        #[command(flatten)]
        conn: Conn,
    },
}

#[derive(Debug, Subcommand)]
enum HealthAction {
    /// Mark a device healthy again after fixing it (GPU reset, reboot): an XID
    /// or ECC fault never clears by itself. A GPU clears with its slices.
    Clear {
        /// The device, by inventory name (e.g. gpu-0).
        device: String,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum DomainsAction {
    /// Tell a domain's IMEX daemon its members by hand (what the DRA plugin
    /// does from the ComputeDomain's status): each INDEX=ADDRESS of the
    /// node's clique, this node among them. The daemon is told with SIGUSR1,
    /// never restarted; members outside [imex] rack_network are skipped.
    Members {
        /// The ComputeDomain's uid.
        domain: String,
        /// The members, e.g. 0=10.0.0.11 1=10.0.0.12.
        #[arg(value_name = "INDEX=ADDRESS")]
        members: Vec<String>,
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        out: Out,
    },
}

impl Command {
    /// The command's own `--socket` and `--output` (values given there, or
    /// from `GPUSLICE_SOCKET` and the defaults).
    fn flags(&self) -> (&Conn, Option<&Out>) {
        match self {
            Command::Status { conn, out }
            | Command::Inventory { conn, out, .. }
            | Command::Gpus { conn, out }
            | Command::Claims { conn, out, .. }
            | Command::Top { conn, out, .. }
            | Command::Advise { conn, out, .. }
            | Command::Mig { conn, out }
            | Command::Sharing { conn, out }
            | Command::Domains {
                action: None,
                conn,
                out,
            }
            | Command::Domains {
                action: Some(DomainsAction::Members { conn, out, .. }),
                ..
            }
            | Command::Health {
                action: None,
                conn,
                out,
            }
            | Command::Health {
                action: Some(HealthAction::Clear { conn, out, .. }),
                ..
            }
            | Command::Prepare { conn, out, .. }
            | Command::Unprepare { conn, out, .. }
            | Command::Match { conn, out, .. } => (conn, Some(out)),
            Command::Sim {
                action: SimAction::Exec { conn, .. },
            } => (conn, None),
        }
    }
}

/// The man page's own sections (gpuslice_cli::man_page).
const MAN: &str = include_str!("../../packaging/man/gpuslicectl.roff");

fn main() -> ExitCode {
    let matches = Args::command().get_matches();
    let args = match Args::from_arg_matches(&matches) {
        Ok(args) => args,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(2);
        }
    };
    if let Some(kind) = args.generate {
        return generate(kind);
    }
    let given = match flags::given(&matches) {
        Ok(given) => given,
        Err(err) => {
            eprintln!("gpuslicectl: {err}");
            return ExitCode::from(2);
        }
    };
    let Some(command) = args.command else {
        // Optional in the definition only so that --generate stands alone.
        let err = Args::command().error(
            clap::error::ErrorKind::MissingSubcommand,
            "a command is required (gpuslicectl status, gpuslicectl --help)",
        );
        let _ = err.print();
        return ExitCode::from(2);
    };
    let (conn, out) = command.flags();
    let socket_given = given.socket.is_some();
    let socket = given.socket.unwrap_or_else(|| conn.socket.clone());
    let output = given.output.or(out.map(|o| o.output));
    if output == Some(Output::Yaml) && !matches!(command, Command::Advise { .. }) {
        eprintln!("gpuslicectl: --output yaml applies to `advise` only; use table or json");
        return ExitCode::from(2);
    }
    let json = output == Some(Output::Json);
    let yaml = output == Some(Output::Yaml);
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
    if let Command::Claims { idle, cluster, .. } = &command
        && cluster.cluster
    {
        return cluster::main(&runtime, cluster.clone(), *idle, socket_given, json);
    }
    if let Command::Match { selector, .. } = command {
        return match runtime.block_on(matching::run(socket, selector, json)) {
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
        action: SimAction::Exec { exec, .. },
    } = command
    {
        let ran = runtime.block_on(async {
            let client = connect(socket).await?;
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
    match runtime.block_on(run(command, socket, json, yaml)) {
        Ok((text, code)) => {
            print!("{text}");
            ExitCode::from(code)
        }
        Err(err) => {
            report(&err, "");
            ExitCode::FAILURE
        }
    }
}

fn generate(kind: Generate) -> ExitCode {
    match gpuslice_cli::generate(kind, Args::command(), MAN, &mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("gpuslicectl: cannot write {kind:?}: {err}");
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

/// A client of gpusliced at `socket`; the error says what to do.
pub(crate) async fn connect(socket: std::path::PathBuf) -> anyhow::Result<GpuSliceClient<Channel>> {
    Ok(connect::connect(&socket).await?)
}

/// Runs `command` against gpusliced at `socket`; returns what to print and
/// the exit status (status and health: [`ATTENTION`] when they list
/// something to act on).
async fn run(
    command: Command,
    socket: std::path::PathBuf,
    json: bool,
    yaml: bool,
) -> anyhow::Result<(String, u8)> {
    let mut client = connect(socket).await?;
    let attention = |needs: bool| if needs { ATTENTION } else { 0 };
    match command {
        Command::Status { .. } => {
            let reply = client
                .get_status(pb::GetStatusRequest {})
                .await?
                .into_inner();
            let code = attention(render::needs_attention(&reply));
            Ok((render::status(&reply, json), code))
        }
        Command::Health { action: None, .. } => {
            let reply = client
                .get_health(pb::GetHealthRequest {})
                .await?
                .into_inner();
            let code = attention(health::needs_attention(&reply));
            Ok((health::render(&reply, json), code))
        }
        Command::Advise { advise, .. } => {
            let format = match (json, yaml) {
                (true, _) => advise::Format::Json,
                (_, true) => advise::Format::Yaml,
                _ => advise::Format::Table,
            };
            advise::run(&mut client, &advise, format).await
        }
        command => Ok((show(&mut client, command, json).await?, 0)),
    }
}

/// Runs a command whose exit status is 0 when it succeeds; returns what to
/// print.
async fn show(
    client: &mut GpuSliceClient<Channel>,
    command: Command,
    json: bool,
) -> anyhow::Result<String> {
    let text = match command {
        Command::Inventory { watch: true, .. } => {
            watch::inventory(client, json).await?;
            String::new()
        }
        Command::Inventory { watch: false, .. } => {
            let reply = client
                .get_inventory(pb::GetInventoryRequest {})
                .await?
                .into_inner();
            render::inventory(&reply, json)
        }
        Command::Gpus { .. } => {
            let reply = client
                .get_inventory(pb::GetInventoryRequest {})
                .await?
                .into_inner();
            gpus::render(&reply, json)
        }
        Command::Mig { .. } => {
            let reply = client
                .get_mig_layout(pb::GetMigLayoutRequest {})
                .await?
                .into_inner();
            mig_map::render(&reply, json)
        }
        Command::Health {
            action: Some(HealthAction::Clear { device, .. }),
            ..
        } => {
            let req = pb::ClearHealthRequest {
                device: device.clone(),
            };
            let reply = client.clear_health(req).await?.into_inner();
            health::cleared(&device, &reply, json)
        }
        Command::Sharing { .. } => {
            let reply = client
                .get_sharing(pb::GetSharingRequest {})
                .await?
                .into_inner();
            sharing::render(&reply, json)
        }
        Command::Domains { action, .. } => {
            compute_domains::run(client, action.as_ref(), json).await?
        }
        Command::Claims { idle: None, .. } => {
            let reply = client
                .list_claims(pb::ListClaimsRequest {})
                .await?
                .into_inner();
            render::claims(&reply, json)
        }
        Command::Claims {
            idle: Some(idle), ..
        } => {
            let reply = client
                .get_activity(pb::GetActivityRequest { fresh: true })
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
        Command::Top { top, .. } => top::run(client, top, json).await?,
        Command::Prepare { claim, .. } => prepare::run(client, claim, json).await?,
        Command::Unprepare { uid, driver, .. } => {
            let req = pb::UnprepareRequest {
                claim: Some(pb::ClaimRef {
                    uid: uid.clone(),
                    ..Default::default()
                }),
            };
            let reply = if prepare::is_channel_driver(&driver)? {
                client.unprepare_channel(req).await?.into_inner()
            } else {
                client.unprepare(req).await?.into_inner()
            };
            render::unprepared(&uid, &reply, json)
        }
        Command::Match { .. } => anyhow::bail!("match is run by main"),
        Command::Sim { .. } => anyhow::bail!("sim exec is run by main"),
        Command::Status { .. } | Command::Health { action: None, .. } | Command::Advise { .. } => {
            anyhow::bail!("status, health and advise are run by run")
        }
    };
    Ok(text)
}
