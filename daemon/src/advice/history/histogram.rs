//! A decaying histogram, as Kubernetes' Vertical Pod Autoscaler keeps one per
//! resource: each sample adds weight `2^((t − ref) / half_life)` to its
//! bucket, so a sample one half life older counts half as much; when the
//! exponent passes [`MAX_DECAY_EXPONENT`] the reference time moves forward
//! and every weight is scaled down (renormalisation), which keeps every
//! percentile. Buckets are either exponential (5% wider each, from 16 MiB:
//! memory) or linear (5% wide, 0..=100: SM use).
//!
//! A checkpoint keeps the non-empty buckets only, their weights scaled so
//! the largest is [`MAX_CHECKPOINT_WEIGHT`] and rounded, plus the total
//! weight: a few hundred bytes, whatever the number of samples. Pure.

use serde::{Deserialize, Serialize};

/// Exponent past which the reference time moves (VPA's `maxDecayExponent`).
pub const MAX_DECAY_EXPONENT: f64 = 100.0;

/// The largest bucket weight in a checkpoint (VPA's `MaxCheckpointWeight`).
pub const MAX_CHECKPOINT_WEIGHT: u32 = 10_000;

/// Weights below this count as empty.
const EPSILON: f64 = 1e-4;

/// Where the buckets lie.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// Bucket 0 is `[0, first × ratio)`, bucket i is
    /// `[first × ratio^i, first × ratio^(i+1))`, the last one open-ended.
    Exponential {
        /// The start of bucket 1 divided by `ratio`.
        first: f64,
        /// Growth per bucket, e.g. 1.05.
        ratio: f64,
        /// Number of buckets.
        buckets: usize,
    },
    /// Bucket i is `[i × width, (i + 1) × width)`, the last one open-ended.
    Linear {
        /// Width of a bucket.
        width: f64,
        /// Number of buckets.
        buckets: usize,
    },
}

/// Memory peaks: 5% buckets from 16 MiB; the last (bucket 213) starts at
/// 512 GiB.
pub const MEMORY: Scale = Scale::Exponential {
    first: 16.0 * 1024.0 * 1024.0,
    ratio: 1.05,
    buckets: 214,
};

/// SM use in percent: 5% buckets; the last holds 100.
pub const SM_PERCENT: Scale = Scale::Linear {
    width: 5.0,
    buckets: 21,
};

impl Scale {
    /// Number of buckets.
    pub fn buckets(self) -> usize {
        match self {
            Scale::Exponential { buckets, .. } | Scale::Linear { buckets, .. } => buckets,
        }
    }

    /// The bucket of `value`.
    pub fn bucket(self, value: f64) -> usize {
        let last = self.buckets().saturating_sub(1);
        let raw = match self {
            Scale::Exponential { first, ratio, .. } => {
                if value < first * ratio {
                    0.0
                } else {
                    (value / first).ln() / ratio.ln()
                }
            }
            Scale::Linear { width, .. } => value / width,
        };
        if raw.is_nan() || raw < 0.0 {
            return 0;
        }
        // A float in 0..=last after the clamp: the cast cannot lose anything.
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "clamped to 0..=last first"
        )]
        let index = raw.floor().min(last as f64) as usize;
        // ln's rounding may put a value one bucket off at a boundary.
        if index > 0 && value < self.start(index) {
            index - 1
        } else if index < last && value >= self.start(index + 1) {
            index + 1
        } else {
            index
        }
    }

    /// Where bucket `index` starts.
    pub fn start(self, index: usize) -> f64 {
        let i = i32::try_from(index).unwrap_or(i32::MAX);
        match self {
            Scale::Exponential { first, ratio, .. } if index > 0 => first * ratio.powi(i),
            Scale::Exponential { .. } => 0.0,
            Scale::Linear { width, .. } => width * f64::from(i),
        }
    }
}

/// A decaying histogram over one [`Scale`].
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    scale: Scale,
    half_life_s: f64,
    weights: Vec<f64>,
    total: f64,
    /// Unix seconds weights are relative to; `None` before the first sample.
    reference: Option<i64>,
}

/// A histogram as the history file keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The reference time, Unix seconds.
    #[serde(rename = "ref")]
    pub reference: i64,
    /// The total weight.
    #[serde(rename = "t")]
    pub total: f64,
    /// Non-empty buckets as `[bucket, weight]`, the largest weight
    /// [`MAX_CHECKPOINT_WEIGHT`].
    #[serde(rename = "w")]
    pub weights: Vec<(u16, u32)>,
}

/// A checkpoint that does not fit its scale.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckpointError {
    /// A bucket past the last.
    #[error("bucket {bucket} is past the last ({last})")]
    BucketOutOfRange {
        /// The bucket.
        bucket: u16,
        /// The last bucket of the scale.
        last: usize,
    },
    /// A total that is not a finite, non-negative number, or zero with
    /// buckets.
    #[error("total weight {total} does not match its buckets")]
    BadTotal {
        /// The total.
        total: f64,
    },
}

impl Histogram {
    /// An empty histogram.
    pub fn new(scale: Scale, half_life_s: u64) -> Self {
        #[expect(clippy::cast_precision_loss, reason = "half lives are far below 2^52")]
        let half_life_s = half_life_s.max(1) as f64;
        Self {
            scale,
            half_life_s,
            weights: vec![0.0; scale.buckets()],
            total: 0.0,
            reference: None,
        }
    }

    /// Whether no weight is left.
    pub fn is_empty(&self) -> bool {
        self.total < EPSILON
    }

    /// The total weight.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// The reference time, Unix seconds.
    pub fn reference(&self) -> Option<i64> {
        self.reference
    }

    /// Adds `value` seen at `at` (Unix seconds) with weight 1.
    pub fn add(&mut self, value: f64, at: i64) {
        self.add_weighted(value, at, 1.0);
    }

    /// Takes back a sample [`Histogram::add`] added with the same value and time.
    pub fn subtract(&mut self, value: f64, at: i64) {
        self.add_weighted(value, at, -1.0);
    }

    fn add_weighted(&mut self, value: f64, at: i64, sign: f64) {
        let reference = *self
            .reference
            .get_or_insert_with(|| round_to(at, self.half_life_s));
        let mut exponent = seconds(at - reference) / self.half_life_s;
        if exponent > MAX_DECAY_EXPONENT {
            self.shift_reference(round_to(at, self.half_life_s));
            exponent = seconds(at - self.reference.unwrap_or(at)) / self.half_life_s;
        }
        let weight = sign * exponent.exp2();
        let bucket = self.scale.bucket(value);
        self.weights[bucket] += weight;
        if self.weights[bucket] < EPSILON {
            self.weights[bucket] = 0.0;
        }
        self.total = (self.total + weight).max(0.0);
        if self.total < EPSILON {
            self.total = 0.0;
        }
    }

    /// Moves the reference time to `to`, scaling every weight so that each
    /// keeps its share.
    pub fn shift_reference(&mut self, to: i64) {
        let Some(from) = self.reference else {
            self.reference = Some(to);
            return;
        };
        let factor = (seconds(from - to) / self.half_life_s).exp2();
        for w in &mut self.weights {
            *w *= factor;
        }
        self.total *= factor;
        self.reference = Some(to);
    }

    /// The bucket holding the `p` quantile (0 < p ≤ 1): the first whose
    /// running weight reaches `p` × total. `None` when empty.
    pub fn percentile_bucket(&self, p: f64) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        let threshold = p * self.total;
        let mut sum = 0.0;
        let mut last_filled = 0;
        for (i, w) in self.weights.iter().enumerate() {
            if *w <= 0.0 {
                continue;
            }
            last_filled = i;
            sum += w;
            if sum >= threshold {
                return Some(i);
            }
        }
        Some(last_filled)
    }

    /// The `p` quantile as the end of its bucket (the start of the last
    /// bucket for the open-ended one), as VPA answers. `None` when empty.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        let bucket = self.percentile_bucket(p)?;
        if bucket + 1 < self.scale.buckets() {
            Some(self.scale.start(bucket + 1))
        } else {
            Some(self.scale.start(bucket))
        }
    }

    /// The sparse checkpoint; `None` when empty.
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        let reference = self.reference?;
        let max = self.weights.iter().copied().fold(0.0, f64::max);
        if self.is_empty() || max <= 0.0 {
            return None;
        }
        let ratio = f64::from(MAX_CHECKPOINT_WEIGHT) / max;
        let weights = self
            .weights
            .iter()
            .enumerate()
            .filter_map(|(i, w)| {
                let scaled = (w * ratio).round();
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "0..=MAX_CHECKPOINT_WEIGHT after the scaling"
                )]
                let scaled = scaled.clamp(0.0, f64::from(MAX_CHECKPOINT_WEIGHT)) as u32;
                let bucket = u16::try_from(i).ok()?;
                (scaled > 0).then_some((bucket, scaled))
            })
            .collect();
        Some(Checkpoint {
            reference,
            total: self.total,
            weights,
        })
    }

    /// A histogram from its checkpoint: bucket weights scaled so they sum to
    /// the total.
    pub fn from_checkpoint(
        scale: Scale,
        half_life_s: u64,
        checkpoint: &Checkpoint,
    ) -> Result<Self, CheckpointError> {
        let mut out = Self::new(scale, half_life_s);
        let last = scale.buckets().saturating_sub(1);
        let sum: f64 = checkpoint.weights.iter().map(|(_, w)| f64::from(*w)).sum();
        let total = checkpoint.total;
        if !total.is_finite() || total < 0.0 || (sum > 0.0) != (total > 0.0) {
            return Err(CheckpointError::BadTotal { total });
        }
        for &(bucket, weight) in &checkpoint.weights {
            let slot = out
                .weights
                .get_mut(usize::from(bucket))
                .ok_or(CheckpointError::BucketOutOfRange { bucket, last })?;
            *slot += f64::from(weight) * total / sum;
        }
        out.total = total;
        out.reference = Some(checkpoint.reference);
        Ok(out)
    }
}

/// `at` rounded to a multiple of `half_life_s`.
fn round_to(at: i64, half_life_s: f64) -> i64 {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "half lives are whole seconds, far below i64::MAX"
    )]
    let step = (half_life_s as i64).max(1);
    (at.div_euclid(step)) * step
}

#[expect(
    clippy::cast_precision_loss,
    reason = "second counts are far below 2^52"
)]
fn seconds(s: i64) -> f64 {
    s as f64
}

#[cfg(test)]
mod tests;
