//! The cap on per-claim metric series (`[activity] max_claim_series`): the
//! (claim, device) pairs of a snapshot in claim-uid then record order, the
//! first `max_claim_series` shown, the rest counted as dropped. Pure.

use super::snapshot::{ActivitySnapshot, ClaimActivity, DeviceActivity};

/// How many (claim, device) pairs of `claims` are past `cap`.
pub fn series_dropped(claims: &[ClaimActivity], cap: usize) -> u64 {
    let pairs: usize = claims.iter().map(|c| c.devices.len()).sum();
    u64::try_from(pairs.saturating_sub(cap)).unwrap_or(u64::MAX)
}

/// The (claim, device) pairs the metrics show: all but the last
/// `snapshot.series_dropped`.
pub fn kept_series(
    snapshot: &ActivitySnapshot,
) -> impl Iterator<Item = (&ClaimActivity, &DeviceActivity)> {
    let pairs: usize = snapshot.claims.iter().map(|c| c.devices.len()).sum();
    let dropped = usize::try_from(snapshot.series_dropped).unwrap_or(usize::MAX);
    snapshot
        .claims
        .iter()
        .flat_map(|c| c.devices.iter().map(move |d| (c, d)))
        .take(pairs.saturating_sub(dropped))
}

#[cfg(test)]
mod tests {
    use super::{kept_series, series_dropped};
    use crate::activity::fixtures::device_activity;
    use crate::activity::snapshot::{ActivitySnapshot, ClaimActivity};
    use crate::state::AccessKind;

    fn claim(uid: &str, devices: usize) -> ClaimActivity {
        ClaimActivity {
            uid: uid.to_owned(),
            namespace: "ns".to_owned(),
            name: uid.to_owned(),
            kind: AccessKind::Exclusive,
            prepared_at: 0,
            last_active: None,
            sampled: true,
            devices: (0..devices)
                .map(|i| device_activity(&format!("gpu-{i}"), AccessKind::Exclusive, 0, None))
                .collect(),
        }
    }

    #[test]
    fn pairs_past_the_cap_are_dropped_from_the_end() {
        let claims = vec![claim("a", 2), claim("b", 1), claim("c", 2)];
        for (cap, dropped, kept) in [(10, 0, 5), (5, 0, 5), (3, 2, 3), (0, 5, 0)] {
            assert_eq!(series_dropped(&claims, cap), dropped);
            let snapshot = ActivitySnapshot {
                claims: claims.clone(),
                series_dropped: dropped,
                ..ActivitySnapshot::default()
            };
            let shown: Vec<(String, String)> = kept_series(&snapshot)
                .map(|(c, d)| (c.uid.clone(), d.device.clone()))
                .collect();
            assert_eq!(shown.len(), kept, "cap {cap}");
        }
        let snapshot = ActivitySnapshot {
            claims,
            series_dropped: 2,
            ..ActivitySnapshot::default()
        };
        let last = kept_series(&snapshot).last().unwrap();
        assert_eq!(
            (last.0.uid.as_str(), last.1.device.as_str()),
            ("b", "gpu-0")
        );
    }
}
