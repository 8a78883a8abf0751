//! ComputeDomains kept by the plugins themselves, without a controller:
//! every node's plugin takes a turn at each domain (gpuslice-compute-domain's
//! `coordinate`): it makes the domain's workload ResourceClaimTemplate when
//! it is missing (NVIDIA's template; whoever comes first makes it, the others
//! find it), keeps its own entry of the domain's status from what gpusliced
//! says of its channels and IMEX daemon (`ListDomains`), drops the entries
//! of Nodes that are gone, sets the readiness, and tells gpusliced the
//! peers of its clique (`SetDomainPeers`). Status writes carry the
//! resourceVersion they read; a conflict is read again and retried. Once a
//! domain is gone, its templates lose their finalizer and go.
//!
//! Reading order: [`round`] (one pass over every domain, against the two
//! traits it needs: [`round::DomainApi`] and [`round::DomainNode`]),
//! [`kube_api`] (the API server's side, over kube), [`node`] (gpusliced's
//! side, over its socket), [`task`] (the loop: a round every second, sooner
//! when woken).

pub mod kube_api;
pub mod node;
pub mod round;
pub mod task;

#[cfg(test)]
mod tests;
