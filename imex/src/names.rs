//! The names IMEX daemons know each other by, as NVIDIA's compute-domain
//! daemon gives them with its `IMEXDaemonsWithDNSNames` feature (on by
//! default; cmd/compute-domain-daemon/dnsnames.go, vendored in
//! third_party/dra-driver-nvidia-gpu/daemon-dnsnames.go):
//!
//! - the **nodes config** lists one name per index a member of a clique may
//!   hold, `compute-domain-daemon-0000` to `compute-domain-daemon-0017`, and
//!   is written once: it never changes while the daemon runs;
//! - a private **hosts** file maps the names of the members there are to
//!   their addresses; when members come and go only it changes, and the
//!   daemon re-resolves the names on SIGUSR1 without restarting (a restart
//!   would end what other nodes imported from it). Every index nobody holds
//!   is mapped too, to [`UNUSED`], as NVIDIA's daemon came to do: a name
//!   the hosts file lacks goes on to DNS, where a lookup of a name nobody
//!   serves can stall the daemon for seconds.
//!
//! Pure: the names and the files' text, and the mapping read back from a
//! hosts file.

use std::collections::BTreeMap;
use std::net::IpAddr;

/// The most nodes one IMEX domain takes (NVIDIA's default
/// `maxNodesPerIMEXDomain`: the 18 compute trays of an NVL72 rack); indices
/// run from 0 to one less.
pub const MAX_NODES_PER_CLIQUE: u32 = 18;

/// The prefix of every member's name (NVIDIA's `dnsNamePrefix`).
pub const NAME_PREFIX: &str = "compute-domain-daemon-";

/// The name of the member holding `index`: the prefix and the index in
/// four digits (NVIDIA's `dnsNameFormat`).
pub fn member_name(index: u32) -> String {
    format!("{NAME_PREFIX}{index:04}")
}

/// The index a member's name stands for, when it is one.
pub fn member_index(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(NAME_PREFIX)?;
    let index: u32 = digits.parse().ok()?;
    (member_name(index) == name && index < MAX_NODES_PER_CLIQUE).then_some(index)
}

/// The nodes config: every name of a clique, one a line, in index order.
pub fn nodes_config() -> String {
    (0..MAX_NODES_PER_CLIQUE)
        .map(|i| format!("{}\n", member_name(i)))
        .collect()
}

/// Where the name of an index nobody holds points: a loopback address no
/// daemon listens on, so a connection to it fails at once.
pub const UNUSED: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

/// The members a daemon's names resolve to: address by index.
pub type Mapping = BTreeMap<u32, IpAddr>;

/// The first lines of every hosts file: what a process expects of
/// /etc/hosts besides the members.
const HOSTS_HEAD: &str = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";

/// The hosts file of a daemon whose clique's members are `mapping`, one
/// line per member in index order.
pub fn hosts_file(domain: &str, mapping: &Mapping) -> String {
    let mut text = format!(
        "# The IMEX names of ComputeDomain {domain}'s members, written by gpusliced;\n\
         # its IMEX daemon reads this as /etc/hosts.\n{HOSTS_HEAD}"
    );
    for index in 0..MAX_NODES_PER_CLIQUE {
        let address = mapping.get(&index).copied().unwrap_or(UNUSED);
        text.push_str(&format!("{address}\t{}\n", member_name(index)));
    }
    text
}

/// The mapping a hosts file holds: its lines naming a member, the last one
/// of an index winning; indices mapped to [`UNUSED`], and anything else,
/// are left out.
pub fn mapping_of_hosts(text: &str) -> Mapping {
    let mut mapping = Mapping::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(address) = words.next().and_then(|a| a.parse::<IpAddr>().ok()) else {
            continue;
        };
        if address == UNUSED {
            continue;
        }
        for name in words {
            if let Some(index) = member_index(name) {
                mapping.insert(index, address);
            }
        }
    }
    mapping
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_nvidia_s_four_digit_indices() {
        assert_eq!(member_name(0), "compute-domain-daemon-0000");
        assert_eq!(member_name(17), "compute-domain-daemon-0017");
        assert_eq!(member_index("compute-domain-daemon-0017"), Some(17));
        for other in [
            "compute-domain-daemon-18",
            "compute-domain-daemon-0018",
            "compute-domain-daemon-017",
            "compute-domain-daemon-+017",
            "node-0001",
            "",
        ] {
            assert_eq!(member_index(other), None, "{other}");
        }
    }

    #[test]
    fn the_nodes_config_names_every_index_once() {
        let text = nodes_config();
        let names: Vec<&str> = text.lines().collect();
        assert_eq!(names.len(), 18);
        assert_eq!(names[0], "compute-domain-daemon-0000");
        assert_eq!(names[17], "compute-domain-daemon-0017");
    }

    #[test]
    fn a_hosts_file_reads_back_as_its_mapping() {
        let mapping = Mapping::from([
            (0, "10.1.0.7".parse().expect("ip")),
            (3, "10.1.0.9".parse().expect("ip")),
            (4, "fd00::4".parse().expect("ip")),
        ]);
        let text = hosts_file("d", &mapping);
        assert!(
            text.contains("10.1.0.9\tcompute-domain-daemon-0003\n"),
            "{text}"
        );
        assert!(text.contains("127.0.0.1\tlocalhost\n"), "{text}");
        assert!(
            text.contains("127.0.0.2\tcompute-domain-daemon-0001\n"),
            "an index nobody holds points nowhere, not to DNS: {text}"
        );
        assert_eq!(text.lines().filter(|l| l.contains(NAME_PREFIX)).count(), 18);
        assert_eq!(mapping_of_hosts(&text), mapping);
        assert_eq!(
            mapping_of_hosts("garbage\n1.2.3.4 other-name\n"),
            Mapping::new()
        );
    }
}
