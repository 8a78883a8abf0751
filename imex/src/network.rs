//! The rack network: the IP networks an IMEX daemon may bind and reach
//! (`[imex] rack_network`). gpusliced admits a member's address only inside
//! it, and the IMEX daemon's systemd unit allows traffic only to it
//! (`IPAddressAllow=`), so an address another node wrote into a
//! ComputeDomain's status cannot point a daemon anywhere else.
//!
//! A network that would take in the host's own loopback or link-local
//! space, or the unspecified address (`0.0.0.0/0`, say), is refused: those
//! are admitted only by a network that lies wholly inside them, written on
//! purpose (`127.0.0.0/8` for nodes that share one host, as the tests').
//! The unspecified and multicast addresses are never members.
//!
//! Pure.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// One network, `address/prefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    address: IpAddr,
    prefix: u8,
}

/// A network or address that is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    /// Not `address/prefix`.
    #[error("{0:?} is not a network: write address/prefix, e.g. \"10.0.0.0/16\"")]
    NotANetwork(String),
    /// The network would take in loopback, link-local or unspecified space.
    #[error(
        "{network} takes in {what} addresses: a rack network holds the nodes' addresses on the \
         NVLink rack's network only; write that network (a loopback or link-local one only if \
         it lies wholly inside that space, e.g. \"127.0.0.0/8\")"
    )]
    TooWide {
        /// The network.
        network: Network,
        /// Which space it takes in.
        what: &'static str,
    },
    /// The address may never be a member.
    #[error("{address} is the {what} address, never a node's")]
    NeverMember {
        /// The address.
        address: IpAddr,
        /// Which kind it is.
        what: &'static str,
    },
    /// The address lies outside every network.
    #[error("{address} lies outside [imex] rack_network ({networks})")]
    Outside {
        /// The address.
        address: IpAddr,
        /// The networks, comma-separated.
        networks: String,
    },
}

impl Network {
    const fn v4(octets: [u8; 4], prefix: u8) -> Self {
        Self {
            address: IpAddr::V4(Ipv4Addr::new(octets[0], octets[1], octets[2], octets[3])),
            prefix,
        }
    }

    const fn v6(address: Ipv6Addr, prefix: u8) -> Self {
        Self {
            address: IpAddr::V6(address),
            prefix,
        }
    }

    fn bits(&self) -> u8 {
        match self.address {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        }
    }

    /// Whether `ip` lies inside.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let shift = u32::from(self.bits() - self.prefix);
        match (self.address, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let (net, ip) = (u32::from(net), u32::from(ip));
                net.checked_shr(shift).unwrap_or(0) == ip.checked_shr(shift).unwrap_or(0)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let (net, ip) = (u128::from(net), u128::from(ip));
                net.checked_shr(shift).unwrap_or(0) == ip.checked_shr(shift).unwrap_or(0)
            }
            _ => false,
        }
    }

    /// Whether every address of `self` lies inside `other`.
    fn within(&self, other: &Network) -> bool {
        self.prefix >= other.prefix && other.contains(self.address)
    }

    /// Whether the two share an address.
    fn overlaps(&self, other: &Network) -> bool {
        self.contains(other.address) || other.contains(self.address)
    }

    /// The address and prefix, as systemd's `IPAddressAllow=` takes them.
    pub fn parts(&self) -> (IpAddr, u8) {
        (self.address, self.prefix)
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

impl FromStr for Network {
    type Err = NetworkError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || NetworkError::NotANetwork(text.chars().take(80).collect());
        let (address, prefix) = text.split_once('/').ok_or_else(bad)?;
        let address: IpAddr = address.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        let network = Self { address, prefix };
        let written = text.split_once('/').map_or("", |(_, p)| p);
        if prefix > network.bits() || prefix.to_string() != written {
            return Err(bad());
        }
        Ok(network)
    }
}

/// The spaces a rack network may take in only on purpose, with their names.
const SPECIAL_SPACES: [(Network, &str); 5] = [
    (Network::v4([127, 0, 0, 0], 8), "loopback"),
    (Network::v4([169, 254, 0, 0], 16), "link-local"),
    (Network::v4([0, 0, 0, 0], 32), "unspecified"),
    (Network::v6(Ipv6Addr::LOCALHOST, 128), "loopback"),
    (
        Network::v6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10),
        "link-local",
    ),
];

/// `[imex] rack_network`: the networks, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RackNetwork {
    networks: Vec<Network>,
}

impl RackNetwork {
    /// The networks of `texts`, refusing any that takes in loopback,
    /// link-local or unspecified space without lying wholly inside it.
    pub fn parse(texts: &[String]) -> Result<Self, NetworkError> {
        let mut networks = Vec::new();
        for text in texts {
            let network: Network = text.trim().parse()?;
            for (space, what) in SPECIAL_SPACES {
                let on_purpose = what != "unspecified" && network.within(&space);
                if network.overlaps(&space) && !on_purpose {
                    return Err(NetworkError::TooWide { network, what });
                }
            }
            networks.push(network);
        }
        Ok(Self { networks })
    }

    /// The networks.
    pub fn networks(&self) -> &[Network] {
        &self.networks
    }

    /// Whether no network is set.
    pub fn is_empty(&self) -> bool {
        self.networks.is_empty()
    }

    /// Whether `address` may be a member's: inside a network, and neither
    /// unspecified nor multicast.
    pub fn admit(&self, address: IpAddr) -> Result<(), NetworkError> {
        if address.is_unspecified() {
            return Err(NetworkError::NeverMember {
                address,
                what: "unspecified",
            });
        }
        if address.is_multicast() || address == IpAddr::from([255, 255, 255, 255]) {
            return Err(NetworkError::NeverMember {
                address,
                what: "multicast or broadcast",
            });
        }
        if self.networks.iter().any(|n| n.contains(address)) {
            return Ok(());
        }
        Err(NetworkError::Outside {
            address,
            networks: self.to_string(),
        })
    }
}

impl fmt::Display for RackNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let texts: Vec<String> = self.networks.iter().map(Network::to_string).collect();
        if texts.is_empty() {
            f.write_str("none set")
        } else {
            f.write_str(&texts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rack(texts: &[&str]) -> Result<RackNetwork, NetworkError> {
        RackNetwork::parse(&texts.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>())
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("ip")
    }

    #[test]
    fn an_address_is_admitted_only_inside_the_networks() {
        let net = rack(&["10.1.0.0/16", "fd00:1::/64"]).expect("rack");
        assert_eq!(net.admit(ip("10.1.255.3")), Ok(()));
        assert_eq!(net.admit(ip("fd00:1::9")), Ok(()));
        for outside in [
            "10.2.0.1",
            "127.0.0.1",
            "169.254.1.1",
            "fd00:2::1",
            "8.8.8.8",
        ] {
            assert!(
                matches!(net.admit(ip(outside)), Err(NetworkError::Outside { .. })),
                "{outside}"
            );
        }
        assert!(matches!(
            net.admit(ip("0.0.0.0")),
            Err(NetworkError::NeverMember { .. })
        ));
        assert!(matches!(
            net.admit(ip("::")),
            Err(NetworkError::NeverMember { .. })
        ));
        assert!(matches!(
            rack(&["224.0.0.0/4"]).expect("rack").admit(ip("224.0.0.1")),
            Err(NetworkError::NeverMember { .. })
        ));
    }

    #[test]
    fn loopback_and_link_local_only_on_purpose() {
        let looped = rack(&["127.0.0.0/8"]).expect("loopback on purpose");
        assert_eq!(looped.admit(ip("127.0.0.41")), Ok(()));
        rack(&["127.0.0.40/30"]).expect("a loopback /30 is a rack network");
        rack(&["169.254.3.0/24"]).expect("a link-local /24 is a rack network");
        for wide in [
            "0.0.0.0/0",
            "0.0.0.0/1",
            "64.0.0.0/2",
            "::/0",
            "fe80::/9",
            "169.254.0.0/15",
        ] {
            assert!(
                matches!(rack(&[wide]), Err(NetworkError::TooWide { .. })),
                "{wide}"
            );
        }
    }

    #[test]
    fn a_network_is_written_exactly() {
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0.0/-1",
            "10.0.0.0/016",
            "x/8",
            "::/129",
            "",
        ] {
            assert!(
                matches!(rack(&[bad]), Err(NetworkError::NotANetwork(_))),
                "{bad}"
            );
        }
        let net: Network = "10.0.0.0/8".parse().expect("net");
        assert_eq!(net.to_string(), "10.0.0.0/8");
        assert_eq!(net.parts(), (ip("10.0.0.0"), 8));
        assert!(net.contains(ip("10.200.1.1")));
        assert!(!net.contains(ip("fd00::1")));
        let all: Network = "::/0".parse().expect("net");
        assert!(
            all.contains(ip("fd00::1")),
            "a /0 holds every address of its family"
        );
    }
}
