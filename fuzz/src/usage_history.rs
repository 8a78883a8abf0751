//! Target `usage_history`: `<state_dir>/usage-history.json` as gpusliced
//! reads it at start-up (`advice::history::file::parse`): any bytes, a file
//! cut short, a histogram that does not fit its scale.
//!
//! Invariants:
//! * nothing panics or overflows;
//! * a refused file is refused with a non-empty message naming the file;
//! * an accepted file keeps at most `max_claims` claims, and writing it
//!   back gives a file that loads again to the same claims and devices with
//!   the same counts, peaks, windows and histogram buckets, each total
//!   weight equal to 1e-9 relative (a load rescales the weights: the last
//!   digit of a float may move).

use std::path::Path;

use gpuslice::advice::HistorySettings;
use gpuslice::advice::history::file::{parse, to_bytes};
use gpuslice::advice::history::histogram::Checkpoint;
use gpuslice::advice::history::{DeviceHistory, History};

const PATH: &str = "/var/lib/gpuslice/usage-history.json";

const SETTINGS: HistorySettings = HistorySettings {
    interval_s: 5,
    half_life_s: 86_400,
    max_claims: 64,
};

/// Runs one input through the loader.
pub fn check(data: &[u8]) {
    let path = Path::new(PATH);
    let history = match parse(data, path, SETTINGS) {
        Ok(history) => history,
        Err(warning) => {
            let message = warning.to_string();
            assert!(
                message.contains(PATH),
                "a refusal without the file: {message}"
            );
            return;
        }
    };
    assert!(
        history.claims().len() <= SETTINGS.max_claims,
        "{} claims kept past max_claims",
        history.claims().len()
    );
    let written = to_bytes(&history);
    let again = parse(&written, path, SETTINGS)
        .unwrap_or_else(|w| panic!("a written history does not load: {w}"));
    same(&history, &again);
}

/// `a` and `b` hold the same records (see the module doc).
fn same(a: &History, b: &History) {
    let keys = |h: &History| h.claims().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(a), keys(b), "claims changed on a save and a load");
    for (uid, claim) in a.claims() {
        let other = &b.claims()[uid];
        assert_eq!(
            (&claim.namespace, &claim.name),
            (&other.namespace, &other.name)
        );
        let names = |d: &std::collections::BTreeMap<String, DeviceHistory>| {
            d.keys().cloned().collect::<Vec<_>>()
        };
        assert_eq!(
            names(&claim.devices),
            names(&other.devices),
            "devices of {uid} changed"
        );
        for (name, d) in &claim.devices {
            let e = &other.devices[name];
            let counts = |d: &DeviceHistory| {
                (
                    d.first,
                    d.last,
                    d.observed_s,
                    d.samples,
                    d.active_samples,
                    d.memory_peak,
                    d.sm_peak,
                    d.window,
                )
            };
            assert_eq!(counts(d), counts(e), "{uid} {name}: counts changed");
            close(d.memory.checkpoint(), e.memory.checkpoint(), "memory");
            close(d.sm.checkpoint(), e.sm.checkpoint(), "sm");
        }
    }
}

fn close(a: Option<Checkpoint>, b: Option<Checkpoint>, what: &str) {
    match (a, b) {
        (None, None) => {}
        (Some(a), Some(b)) => {
            assert_eq!(a.reference, b.reference, "{what}: reference changed");
            assert_eq!(a.weights, b.weights, "{what}: buckets changed");
            let scale = a.total.abs().max(b.total.abs()).max(f64::MIN_POSITIVE);
            assert!(
                (a.total - b.total).abs() / scale <= 1e-9 || a.total == b.total,
                "{what}: total {} became {}",
                a.total,
                b.total
            );
        }
        (a, b) => panic!("{what}: histogram {a:?} became {b:?}"),
    }
}
