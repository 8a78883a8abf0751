//! [`TimeSlicePolicy`]: per physical GPU, which claims time-slice it (and at
//! which interval) or run MPS on it. Pure: it says what to do, the caller
//! does it.

use std::collections::{BTreeMap, BTreeSet};

use super::TimeSliceError;
use crate::opaque::TimeSliceInterval;

/// What the caller must apply to the GPU after a join or leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Set the GPU's time-slice to this level.
    Set(TimeSliceInterval),
    /// Nothing to change.
    Nothing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Use {
    TimeSlicing {
        interval: TimeSliceInterval,
        claims: BTreeSet<String>,
    },
    Mps {
        claims: BTreeSet<String>,
    },
}

/// The sharing mode of each physical GPU and the claims on it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimeSlicePolicy {
    gpus: BTreeMap<String, Use>,
}

impl TimeSlicePolicy {
    /// An empty policy (no GPU shared).
    pub fn new() -> Self {
        Self::default()
    }

    /// `claim` time-slices `gpu` at `interval`. Idempotent for a claim
    /// already there with that interval.
    pub fn join(
        &mut self,
        gpu: &str,
        claim: &str,
        interval: TimeSliceInterval,
    ) -> Result<Action, TimeSliceError> {
        match self.gpus.get_mut(gpu) {
            None => {
                let claims = BTreeSet::from([claim.to_owned()]);
                self.gpus
                    .insert(gpu.to_owned(), Use::TimeSlicing { interval, claims });
                Ok(Action::Set(interval))
            }
            Some(Use::Mps { claims }) => Err(TimeSliceError::MpsInUse {
                gpu: gpu.to_owned(),
                holder: first(claims),
            }),
            Some(Use::TimeSlicing {
                interval: held,
                claims,
            }) => {
                if *held != interval {
                    let holder = claims
                        .iter()
                        .find(|c| *c != claim)
                        .cloned()
                        .unwrap_or_else(|| claim.to_owned());
                    return Err(TimeSliceError::IntervalConflict {
                        gpu: gpu.to_owned(),
                        holder,
                        held: *held,
                        asked: interval,
                    });
                }
                claims.insert(claim.to_owned());
                Ok(Action::Nothing)
            }
        }
    }

    /// `claim` stops time-slicing `gpu`; the last one out resets it to
    /// Default (unless it is Default already).
    pub fn leave(&mut self, gpu: &str, claim: &str) -> Action {
        let Some(Use::TimeSlicing { interval, claims }) = self.gpus.get_mut(gpu) else {
            return Action::Nothing;
        };
        claims.remove(claim);
        if !claims.is_empty() {
            return Action::Nothing;
        }
        let interval = *interval;
        self.gpus.remove(gpu);
        if interval == TimeSliceInterval::Default {
            Action::Nothing
        } else {
            Action::Set(TimeSliceInterval::Default)
        }
    }

    /// `claim` runs MPS on `gpu`: refused while it is time-sliced.
    pub fn join_mps(&mut self, gpu: &str, claim: &str) -> Result<(), TimeSliceError> {
        match self.gpus.entry(gpu.to_owned()).or_insert_with(|| Use::Mps {
            claims: BTreeSet::new(),
        }) {
            Use::Mps { claims } => {
                claims.insert(claim.to_owned());
                Ok(())
            }
            Use::TimeSlicing { claims, .. } => Err(TimeSliceError::TimeSliceInUse {
                gpu: gpu.to_owned(),
                holder: first(claims),
            }),
        }
    }

    /// `claim` stops running MPS on `gpu`.
    pub fn leave_mps(&mut self, gpu: &str, claim: &str) {
        if let Some(Use::Mps { claims }) = self.gpus.get_mut(gpu) {
            claims.remove(claim);
            if claims.is_empty() {
                self.gpus.remove(gpu);
            }
        }
    }

    /// The interval `gpu` is time-sliced at, when it is.
    pub fn interval(&self, gpu: &str) -> Option<TimeSliceInterval> {
        match self.gpus.get(gpu) {
            Some(Use::TimeSlicing { interval, .. }) => Some(*interval),
            _ => None,
        }
    }

    /// The claims sharing `gpu` (time-slice or MPS), sorted.
    pub fn claims(&self, gpu: &str) -> Vec<String> {
        match self.gpus.get(gpu) {
            Some(Use::TimeSlicing { claims, .. } | Use::Mps { claims }) => {
                claims.iter().cloned().collect()
            }
            None => Vec::new(),
        }
    }
}

fn first(claims: &BTreeSet<String>) -> String {
    claims.iter().next().cloned().unwrap_or_default()
}
