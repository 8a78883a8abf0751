//! The node as the API holds it: the claim engine with the MIG offering in
//! force, and the ComputeDomain channels prepared beside it where this node
//! serves them. One value for everything the API changes on the node; what
//! it only shows (activity, claim status) stays the API's own.

use std::sync::Arc;

use crate::claims::Engine;
use crate::claims::mig_offering::OfferingSwitch;
use crate::compute_domains::Domains;

/// The claim engine, its MIG offering, and the channels, if any.
#[derive(Debug, Clone)]
pub struct Node {
    engine: Arc<Engine>,
    offerings: Arc<OfferingSwitch>,
    domains: Option<Arc<Domains>>,
}

impl Node {
    /// A node of `engine` offering MIG by `offerings`, serving no channels.
    #[must_use]
    pub fn new(engine: Arc<Engine>, offerings: Arc<OfferingSwitch>) -> Self {
        Self {
            engine,
            offerings,
            domains: None,
        }
    }

    /// The same node preparing ComputeDomains' channels on `domains`.
    #[must_use]
    pub fn with_domains(mut self, domains: Arc<Domains>) -> Self {
        self.domains = Some(domains);
        self
    }

    /// The claim engine.
    #[must_use]
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The MIG offering in force, and its switch.
    #[must_use]
    pub fn offerings(&self) -> &Arc<OfferingSwitch> {
        &self.offerings
    }

    /// The channels, where this node serves them.
    #[must_use]
    pub fn domains(&self) -> Option<&Arc<Domains>> {
        self.domains.as_ref()
    }
}
