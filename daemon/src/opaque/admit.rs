//! Whether a claim's own `LimitsConfig` may stand on this node, by
//! `[limits] claim_override`: "off" refuses it, "stricter" takes only a mode
//! at least as strict (warn < dry-run < end) and a grace at most as long as
//! the node's, "any" takes it as it is. Pure; runs at prepare before
//! anything is reserved.

use super::ClaimLimits;
use crate::config::{ClaimOverride, LimitsConfig};

/// Why a claim's `LimitsConfig` is refused (the caller's to fix:
/// INVALID_ARGUMENT). Each message names the config entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmitError {
    /// The node lets no claim set limits.
    #[error(
        "configs[{index}]: this node does not let claims set limits ([limits] claim_override \
         = \"off\"); remove the LimitsConfig or ask the node's admin"
    )]
    Off {
        /// Position of the LimitsConfig among the claim's configs.
        index: usize,
    },
    /// Under "stricter", a mode looser than the node's.
    #[error(
        "configs[{index}].overshare: {claim:?} is looser than this node's [limits] overshare \
         = {node:?}, and the node lets claims only tighten limits ([limits] claim_override = \
         \"stricter\"); use {node:?} or stricter (warn < dry-run < end), or remove overshare"
    )]
    LooserMode {
        /// Position of the LimitsConfig.
        index: usize,
        /// The claim's mode.
        claim: &'static str,
        /// The node's mode.
        node: &'static str,
    },
    /// Under "stricter", a grace longer than the node's.
    #[error(
        "configs[{index}].graceSeconds: {claim} is longer than this node's [limits] grace_s = \
         {node}, and the node lets claims only tighten limits ([limits] claim_override = \
         \"stricter\"); use at most {node}, or remove graceSeconds"
    )]
    LongerGrace {
        /// Position of the LimitsConfig.
        index: usize,
        /// The claim's grace, seconds.
        claim: u64,
        /// The node's grace, seconds.
        node: u64,
    },
}

/// The claim's limits (from configs entry `index`) if `node` lets them stand.
pub fn admit(
    node: &LimitsConfig,
    index: usize,
    claim: ClaimLimits,
) -> Result<ClaimLimits, AdmitError> {
    match node.claim_override {
        ClaimOverride::Off => Err(AdmitError::Off { index }),
        ClaimOverride::Any => Ok(claim),
        ClaimOverride::Stricter => {
            if let Some(mode) = claim.overshare
                && mode < node.overshare
            {
                return Err(AdmitError::LooserMode {
                    index,
                    claim: mode.into(),
                    node: node.overshare.into(),
                });
            }
            if let Some(grace) = claim.grace_s
                && grace > node.grace_s
            {
                return Err(AdmitError::LongerGrace {
                    index,
                    claim: grace,
                    node: node.grace_s,
                });
            }
            Ok(claim)
        }
    }
}

#[cfg(test)]
mod tests;
