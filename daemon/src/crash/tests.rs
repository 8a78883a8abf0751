use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;

#[test]
fn a_point_is_armed_at_its_first_pass_or_the_one_named() {
    assert_eq!(
        parse_armed("spec.after_rename").unwrap(),
        Armed {
            point: "spec.after_rename",
            pass: 1
        }
    );
    assert_eq!(parse_armed("gpu.after_gi_created@3").unwrap().pass, 3);
}

#[test]
fn a_misspelt_point_or_pass_is_refused_with_the_names_to_use() {
    let err = parse_armed("spec.after_renamed").unwrap_err().to_string();
    assert!(
        err.contains("no crash point \"spec.after_renamed\""),
        "{err}"
    );
    assert!(
        err.contains("spec.after_rename, spec.after_unlink"),
        "{err}"
    );
    for bad in [
        "spec.after_rename@0",
        "spec.after_rename@",
        "spec.after_rename@x",
    ] {
        let err = parse_armed(bad).unwrap_err().to_string();
        assert!(err.contains("whole number from 1"), "{bad}: {err}");
    }
}

#[test]
fn names_are_unique_and_say_the_layer_and_the_step_they_follow() {
    let mut seen = std::collections::BTreeSet::new();
    for name in ALL {
        assert!(seen.insert(name), "{name} is listed twice");
        assert!(point_shaped(name), "{name}: name it <layer>.after_<step>");
    }
}

/// `<layer>.after_<step>`, lower case and underscores.
fn point_shaped(text: &str) -> bool {
    let Some((layer, step)) = text.split_once('.') else {
        return false;
    };
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    word(layer) && step.strip_prefix("after_").is_some_and(word)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every string literal shaped like a point name in the sources, with the
/// files it is in (this module and its tests left out).
fn points_in_sources() -> BTreeMap<String, Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["daemon/src", "cdi/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in files {
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        if shown == "daemon/src/crash.rs" || shown.starts_with("daemon/src/crash/tests") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for literal in text.split('"').skip(1).step_by(2) {
            if point_shaped(literal) {
                found
                    .entry(literal.to_owned())
                    .or_default()
                    .push(shown.clone());
            }
        }
    }
    found
}

#[test]
fn every_listed_point_marks_exactly_one_place_and_every_place_is_listed() {
    let found = points_in_sources();
    for name in ALL {
        match found.get(*name).map(Vec::as_slice) {
            None | Some([]) => panic!(
                "crash point {name} is listed in crash::ALL but marks no place in the sources: \
                 remove it from the list"
            ),
            Some([_]) => {}
            Some(many) => panic!(
                "crash point {name} marks {} places ({many:?}): give each durable step a name of \
                 its own",
                many.len()
            ),
        }
    }
    for (name, files) in &found {
        assert!(
            ALL.contains(&name.as_str()),
            "{name} (in {files:?}) looks like a crash point but is not in crash::ALL: list it, \
             so the crash_points e2e test crashes there"
        );
    }
}

#[test]
fn this_test_build_has_the_crash_points() {
    // The package's tests turn the feature on (daemon/Cargo.toml), so the
    // gpusliced the e2e tests run has the points.
    const { assert!(cfg!(feature = "failpoints")) };
    assert!(fail::has_failpoints());
}

#[test]
fn the_observed_backend_passes_a_point_only_after_a_change_that_was_made() {
    use std::sync::atomic::{AtomicU32, Ordering};

    use crate::gpu::sim::{SimBackend, SimModel, op};
    use crate::gpu::{GpuError, MigMode};

    // Points are global and the tests run in parallel: count only the
    // passes of this thread.
    let me = std::thread::current().id();
    let passes = Arc::new(AtomicU32::new(0));
    let counted = passes.clone();
    let _guard = fail::FailGuard::with_callback("gpu.after_gi_created", move || {
        if std::thread::current().id() == me {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    })
    .unwrap();
    let sim = Arc::new(SimBackend::new(vec![SimModel::H100_80GB], "crash"));
    let backend = observe_backend(sim.clone());
    backend.set_mig_mode(0, MigMode::Enabled).unwrap();
    let profile = backend.mig_profiles(0).unwrap().remove(0);
    let placement = profile.placements[0];
    backend
        .create_gpu_instance(0, profile.id, placement)
        .unwrap();
    assert_eq!(passes.load(Ordering::SeqCst), 1);
    // Refused (the placement is taken), or failed: no change, no pass.
    backend
        .create_gpu_instance(0, profile.id, placement)
        .unwrap_err();
    sim.faults().fail_next(
        op::CREATE_GPU_INSTANCE,
        GpuError::NotSupported {
            what: "injected".to_owned(),
        },
    );
    backend
        .create_gpu_instance(0, profile.id, profile.placements[1])
        .unwrap_err();
    assert_eq!(passes.load(Ordering::SeqCst), 1);
}
