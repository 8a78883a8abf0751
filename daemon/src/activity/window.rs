//! The summary window, pure: per claim and device, the last
//! `[activity] summary_window_s` seconds of samples as `(t, memory, sm)`
//! points, and their memory peak and SM mean and peak.
//!
//! A point is added for each sample that read the device's GPU; a sample
//! that could not read it adds none (the gap is not counted as zero use).
//! A window at `now` is `(now − window, now]`: older points are dropped at
//! each sample, and each ring holds at most `window / interval + 1` points
//! (fresh samples asked for between intervals cannot grow it past that; the
//! oldest go first), never more than [`MAX_POINTS`]. A claim or device no
//! longer sampled loses its ring at the next sample.

use std::collections::{BTreeMap, VecDeque};

/// Points a ring holds at most, whatever the settings.
pub const MAX_POINTS: usize = 3601;

/// One sample of one device of one claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// Unix seconds of the sample.
    pub t: i64,
    /// Memory the claim's processes used on the device, in bytes.
    pub memory: u64,
    /// Their SM utilization, percent, where the driver samples it.
    pub sm: Option<u32>,
}

/// What a window says of one device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowFigures {
    /// The highest memory of the window's points, in bytes.
    pub memory_peak: u64,
    /// The mean SM percent of the points that carry one (rounded to the
    /// nearest); `None` when none does (MIG).
    pub sm_mean: Option<u32>,
    /// The highest SM percent; `None` when no point carries one.
    pub sm_peak: Option<u32>,
}

/// (claim uid, device name).
pub type DeviceKey = (String, String);

/// Every device's ring.
#[derive(Debug, Clone)]
pub struct Windows {
    window_s: i64,
    cap: usize,
    rings: BTreeMap<DeviceKey, VecDeque<Point>>,
}

impl Windows {
    /// Windows of `window_s` seconds, sampled every `interval_s` seconds.
    pub fn new(window_s: u64, interval_s: u64) -> Self {
        let samples = window_s.checked_div(interval_s.max(1)).unwrap_or(0);
        let cap = usize::try_from(samples.saturating_add(1)).unwrap_or(MAX_POINTS);
        Self {
            window_s: i64::try_from(window_s).unwrap_or(i64::MAX),
            cap: cap.clamp(1, MAX_POINTS),
            rings: BTreeMap::new(),
        }
    }

    /// The window's length, in seconds.
    pub fn window_s(&self) -> i64 {
        self.window_s
    }

    /// Starts a sample at `now`: drops the points that fell out of the
    /// window, and the rings of devices not in `kept`.
    pub fn begin(&mut self, now: i64, kept: &std::collections::BTreeSet<DeviceKey>) {
        self.rings.retain(|key, _| kept.contains(key));
        let oldest = now.saturating_sub(self.window_s);
        for ring in self.rings.values_mut() {
            while ring.front().is_some_and(|p| p.t <= oldest) {
                ring.pop_front();
            }
        }
    }

    /// Adds `point` to `key`'s ring, dropping its oldest point when full.
    pub fn push(&mut self, key: &DeviceKey, point: Point) {
        let ring = self.rings.entry(key.clone()).or_default();
        while ring.len() >= self.cap {
            ring.pop_front();
        }
        ring.push_back(point);
    }

    /// The figures of `key`'s ring; `None` when it holds no point.
    pub fn figures(&self, key: &DeviceKey) -> Option<WindowFigures> {
        let ring = self.rings.get(key).filter(|r| !r.is_empty())?;
        let sms: Vec<u64> = ring.iter().filter_map(|p| p.sm).map(u64::from).collect();
        let count = u64::try_from(sms.len()).unwrap_or(u64::MAX);
        let sm_mean = (count > 0).then(|| {
            let mean = (sms.iter().sum::<u64>() + count / 2) / count;
            u32::try_from(mean).unwrap_or(u32::MAX)
        });
        Some(WindowFigures {
            memory_peak: ring.iter().map(|p| p.memory).max().unwrap_or(0),
            sm_mean,
            sm_peak: ring.iter().filter_map(|p| p.sm).max(),
        })
    }

    /// Points in `key`'s ring (tests, benches).
    pub fn len(&self, key: &DeviceKey) -> usize {
        self.rings.get(key).map_or(0, VecDeque::len)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{MAX_POINTS, Point, WindowFigures, Windows};

    fn key() -> (String, String) {
        ("a".to_owned(), "gpu-0".to_owned())
    }

    fn kept() -> BTreeSet<(String, String)> {
        BTreeSet::from([key()])
    }

    fn sample(w: &mut Windows, t: i64, memory: u64, sm: Option<u32>) {
        w.begin(t, &kept());
        w.push(&key(), Point { t, memory, sm });
    }

    #[test]
    fn points_older_than_the_window_are_dropped() {
        let mut w = Windows::new(10, 5);
        sample(&mut w, 100, 9, Some(90));
        sample(&mut w, 105, 1, Some(10));
        assert_eq!(w.figures(&key()).unwrap().memory_peak, 9);
        sample(&mut w, 110, 2, Some(20));
        assert_eq!(w.len(&key()), 2, "the window is (100, 110]");
        assert_eq!(w.figures(&key()).unwrap().memory_peak, 2);
        sample(&mut w, 111, 3, Some(30));
        assert_eq!(
            w.figures(&key()),
            Some(WindowFigures {
                memory_peak: 3,
                sm_mean: Some(20),
                sm_peak: Some(30),
            })
        );
    }

    #[test]
    fn a_ring_holds_one_window_of_samples_even_when_asked_more_often() {
        let mut w = Windows::new(10, 5);
        for t in 0..20 {
            sample(&mut w, 1000, t, None);
        }
        assert_eq!(w.len(&key()), 3, "10 / 5 + 1");
        assert_eq!(w.figures(&key()).unwrap().memory_peak, 19);
        let huge = Windows::new(u64::MAX, 1);
        assert_eq!(huge.cap, MAX_POINTS);
        assert_eq!(Windows::new(5, 0).cap, 6, "interval 0 counts as 1 s");
    }

    #[test]
    fn no_sm_samples_give_no_sm_figures() {
        let mut w = Windows::new(300, 5);
        sample(&mut w, 1, 4, None);
        sample(&mut w, 6, 2, None);
        let f = w.figures(&key()).unwrap();
        assert_eq!((f.memory_peak, f.sm_mean, f.sm_peak), (4, None, None));
    }

    #[test]
    fn the_sm_mean_rounds_to_the_nearest_percent_over_the_points_that_carry_one() {
        let mut w = Windows::new(300, 5);
        for (t, sm) in [(1, Some(1)), (2, Some(2)), (3, None)] {
            sample(&mut w, t, 0, sm);
        }
        let f = w.figures(&key()).unwrap();
        assert_eq!((f.sm_mean, f.sm_peak), (Some(2), Some(2)), "1.5 → 2");
    }

    #[test]
    fn a_device_no_longer_kept_loses_its_ring() {
        let mut w = Windows::new(300, 5);
        sample(&mut w, 1, 4, None);
        w.begin(2, &BTreeSet::new());
        assert_eq!(w.len(&key()), 0);
        assert_eq!(w.figures(&key()), None);
    }
}
