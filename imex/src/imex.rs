//! What a node's IMEX daemon is given and how its readiness is read, as
//! NVIDIA's compute-domain daemon does it (cmd/compute-domain-daemon/
//! main.go and templates/compute-domain-daemon-config.tmpl.cfg):
//!
//! - `nvidia-imex -c <config>`, the config NVIDIA's template renders: the
//!   same keys and values, with the command service bound to the node's
//!   address and the nodes config file named;
//! - the **nodes config**: the address of each member of the node's clique,
//!   one per line ([`crate::membership::peers`]);
//! - readiness: `nvidia-imex-ctl -c <config> -q` printing exactly `READY`
//!   (the local daemon is ready, not the whole domain).
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
/// gpusliced also fills `BIND_INTERFACE_IP` when `[imex] bind_address` is
/// set (nodes sharing one host, as the tests' do, each bind their own).
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

/// The daemon's config: NVIDIA's keys and values, its peers in
/// `nodes_config`, its connections to them on `bind_ip` (`BIND_INTERFACE_IP`;
/// NVIDIA leaves it empty, all interfaces) and its command service on
/// `cmd_bind_ip` (NVIDIA's: the pod's address).
pub fn daemon_config(bind_ip: &str, cmd_bind_ip: &str, nodes_config: &str) -> String {
    let mut text =
        String::from("# Written by gpusliced for its ComputeDomain; rewritten on change.\n");
    for (key, value) in FIXED {
        let value = if key == "BIND_INTERFACE_IP" {
            bind_ip
        } else {
            value
        };
        text.push_str(&format!("{key}={value}\n"));
        if key == "SERVER_PORT" {
            text.push_str(&format!("IMEX_NODE_CONFIG_FILE={nodes_config}\n"));
        }
        if key == "IMEX_CMD_ENABLED" {
            text.push_str(&format!("IMEX_CMD_BIND_INTERFACE_IP={cmd_bind_ip}\n"));
        }
    }
    text
}

/// The nodes config: one address per line.
pub fn nodes_config(peers: &[String]) -> String {
    peers.iter().map(|p| format!("{p}\n")).collect()
}

/// The daemon's command line.
pub fn daemon_command(config: &str) -> [String; 3] {
    [
        DAEMON_PROGRAM.to_owned(),
        "-c".to_owned(),
        config.to_owned(),
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
    fn the_nodes_config_is_one_address_a_line() {
        let peers = ["127.0.0.2".to_owned(), "127.0.0.3".to_owned()];
        assert_eq!(nodes_config(&peers), "127.0.0.2\n127.0.0.3\n");
        assert_eq!(nodes_config(&[]), "");
    }

    #[test]
    fn the_bind_address_goes_to_the_peer_connections_and_the_command_service() {
        let text = daemon_config("127.0.0.2", "127.0.0.2", "/n.cfg");
        assert!(text.contains("\nBIND_INTERFACE_IP=127.0.0.2\n"), "{text}");
        assert!(
            text.contains("\nIMEX_CMD_BIND_INTERFACE_IP=127.0.0.2\n"),
            "{text}"
        );
        assert!(text.contains("\nIMEX_NODE_CONFIG_FILE=/n.cfg\n"), "{text}");
        let nvidia = daemon_config("", "10.1.2.3", "/n.cfg");
        assert!(nvidia.contains("\nBIND_INTERFACE_IP=\n"), "{nvidia}");
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
