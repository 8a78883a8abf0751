//! The delays between attempts to reach gpusliced or to finish a sync:
//! exponential from `min` to `max`, with jitter, starting over after a
//! success (backon's `ExponentialBackoff`, never exhausted).

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// Delays that double from `min` up to `max`.
#[derive(Debug)]
pub struct Backoff {
    builder: ExponentialBuilder,
    delays: ExponentialBackoff,
    max: Duration,
}

impl Backoff {
    /// Starts at `min` (plus jitter), doubles, never exceeds `max` (plus jitter).
    pub fn new(min: Duration, max: Duration) -> Self {
        let builder = ExponentialBuilder::new()
            .with_min_delay(min)
            .with_max_delay(max)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times();
        Self {
            builder,
            delays: builder.build(),
            max,
        }
    }

    /// The delay before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        // `without_max_times`: the iterator never ends; `max` is only a guard.
        self.delays.next().unwrap_or(self.max)
    }

    /// After a success: the next failure waits `min` again.
    pub fn reset(&mut self) {
        self.delays = self.builder.build();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Backoff;

    #[test]
    fn doubles_up_to_the_cap_with_jitter_and_starts_over_after_a_reset() {
        let (min, max) = (Duration::from_millis(100), Duration::from_secs(2));
        let mut backoff = Backoff::new(min, max);
        let delays: Vec<Duration> = (0..12).map(|_| backoff.next_delay()).collect();
        assert!(delays[0] >= min && delays[0] < min * 2, "{delays:?}");
        assert!(delays.iter().all(|d| *d < max * 2), "{delays:?}");
        assert!(delays[11] >= max, "reaches the cap: {delays:?}");
        backoff.reset();
        let first = backoff.next_delay();
        assert!(first >= min && first < min * 2, "{first:?}");
    }
}
