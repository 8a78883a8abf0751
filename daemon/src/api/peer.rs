//! Who may call: root, the daemon's own user, and members of the configured
//! socket group, checked on every call from the connection's SO_PEERCRED
//! credentials. The socket's 0660 mode is the first fence; this is the second,
//! and it answers PERMISSION_DENIED with a reason instead of a bare refusal.

use tonic::transport::server::UdsConnectInfo;
use tonic::{Request, Status};

/// The admission rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerPolicy {
    /// The daemon's effective uid (admitted, like root).
    pub own_uid: u32,
    /// The socket group, if configured.
    pub group: Option<u32>,
}

/// A caller's credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// Effective uid.
    pub uid: u32,
    /// Effective gid.
    pub gid: u32,
    /// Process id, for supplementary groups.
    pub pid: Option<i32>,
}

impl PeerPolicy {
    /// True when `peer` may call. `supplementary` lists the caller's other groups.
    pub fn admits(&self, peer: Peer, supplementary: &[u32]) -> bool {
        peer.uid == 0
            || peer.uid == self.own_uid
            || self
                .group
                .is_some_and(|g| peer.gid == g || supplementary.contains(&g))
    }

    /// The interceptor: refuses callers the policy does not admit.
    pub fn check(&self, req: Request<()>) -> Result<Request<()>, Status> {
        let cred = req
            .extensions()
            .get::<UdsConnectInfo>()
            .and_then(|info| info.peer_cred);
        let Some(cred) = cred else {
            return Err(Status::permission_denied(
                "the caller's credentials are unknown (SO_PEERCRED); connect over the unix socket",
            ));
        };
        let peer = Peer {
            uid: cred.uid(),
            gid: cred.gid(),
            pid: cred.pid(),
        };
        // Root, the daemon's user and the socket group's primary members are
        // admitted without reading /proc: the supplementary groups are read
        // only for a caller who would otherwise be refused.
        if self.admits(peer, &[]) {
            return Ok(req);
        }
        let groups = peer.pid.map(supplementary_groups).unwrap_or_default();
        if self.admits(peer, &groups) {
            return Ok(req);
        }
        Err(Status::permission_denied(format!(
            "uid {} (gid {}) may not call gpusliced: only root{} may",
            peer.uid,
            peer.gid,
            self.group
                .map(|g| format!(" and members of group {g}"))
                .unwrap_or_default()
        )))
    }
}

/// The supplementary groups of process `pid`, from /proc/<pid>/status.
fn supplementary_groups(pid: i32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("Groups:").map(|rest| {
                    rest.split_whitespace()
                        .filter_map(|g| g.parse().ok())
                        .collect()
                })
            })
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: PeerPolicy = PeerPolicy {
        own_uid: 990,
        group: Some(995),
    };

    fn peer(uid: u32, gid: u32) -> Peer {
        Peer {
            uid,
            gid,
            pid: None,
        }
    }

    #[test]
    fn root_own_user_and_group_members_are_admitted() {
        assert!(POLICY.admits(peer(0, 0), &[]));
        assert!(POLICY.admits(peer(990, 990), &[]));
        assert!(POLICY.admits(peer(1000, 995), &[]));
        assert!(POLICY.admits(peer(1000, 1000), &[4, 995]));
    }

    #[test]
    fn everyone_else_is_refused() {
        assert!(!POLICY.admits(peer(1000, 1000), &[4, 27]));
        let no_group = PeerPolicy {
            own_uid: 0,
            group: None,
        };
        assert!(!no_group.admits(peer(1000, 995), &[995]));
    }

    #[test]
    fn a_request_without_credentials_is_refused() {
        let err = POLICY.check(Request::new(())).unwrap_err();
        assert_eq!(err.code(), tonic::Code::PermissionDenied);
    }

    #[test]
    fn own_process_groups_are_read() {
        let pid = i32::try_from(std::process::id()).unwrap();
        let groups = supplementary_groups(pid);
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("Groups:")).unwrap();
        assert_eq!(groups.len(), line.split_whitespace().count() - 1);
    }
}
