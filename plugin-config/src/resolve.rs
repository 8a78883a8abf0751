//! What the config leaves to the environment: the node name and how to reach
//! the API server. Pure: the caller passes the environment in.

use std::path::PathBuf;

use super::{Config, ConfigError};

/// The kubelet's kubeconfig on EKS AMIs (AL2 and AL2023); kubeadm nodes keep
/// theirs at /etc/kubernetes/kubelet.conf and set `kubeconfig`.
pub const KUBELET_KUBECONFIG: &str = "/var/lib/kubelet/kubeconfig";

/// What the shim reads from its environment, gathered by `main`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// `NODE_NAME`.
    pub node_name: Option<String>,
    /// Whether `KUBERNETES_SERVICE_HOST` is set (running in a pod).
    pub in_cluster: bool,
    /// The host name.
    pub hostname: Option<String>,
}

/// How the shim reaches the API server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiAccess {
    /// The pod's service account (in-cluster config).
    InCluster,
    /// A kubeconfig file (the kubelet's, on a host install).
    Kubeconfig(PathBuf),
}

/// The config with the environment's answers filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The file's values.
    pub config: Config,
    /// The Node's name, also the ResourceSlice pool name.
    pub node_name: String,
    /// How to reach the API server.
    pub api: ApiAccess,
}

impl Config {
    /// Fills in the node name and API access from `env`.
    pub fn resolve(self, env: &Environment) -> Result<Resolved, ConfigError> {
        let node_name = match (&self.node_name, &env.node_name, &env.hostname) {
            (Some(name), _, _) => name.clone(),
            (None, Some(name), _) if !name.is_empty() => name.clone(),
            (None, _, Some(host)) => host.trim().to_lowercase(),
            _ => {
                return Err(ConfigError::Invalid {
                    key: "node_name",
                    problem: "not set, NODE_NAME is not set and the host name is unknown; \
                              set node_name to the Node's name"
                        .to_owned(),
                });
            }
        };
        check_node_name(&node_name)?;
        let api = match (&self.kubeconfig, env.in_cluster) {
            (Some(path), _) => ApiAccess::Kubeconfig(path.clone()),
            (None, true) => ApiAccess::InCluster,
            (None, false) => ApiAccess::Kubeconfig(PathBuf::from(KUBELET_KUBECONFIG)),
        };
        Ok(Resolved {
            config: self,
            node_name,
            api,
        })
    }
}

/// A Node name must be a DNS subdomain (it is also the pool name).
pub(super) fn check_node_name(name: &str) -> Result<(), ConfigError> {
    if gpuslice_publish::names::is_dns_subdomain(name) {
        Ok(())
    } else {
        Err(ConfigError::Invalid {
            key: "node_name",
            problem: format!(
                "{name:?} is not a valid Node name (a lowercase DNS subdomain); set node_name \
                 or NODE_NAME to the name `kubectl get nodes` shows"
            ),
        })
    }
}
