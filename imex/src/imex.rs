//! What a node's IMEX daemon is given and how its readiness is read, as
//! NVIDIA's compute-domain daemon does it (cmd/compute-domain-daemon/
//! main.go and templates/compute-domain-daemon-config.tmpl.cfg):
//!
//! - `nvidia-imex -c <config>`, the config NVIDIA's template renders: the
//!   same keys and values, with the peer connections bound to the node's
//!   address, the nodes config file named, and the command service on a
//!   unix socket (`IMEX_CMD_UNIX_DOMAIN_PATH`, a key of NVIDIA's template)
//!   so that `nvidia-imex-ctl`, run by gpusliced under its AF_UNIX-only
//!   sandbox, reaches it;
//! - the **nodes config** is the members' names ([`crate::names`]);
//! - readiness: `nvidia-imex-ctl -c <config> -q` printing exactly `READY`
//!   (the local daemon is ready, not the whole domain), and its connections:
//!   `nvidia-imex-ctl -c <config> -N`, the node's row of its table.
//!
//! Pure: the files' text and the commands' words; gpusliced writes and runs
//! them.

/// The IMEX daemon's program.
pub const DAEMON_PROGRAM: &str = "nvidia-imex";

/// The IMEX command-line client's program.
pub const CTL_PROGRAM: &str = "nvidia-imex-ctl";

/// The port of the daemons' connections to each other.
pub const SERVER_PORT: u16 = 50000;

/// The port of the command service `nvidia-imex-ctl` asks.
pub const CMD_PORT: u16 = 50005;

/// The keys of NVIDIA's template with its values, but the two it fills in
/// (`IMEX_NODE_CONFIG_FILE`, `IMEX_CMD_BIND_INTERFACE_IP`), in its order.
/// gpusliced also fills `BIND_INTERFACE_IP` (`[imex] bind_address`: the
/// node's own address on the rack network, so the daemon knows which name
/// is its own) and `IMEX_CMD_UNIX_DOMAIN_PATH`.
const FIXED: [(&str, &str); 31] = [
    ("LOG_LEVEL", "4"),
    ("LOG_FILE_NAME", ""),
    ("STATS_FILE_NAME", "/var/log/nvidia-imex-stats.log"),
    ("LOG_APPEND_TO_LOG", "0"),
    ("LOG_FILE_MAX_SIZE", "1024"),
    ("LOG_MAX_ROTATE_COUNT", "10"),
    ("LOG_USE_SYSLOG", "0"),
    ("DAEMONIZE", "0"),
    ("BIND_INTERFACE_IP", ""),
    ("SERVER_PORT", "50000"),
    ("NETWORK_INTERFACE", ""),
    ("IMEX_WAIT_FOR_QUORUM", "RECOVERY"),
    ("IMEX_ENABLE_AUTH_ENCRYPTION", "0"),
    ("IMEX_AUTH_ENCRYPTION_MODE", "SSL_TLS"),
    ("IMEX_AUTH_SOURCE", ""),
    ("IMEX_SERVER_KEY", ""),
    ("IMEX_SERVER_CERT", ""),
    ("IMEX_SERVER_CERT_AUTH", ""),
    ("IMEX_CLIENT_KEY", ""),
    ("IMEX_CLIENT_CERT", ""),
    ("IMEX_CLIENT_CERT_AUTH", ""),
    ("IMEX_SECURITY_TARGET_OVERRIDE", ""),
    ("IMEX_GSS_SERVICE_NAME", "host"),
    ("IMEX_GSS_TIMEOUT_SEC", "30"),
    ("IMEX_GSS_RETRY_INTERVAL_SEC", "5"),
    ("IMEX_GSS_SEC_CONTEXT_LIFETIME_SEC", "-1"),
    ("IMEX_GSS_SHUTDOWN_ON_FAILURE", "0"),
    ("IMEX_CMD_ENABLED", "1"),
    ("IMEX_CMD_PORT", "50005"),
    ("IMEX_CMD_UNIX_DOMAIN_PATH", ""),
    ("IMEX_NODE_DISCONNECTED_GRACE_TIME", "-1"),
];

/// Where the daemon's connections, command service and statistics are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonPlaces<'a> {
    /// `BIND_INTERFACE_IP`: the node's address on the rack network.
    pub bind_ip: &'a str,
    /// `IMEX_NODE_CONFIG_FILE`.
    pub nodes_config: &'a str,
    /// `IMEX_CMD_UNIX_DOMAIN_PATH`: the command service's unix socket.
    pub command_socket: &'a str,
    /// `STATS_FILE_NAME`: in the domain's folder (NVIDIA's
    /// `/var/log/nvidia-imex-stats.log` is read-only under the daemon's
    /// unit, and would be shared by every domain's daemon).
    pub stats_file: &'a str,
}

/// The command service's TCP address, unused by gpusliced (it asks over the
/// unix socket) and kept on loopback.
const CMD_BIND_IP: &str = "127.0.0.1";

/// The daemon's config: NVIDIA's keys and values, its places filled in.
pub fn daemon_config(places: &DaemonPlaces<'_>) -> String {
    let mut text =
        String::from("# Written by gpusliced for its ComputeDomain; read once at start.\n");
    for (key, value) in FIXED {
        let value = match key {
            "BIND_INTERFACE_IP" => places.bind_ip,
            "IMEX_CMD_UNIX_DOMAIN_PATH" => places.command_socket,
            "STATS_FILE_NAME" => places.stats_file,
            _ => value,
        };
        text.push_str(&format!("{key}={value}\n"));
        if key == "SERVER_PORT" {
            text.push_str(&format!("IMEX_NODE_CONFIG_FILE={}\n", places.nodes_config));
        }
        if key == "IMEX_CMD_ENABLED" {
            text.push_str(&format!("IMEX_CMD_BIND_INTERFACE_IP={CMD_BIND_IP}\n"));
        }
    }
    text
}

/// The daemon's command line.
pub fn daemon_command(config: &str) -> [String; 3] {
    [
        DAEMON_PROGRAM.to_owned(),
        "-c".to_owned(),
        config.to_owned(),
    ]
}

/// The connections query's command line.
pub fn table_command(config: &str) -> [String; 4] {
    [
        CTL_PROGRAM.to_owned(),
        "-c".to_owned(),
        config.to_owned(),
        "-N".to_owned(),
    ]
}

/// The readiness query's command line.
pub fn query_command(config: &str) -> [String; 4] {
    [
        CTL_PROGRAM.to_owned(),
        "-c".to_owned(),
        config.to_owned(),
        "-q".to_owned(),
    ]
}

/// What `nvidia-imex-ctl -q` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// The local daemon brokers memory.
    Ready,
    /// Anything else, as printed (trimmed), for the status and the log.
    NotReady(String),
}

/// The answer in `output` (stdout and stderr together, as NVIDIA reads it):
/// ready only for exactly `READY` and a newline.
pub fn query_answer(output: &str) -> Query {
    if output == "READY\n" {
        Query::Ready
    } else {
        Query::NotReady(output.trim().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exactly_ready_is_ready() {
        assert_eq!(query_answer("READY\n"), Query::Ready);
        for other in ["READY", "NOT_READY\n", "READY\nextra\n", ""] {
            assert_eq!(
                query_answer(other),
                Query::NotReady(other.trim().to_owned()),
                "{other:?}"
            );
        }
    }

    #[test]
    fn the_config_names_the_node_s_address_its_names_and_its_socket() {
        let text = daemon_config(&DaemonPlaces {
            bind_ip: "10.1.2.3",
            nodes_config: "/n.cfg",
            command_socket: "/run/x/cmd.sock",
            stats_file: "/run/x/imex-stats.log",
        });
        for line in [
            "STATS_FILE_NAME=/run/x/imex-stats.log",
            "BIND_INTERFACE_IP=10.1.2.3",
            "IMEX_NODE_CONFIG_FILE=/n.cfg",
            "IMEX_CMD_UNIX_DOMAIN_PATH=/run/x/cmd.sock",
            "IMEX_CMD_ENABLED=1",
            "IMEX_CMD_BIND_INTERFACE_IP=127.0.0.1",
        ] {
            assert!(text.contains(&format!("\n{line}\n")), "{line}: {text}");
        }
    }

    #[test]
    fn the_commands_name_the_config() {
        assert_eq!(
            daemon_command("/run/imex/imexd.cfg").join(" "),
            "nvidia-imex -c /run/imex/imexd.cfg"
        );
        assert_eq!(
            query_command("/run/imex/imexd.cfg").join(" "),
            "nvidia-imex-ctl -c /run/imex/imexd.cfg -q"
        );
    }
}
