use proptest::prelude::*;

use super::with_claims;
use crate::activity::attribute::empty_claim;
use crate::activity::fixtures::{A, B, C, GIB, record, whole};
use crate::activity::held::{HeldClaim, held_claims};
use crate::activity::snapshot::{ActivitySnapshot, ClaimActivity, ProcessActivity};
use crate::testkit::inventory as fixture_inventory;

/// Claims of `uids` (of A, B, C) on gpu-0, gpu-1, gpu-2 in that order,
/// prepared at `prepared_at`.
fn held(uids: &[&str], prepared_at: i64) -> Vec<HeldClaim> {
    let inv = fixture_inventory(3);
    let records: Vec<_> = uids
        .iter()
        .map(|uid| {
            let i = [A, B, C].iter().position(|u| u == uid).unwrap_or(0);
            let gpu = &inv.gpus[i];
            let mut r = record(uid, vec![whole(&gpu.name, &gpu.info.uuid)]);
            r.prepared_at = prepared_at;
            r
        })
        .collect();
    held_claims(&records, &inv)
}

/// A sample of `claims`, each with one process using 2 GiB and 30% SM.
fn sample_of(claims: &[HeldClaim]) -> ActivitySnapshot {
    let read = |claim: &HeldClaim| {
        let mut c = empty_claim(claim);
        c.last_active = Some(1_500);
        for d in &mut c.devices {
            d.memory_used = 2 * GIB;
            d.sm_percent = Some(30);
            d.processes.push(ProcessActivity {
                pid: 7,
                name: "python".into(),
                memory_used: Some(2 * GIB),
                sm_percent: Some(30),
                mps_client: false,
            });
        }
        c
    };
    ActivitySnapshot {
        enabled: true,
        interval_ms: 5_000,
        sampled_at_ms: 1_600_000,
        sample_cpu_us: 40,
        claims: claims.iter().map(read).collect(),
        ..ActivitySnapshot::default()
    }
}

fn uids(snapshot: &ActivitySnapshot) -> Vec<&str> {
    snapshot.claims.iter().map(|c| c.uid.as_str()).collect()
}

#[test]
fn a_claim_prepared_after_the_sample_is_listed_not_sampled() {
    let sample = sample_of(&held(&[A], 1_000));
    let now = with_claims(&sample, &held(&[A, B], 1_000));
    assert_eq!(uids(&now), [A, B]);
    assert_eq!(now.claims[0], sample.claims[0], "A as the sample read it");
    let b = &now.claims[1];
    assert!(!b.sampled && now.claims[0].sampled);
    assert_eq!(b.last_active, None);
    assert_eq!(b.idle_for(1_030), 30, "idle since its prepare");
    assert_eq!(b.devices.len(), 1);
    assert_eq!(b.devices[0].device, "gpu-1");
    assert!(b.devices[0].processes.is_empty());
    assert_eq!(
        (b.devices[0].memory_used, b.devices[0].sm_percent),
        (0, None)
    );
    assert_eq!(
        (now.sampled_at_ms, now.sample_cpu_us, now.interval_ms),
        (1_600_000, 40, 5_000),
        "the sample's own figures stay"
    );
}

#[test]
fn a_claim_unprepared_since_the_sample_is_left_out() {
    let sample = sample_of(&held(&[A, B, C], 1_000));
    let now = with_claims(&sample, &held(&[A, C], 1_000));
    assert_eq!(uids(&now), [A, C]);
    assert!(now.claims.iter().all(|c| c.sampled));
}

#[test]
fn a_uid_prepared_again_since_the_sample_is_not_what_it_read() {
    let sample = sample_of(&held(&[A], 1_000));
    let again = with_claims(&sample, &held(&[A], 1_200));
    assert!(!again.claims[0].sampled, "another prepare of the same uid");
    assert_eq!(again.claims[0].prepared_at, 1_200);
    assert_eq!(again.claims[0].last_active, None);
    let inv = fixture_inventory(3);
    let other_gpu = held_claims(
        &[record(A, vec![whole("gpu-2", &inv.gpus[2].info.uuid)])],
        &inv,
    );
    assert_eq!(other_gpu[0].prepared_at, 1_000);
    assert!(!with_claims(&sample, &other_gpu).claims[0].sampled);
}

#[test]
fn sampling_off_lists_nothing() {
    let off = ActivitySnapshot::default();
    assert_eq!(with_claims(&off, &held(&[A, B], 1_000)), off);
}

proptest! {
    /// The view lists exactly the table's claims, in uid order; those the
    /// sample read (same uid and prepare) as it read them, the others not
    /// sampled.
    #[test]
    fn the_view_lists_exactly_the_table(
        in_sample in prop::collection::vec(any::<bool>(), 3),
        in_table in prop::collection::vec(any::<bool>(), 3),
        prepared_again in prop::collection::vec(any::<bool>(), 3),
    ) {
        let all = [A, B, C];
        let pick = |mask: &[bool]| -> Vec<&str> {
            all.iter().zip(mask).filter(|(_, on)| **on).map(|(u, _)| *u).collect()
        };
        let sample = sample_of(&held(&pick(&in_sample), 1_000));
        let table: Vec<HeldClaim> = held(&all, 1_000)
            .into_iter()
            .zip(&prepared_again)
            .map(|(mut c, again)| { if *again { c.prepared_at = 1_100; } c })
            .zip(&in_table)
            .filter(|(_, on)| **on)
            .map(|(c, _)| c)
            .collect();
        let now = with_claims(&sample, &table);
        let listed: Vec<&str> = uids(&now);
        let expected: Vec<&str> = table.iter().map(|c| c.uid.as_str()).collect();
        prop_assert_eq!(listed, expected);
        for claim in &now.claims {
            let read: Option<&ClaimActivity> = sample
                .claims
                .iter()
                .find(|c| c.uid == claim.uid && c.prepared_at == claim.prepared_at);
            match read {
                Some(read) => prop_assert_eq!(claim, read),
                None => {
                    prop_assert!(!claim.sampled);
                    prop_assert_eq!(claim.process_count(), 0);
                }
            }
        }
    }
}
