//! The usage history and the advice rule at 1,024 claims: 7 simulated days
//! sampled every 5 s from seeded traces (steady, bursty, idle, growing), then
//! the history file's size (typical, and the worst case with every bucket
//! filled), its save and load time, and the rule's time for every claim.
//! See bench/README.md.

use std::time::Instant;

use gpuslice::advice::history::file;
use gpuslice::advice::{
    ClaimFigures, CurrentForm, DeviceFigures, GpuModel, History, HistorySettings, Offer,
    RuleSettings, advise,
};
use gpuslice::gpu::sim::SimModel;

const CLAIMS: usize = 1024;
const INTERVAL_S: i64 = 5;
const DAYS: i64 = 7;
const GIB: u64 = 1 << 30;
const START: i64 = 1_800_000_000;

fn settings() -> HistorySettings {
    HistorySettings {
        interval_s: 5,
        half_life_s: 86_400,
        max_claims: 2048,
    }
}

fn claims() -> Vec<ClaimFigures> {
    (0..CLAIMS)
        .map(|i| ClaimFigures {
            uid: format!("0b9f3c2e-5d1a-4c8e-9f7a-{i:012}"),
            namespace: "ml-team".to_owned(),
            name: format!("notebook-{i}"),
            devices: vec![DeviceFigures {
                device: format!("gpu-{}", i % 8),
                memory_used: Some(0),
                sm_percent: Some(0),
                active: false,
            }],
        })
        .collect()
}

/// One sample of claim `i` at step `t` of trace kind `i % 4`.
fn trace(rng: &mut fastrand::Rng, i: usize, t: i64, steps: i64, d: &mut DeviceFigures) {
    let (memory, sm) = match i % 4 {
        // steady: 4 GiB ± 64 MiB, 20 ± 5 % SM.
        0 => (4 * GIB + rng.u64(0..64 << 20), rng.u32(15..=25)),
        // bursty: 2 GiB, a burst to 30 GiB and 90 % one sample in 50.
        1 if rng.u32(0..50) == 0 => (30 * GIB + rng.u64(0..GIB), rng.u32(80..=100)),
        1 => (2 * GIB + rng.u64(0..GIB), rng.u32(0..=10)),
        // idle: a loaded model, never a kernel.
        2 => (512 << 20, 0),
        // growing: 1 GiB to 60 GiB over the week.
        _ => {
            let share = u64::try_from(t).unwrap_or(0) * 59 / u64::try_from(steps).unwrap_or(1);
            (GIB + share * GIB + rng.u64(0..GIB / 4), rng.u32(30..=60))
        }
    };
    d.memory_used = Some(memory);
    d.sm_percent = Some(sm);
    d.active = sm > 0;
}

fn main() {
    println!(
        "profile={} cpus={}",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release (debug_assertions off)"
        },
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mut rng = fastrand::Rng::with_seed(24);
    let mut history = History::new(settings());
    let mut figures = claims();
    let steps = DAYS * 86_400 / INTERVAL_S;
    let began = Instant::now();
    for t in 0..steps {
        for (i, claim) in figures.iter_mut().enumerate() {
            trace(&mut rng, i, t, steps, &mut claim.devices[0]);
        }
        history.observe(START + t * INTERVAL_S, &figures);
    }
    let observe = began.elapsed();
    println!(
        "observe: {CLAIMS} claims x {steps} samples in {:.1} s ({:.2} us per claim and sample)",
        observe.as_secs_f64(),
        observe.as_secs_f64() * 1e6 / (f64::from(u32::try_from(steps).unwrap_or(0)) * 1024.0)
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let timed = |what: &str, f: &mut dyn FnMut()| {
        let runs = 20;
        let began = Instant::now();
        for _ in 0..runs {
            f();
        }
        println!(
            "{what}: {:.2} ms",
            began.elapsed().as_secs_f64() * 1e3 / f64::from(runs)
        );
    };
    let mut bytes = 0;
    timed("save (typical)", &mut || {
        bytes = file::save(dir.path(), &history).expect("save")
    });
    println!(
        "file (typical): {bytes} bytes ({:.0} per claim)",
        bytes as f64 / CLAIMS as f64
    );
    timed("load (typical)", &mut || {
        let (loaded, warning) = file::load(dir.path(), settings());
        assert!(warning.is_none() && loaded.claims().len() == CLAIMS);
    });
    let spec = SimModel::H100_80GB.spec();
    let profiles = spec.mig_profiles();
    let model = GpuModel {
        product_name: spec.product_name,
        memory_bytes: spec.memory_bytes,
        mig_profiles: &profiles,
    };
    let offer = Offer {
        mig: true,
        mps: true,
        timeslice: true,
    };
    let rule = RuleSettings {
        min_observed_s: 86_400,
        headroom_percent: 15,
    };
    let mut forms = std::collections::BTreeMap::<String, usize>::new();
    timed("advise (all claims)", &mut || {
        forms.clear();
        for claim in history.claims().values() {
            for device in claim.devices.values() {
                let advice = advise(device, &CurrentForm::Whole, &model, offer, rule);
                let name = format!("{:?}", advice.form);
                let kind = name.split([' ', '{']).next().unwrap_or("").to_owned();
                *forms.entry(kind).or_default() += 1;
            }
        }
    });
    println!("advice: {forms:?}");
    worst_case(&dir);
}

/// Every bucket of both histograms filled, for every claim.
fn worst_case(dir: &tempfile::TempDir) {
    let mut history = History::new(settings());
    let mut figures = claims();
    let scale = gpuslice::advice::history::histogram::MEMORY;
    for i in 0..scale.buckets() {
        let now = START + i64::try_from(i).unwrap_or(0) * 600;
        for claim in &mut figures {
            let d = &mut claim.devices[0];
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "bench"
            )]
            let bytes = (scale.start(i) * 1.01) as u64;
            d.memory_used = Some(bytes.max(1));
            d.sm_percent = Some(u32::try_from(i % 21).unwrap_or(0) * 5 + 1);
            d.active = true;
        }
        history.observe(now, &figures);
    }
    let began = Instant::now();
    let bytes = file::save(dir.path(), &history).expect("save");
    let save = began.elapsed();
    let began = Instant::now();
    let (loaded, _) = file::load(dir.path(), settings());
    let load = began.elapsed();
    assert_eq!(loaded.claims().len(), CLAIMS);
    println!(
        "file (worst case): {bytes} bytes ({:.0} per claim); save {:.1} ms, load {:.1} ms",
        bytes as f64 / CLAIMS as f64,
        save.as_secs_f64() * 1e3,
        load.as_secs_f64() * 1e3
    );
}
