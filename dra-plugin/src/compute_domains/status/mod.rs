//! The second driver's status side ([`super`] serves the channels):
//! ComputeDomains kept by the nodes' plugins themselves, without a
//! controller, and without a load that grows with time: each node watches
//! (list once, then watch) every ComputeDomain, the domains' workload
//! templates and the membership Leases, asks its own gpusliced what it
//! holds (`ListDomains`, a local socket), and writes only when what it
//! would write differs from what its cache holds. At rest it sends the API
//! server nothing but its watches.
//!
//! What a node writes, under the ComputeDomain identity (whose admission
//! policies let it touch its own entry only):
//!
//! - a domain's workload template, when its cache lacks it, after a delay
//!   drawn per (node, domain) so that of many nodes usually one makes it;
//!   owned by the domain, so the garbage collector deletes it with it;
//! - for each domain it has a channel of: a membership Lease (owned by its
//!   Node, so the garbage collector deletes it with the Node), then its own
//!   entry of `status.nodes` and `status.status` by server-side apply, Ready
//!   only once its IMEX daemon knows and reaches the members; the members
//!   told to gpusliced (`SetDomainMembers`); its entry and Lease gone when
//!   its last channel is;
//! - the entry of a member whose Lease is gone (its Node deleted), removed
//!   by JSON patch by the first live member of its clique.
//!
//! Reading order: [`read`] (a cached domain read), [`cache`] (the watches
//! and stores), [`node`] (gpusliced's side), [`kube_api`] (the writes),
//! [`memory`] (what a loop keeps between passes), [`round`] (one pass,
//! deciding through gpuslice-compute-domain's `coordinate`), [`task`] (the
//! loop and its start), [`lookup`] (a channel claim's domain found for its
//! prepare).

pub mod cache;
pub mod kube_api;
pub mod lookup;
pub mod memory;
pub mod node;
pub mod read;
pub mod round;
pub mod task;

#[cfg(test)]
mod tests;
