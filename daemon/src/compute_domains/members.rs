//! The members of a domain, as the plugin reads them from the
//! ComputeDomain's status and sets them (`SetDomainMembers`): each one's
//! index and address, checked here (an index a clique has, an address in
//! the rack network that is no one's but a node's) and the rest skipped,
//! never refused whole: one bad entry another node wrote must not freeze
//! everybody's mapping. And what `ListDomains` shows of each domain, from
//! what its monitor last saw.

use std::net::IpAddr;

use gpuslice_imex::imex::Query;
use gpuslice_imex::names::{MAX_NODES_PER_CLIQUE, Mapping};
use gpuslice_imex::network::RackNetwork;

use super::DomainError;
use super::engine::Domains;
use super::monitor::Seen;
use super::request::check_uuid;

/// One member as the plugin sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its index in the clique.
    pub index: u32,
    /// Its address, as written in the status.
    pub address: String,
}

/// The members taken, and the ones skipped with why.
pub fn mapping_of(members: &[Member], rack: &RackNetwork) -> (Mapping, Vec<String>) {
    let mut mapping = Mapping::new();
    let mut skipped = Vec::new();
    for member in members {
        let why = if member.index >= MAX_NODES_PER_CLIQUE {
            Some(format!(
                "index {} is not below {MAX_NODES_PER_CLIQUE}",
                member.index
            ))
        } else {
            match member.address.parse::<IpAddr>() {
                Err(_) => Some(format!(
                    "{:?} is not an IP address",
                    shorten(&member.address)
                )),
                Ok(address) => match rack.admit(address) {
                    Err(err) => Some(err.to_string()),
                    Ok(()) if mapping.contains_key(&member.index) => {
                        Some("its index is given twice".to_owned())
                    }
                    Ok(()) if mapping.values().any(|a| *a == address) => {
                        Some("its address is given twice".to_owned())
                    }
                    Ok(()) => {
                        mapping.insert(member.index, address);
                        None
                    }
                },
            }
        };
        if let Some(why) = why {
            skipped.push(format!(
                "member {} at {:?}: {why}",
                member.index,
                shorten(&member.address)
            ));
        }
    }
    (mapping, skipped)
}

fn shorten(text: &str) -> String {
    text.chars().take(64).collect()
}

/// A domain the node is a member of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainStatus {
    /// The ComputeDomain's uid.
    pub domain: String,
    /// Its namespace (its claims') and name.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its channel claims here, namespace/name.
    pub claims: Vec<String>,
    /// What its monitor last saw of its daemon.
    pub seen: Seen,
}

impl Domains {
    /// Sets the members of a domain the node is a member of; whether the
    /// mapping changed, and the members skipped.
    pub fn set_members(
        &self,
        domain: &str,
        members: &[Member],
    ) -> Result<(bool, Vec<String>), DomainError> {
        check_uuid("domain", domain)?;
        let (mapping, skipped) = mapping_of(members, &self.settings.rack);
        for problem in &skipped {
            tracing::warn!(%domain, %problem, "ComputeDomain member skipped");
        }
        let held = self.lock();
        let (true, Some(running)) = (!held.members(domain).is_empty(), held.running.get(domain))
        else {
            return Err(DomainError::NotMember {
                domain: domain.to_owned(),
            });
        };
        let changed = running.set_mapping(&mapping)?;
        if changed {
            let text: Vec<String> = mapping.iter().map(|(i, a)| format!("{i}={a}")).collect();
            tracing::info!(%domain, members = %text.join(","), "IMEX members changed; the daemon is told, not restarted");
        }
        Ok((changed, skipped))
    }

    /// The domains the node is a member of, as their monitors last saw
    /// them.
    pub fn list(&self) -> Vec<DomainStatus> {
        let held = self.lock();
        held.running
            .iter()
            .map(|(domain, running)| {
                let claims = held.members(domain);
                let first = claims.first();
                DomainStatus {
                    domain: domain.clone(),
                    namespace: first.map(|r| r.namespace.clone()).unwrap_or_default(),
                    name: first.map(|r| r.domain_name.clone()).unwrap_or_default(),
                    claims: claims.iter().map(|r| r.claim_name()).collect(),
                    seen: running.seen(),
                }
            })
            .collect()
    }
}

impl DomainStatus {
    /// Whether its daemon reported READY.
    pub fn ready(&self) -> bool {
        self.seen.ready == Query::Ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(index: u32, address: &str) -> Member {
        Member {
            index,
            address: address.to_owned(),
        }
    }

    #[test]
    fn bad_members_are_skipped_with_why_and_the_rest_taken() {
        let rack = RackNetwork::parse(&["10.1.0.0/16".to_owned()]).expect("rack");
        let (mapping, skipped) = mapping_of(
            &[
                member(0, "10.1.0.1"),
                member(1, ""),
                member(2, "10.1.0.300"),
                member(3, "compute-domain-daemon-0000"),
                member(4, "8.8.8.8"),
                member(5, "127.0.0.1"),
                member(18, "10.1.0.9"),
                member(0, "10.1.0.2"),
                member(6, "10.1.0.1"),
                member(7, "0.0.0.0"),
                member(8, "10.1.0.8"),
            ],
            &rack,
        );
        assert_eq!(
            mapping,
            Mapping::from([
                (0, "10.1.0.1".parse().expect("ip")),
                (8, "10.1.0.8".parse().expect("ip")),
            ])
        );
        assert_eq!(skipped.len(), 9, "{skipped:#?}");
        assert!(
            skipped[3].contains("outside [imex] rack_network"),
            "{}",
            skipped[3]
        );
        assert!(skipped[5].contains("not below 18"), "{}", skipped[5]);
        assert!(
            skipped[6].contains("index is given twice"),
            "{}",
            skipped[6]
        );
        assert!(
            skipped[7].contains("address is given twice"),
            "{}",
            skipped[7]
        );
    }
}
