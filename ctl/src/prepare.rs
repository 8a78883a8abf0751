//! `gpuslicectl prepare`: a claim prepared by hand, sent as the DRA plugin
//! sends the kubelet's: class configs first, then claim configs, each JSON
//! given inline or as `@FILE`.

use anyhow::Context;
use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use tonic::transport::Channel;

use crate::render;

/// The driver of gpuslice's GPUs, as the DRA plugin registers it by default.
pub const GPU_DRIVER: &str = "gpu.nvidia.com";

/// The driver of ComputeDomains' IMEX channels.
pub const CHANNEL_DRIVER: &str = "compute-domain.nvidia.com";

/// Whether `driver` names the channel driver; an error for a driver that is
/// neither.
pub fn is_channel_driver(driver: &str) -> anyhow::Result<bool> {
    match driver {
        CHANNEL_DRIVER => Ok(true),
        GPU_DRIVER => Ok(false),
        other => anyhow::bail!(
            "--driver {other:?}: gpusliced prepares claims of {GPU_DRIVER} (GPUs, the \
             default) and {CHANNEL_DRIVER} (IMEX channels)"
        ),
    }
}

/// What `prepare` sends.
#[derive(Debug, clap::Args)]
pub struct PrepareArgs {
    /// Claim uid (a UUID).
    #[arg(long)]
    pub uid: String,
    /// Claim namespace.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// Claim name.
    #[arg(long, default_value = "manual")]
    pub name: String,
    /// Device to allocate, by inventory name; repeat for several.
    #[arg(long = "device", required = true)]
    pub devices: Vec<String>,
    /// Request name the devices satisfy.
    #[arg(long, default_value = "gpu")]
    pub request: String,
    /// Opaque config from the claim (JSON object, or @FILE), applying to
    /// every request; repeat for several, later ones win.
    #[arg(long = "config", alias = "config-json", value_name = "JSON_OR_@FILE")]
    pub configs: Vec<String>,
    /// Opaque config from the DeviceClass (JSON object, or @FILE); claim
    /// configs win over these.
    #[arg(long = "class-config", value_name = "JSON_OR_@FILE")]
    pub class_configs: Vec<String>,
    /// The claim's driver: gpuslice's GPUs (the default), or
    /// compute-domain.nvidia.com for an IMEX channel (`--device
    /// channel-<id>` with its ComputeDomainChannelConfig).
    #[arg(long, default_value = GPU_DRIVER)]
    pub driver: String,
    /// With `--driver compute-domain.nvidia.com`: the name of the
    /// ComputeDomain (in the claim's namespace) you vouch the claim's
    /// ComputeDomainChannelConfig names, as the DRA plugin does after
    /// reading it from the API server.
    #[arg(long, value_name = "NAME")]
    pub compute_domain: Option<String>,
}

/// `prepare`: the claim as the DRA plugin would send it.
pub async fn run(
    client: &mut GpuSliceClient<Channel>,
    claim: PrepareArgs,
    json: bool,
) -> anyhow::Result<String> {
    let PrepareArgs {
        uid,
        namespace,
        name,
        devices,
        request,
        configs,
        class_configs,
        driver,
        compute_domain,
    } = claim;
    let channel = is_channel_driver(&driver)?;
    let configs = opaque_configs(&class_configs, &configs)?;
    let vouched = match (channel, compute_domain) {
        (true, Some(domain)) => Some(pb::ComputeDomainRef {
            namespace: namespace.clone(),
            name: domain,
            uid: domain_id(&configs)?,
        }),
        (true, None) => anyhow::bail!(
            "--driver {CHANNEL_DRIVER} needs --compute-domain NAME: the ComputeDomain of the \
             claim's namespace you vouch its ComputeDomainChannelConfig names"
        ),
        (false, Some(_)) => anyhow::bail!("--compute-domain is for --driver {CHANNEL_DRIVER}"),
        (false, None) => None,
    };
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
    let reply = if channel {
        let req = pb::PrepareChannelRequest {
            claim: Some(req),
            domain: vouched,
        };
        client.prepare_channel(req).await?.into_inner()
    } else {
        client.prepare(req).await?.into_inner()
    };
    Ok(render::prepared(&uid, &reply, json))
}

/// The domainID of the last ComputeDomainChannelConfig among `configs`.
fn domain_id(configs: &[pb::OpaqueConfig]) -> anyhow::Result<String> {
    configs
        .iter()
        .rev()
        .filter_map(|c| serde_json::from_str::<serde_json::Value>(&c.parameters_json).ok())
        .find(|v| v["kind"] == "ComputeDomainChannelConfig")
        .and_then(|v| v["domainID"].as_str().map(str::to_owned))
        .context(
            "no --config is a ComputeDomainChannelConfig with a domainID: a channel claim names \
             its ComputeDomain's uid there",
        )
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
