//! The claims of the crash-point workloads: their devices (whole GPUs, MIG
//! slices by the inventory's names, IMEX channels), their configs, and how
//! each is prepared and unprepared: `Prepare`/`Unprepare` for a GPU claim,
//! `PrepareChannel`/`UnprepareChannel` for a channel claim of a
//! ComputeDomain, which names the domain in its
//! `ComputeDomainChannelConfig` and is vouched for as the plugin vouches
//! (the domain's namespace is the claim's).

use std::collections::BTreeMap;

use gpuslice_proto::gpuslice::v1 as pb;

use crate::common::devices::text_attr;
use crate::common::queries::Queries;
use crate::crash_node::Gpusliced;
use crate::harness::unprepare_request;
use crate::stand_ins::shared_request;

/// A device of a claim.
#[derive(Debug, Clone, Copy)]
pub enum Dev {
    /// `gpu-<n>`.
    Gpu(usize),
    /// The `nth` slice of `profile` that the inventory offers on GPU `gpu`.
    Slice {
        gpu: usize,
        profile: &'static str,
        nth: usize,
    },
    /// `channel-<n>`, an IMEX channel of the claim's ComputeDomain.
    Channel(u32),
}

/// A claim of a workload.
#[derive(Debug)]
pub struct Claim {
    pub uid: &'static str,
    pub devices: Vec<Dev>,
    pub configs: Vec<String>,
    /// The uid of its ComputeDomain: a channel claim.
    pub domain: Option<&'static str>,
}

impl Claim {
    fn request(&self, names: &Names) -> pb::PrepareRequest {
        let devices: Vec<String> = self.devices.iter().map(|d| names.of(*d)).collect();
        let devices: Vec<&str> = devices.iter().map(String::as_str).collect();
        shared_request(self.uid, &devices, &self.configs)
    }

    /// Prepares it (a channel claim through `PrepareChannel`, its domain
    /// vouched for in the claim's namespace).
    pub async fn prepare(
        &self,
        daemon: &Gpusliced,
        names: &Names,
    ) -> Result<pb::PrepareResponse, tonic::Status> {
        let request = self.request(names);
        let mut client = daemon.client().await;
        let reply = match self.domain {
            None => client.prepare(request).await,
            Some(uid) => {
                let namespace = request
                    .claim
                    .as_ref()
                    .map(|c| c.namespace.clone())
                    .unwrap_or_default();
                let domain = pb::ComputeDomainRef {
                    namespace,
                    name: DOMAIN_NAME.to_owned(),
                    uid: uid.to_owned(),
                };
                let request = pb::PrepareChannelRequest {
                    claim: Some(request),
                    domain: Some(domain),
                };
                client.prepare_channel(request).await
            }
        };
        reply.map(tonic::Response::into_inner)
    }

    /// Unprepares it.
    pub async fn unprepare(&self, daemon: &Gpusliced) -> Result<(), tonic::Status> {
        let request = unprepare_request(self.uid);
        let mut client = daemon.client().await;
        match self.domain {
            None => client.unprepare(request).await.map(drop),
            Some(_) => client.unprepare_channel(request).await.map(drop),
        }
    }
}

/// Names that only a running daemon tells: GPU uuids by index, slice names.
#[derive(Debug, Clone, Default)]
pub struct Names {
    pub uuids: Vec<String>,
    slices: BTreeMap<(usize, String, usize), String>,
}

impl Names {
    fn of(&self, dev: Dev) -> String {
        match dev {
            Dev::Gpu(n) => format!("gpu-{n}"),
            Dev::Channel(n) => format!("channel-{n}"),
            Dev::Slice { gpu, profile, nth } => self
                .slices
                .get(&(gpu, profile.to_owned(), nth))
                .cloned()
                .unwrap_or_else(|| panic!("no {profile} slice #{nth} on gpu-{gpu}")),
        }
    }

    pub async fn resolve(&mut self, daemon: &Gpusliced) {
        let inventory = daemon.client().await.inventory().await;
        let mut gpus: Vec<(usize, String)> = Vec::new();
        let mut slices: BTreeMap<(usize, String), Vec<(u32, String)>> = BTreeMap::new();
        for d in &inventory.devices {
            let Some(rest) = d.name.strip_prefix("gpu-") else {
                continue;
            };
            if let Ok(n) = rest.parse::<usize>() {
                gpus.push((n, text_attr(d, "uuid").expect("a GPU's uuid")));
            } else if let Some((gpu, tail)) = rest.split_once("-mig-") {
                let start: u32 = tail
                    .rsplit('-')
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("start");
                let profile = text_attr(d, "profile").expect("a slice's profile");
                let gpu: usize = gpu.parse().expect("gpu index");
                slices
                    .entry((gpu, profile))
                    .or_default()
                    .push((start, d.name.clone()));
            }
        }
        gpus.sort();
        self.uuids = gpus.into_iter().map(|(_, uuid)| uuid).collect();
        for ((gpu, profile), mut found) in slices {
            found.sort();
            for (nth, (_, name)) in found.into_iter().enumerate() {
                self.slices.insert((gpu, profile.clone(), nth), name);
            }
        }
    }
}

/// A GPU claim.
pub fn claim(uid: &'static str, devices: Vec<Dev>, configs: Vec<String>) -> Claim {
    Claim {
        uid,
        devices,
        configs,
        domain: None,
    }
}

/// The name of the workloads' ComputeDomain (in the claims' namespace).
const DOMAIN_NAME: &str = "imex-domain";

/// A channel claim of `channel` of ComputeDomain `domain` (its uid).
pub fn channel_claim(uid: &'static str, channel: u32, domain: &'static str) -> Claim {
    let config = format!(
        r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"{domain}"}}"#
    );
    Claim {
        uid,
        devices: vec![Dev::Channel(channel)],
        configs: vec![config],
        domain: Some(domain),
    }
}
