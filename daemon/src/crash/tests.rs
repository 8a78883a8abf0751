use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// Every source file (this module and its tests left out), as the path
/// from the workspace root and the text.
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["daemon/src", "cdi/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
        .into_iter()
        .map(|file| {
            let shown = file.strip_prefix(&root).unwrap().display().to_string();
            (shown, file)
        })
        .filter(|(shown, _)| {
            shown != "daemon/src/crash.rs" && !shown.starts_with("daemon/src/crash/tests")
        })
        .map(|(shown, file)| (shown, std::fs::read_to_string(file).unwrap()))
        .collect()
}

/// Every string literal shaped like a point name in the sources, with the
/// files it is in.
fn points_in_sources() -> BTreeMap<String, Vec<String>> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (shown, text) in sources() {
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
fn hook_names_are_unique_say_their_layer_and_are_no_crash_points() {
    let mut seen = std::collections::BTreeSet::new();
    for name in HOOKS {
        assert!(seen.insert(name), "hook {name} is listed twice");
        assert!(
            hook_shaped(name),
            "hook {name}: name it <layer>.<place>, lower case, not after_<step> (that is a \
             crash point's name)"
        );
    }
}

/// `<layer>.<place>`, lower case and underscores; not a crash point's shape.
fn hook_shaped(text: &str) -> bool {
    let Some((layer, place)) = text.split_once('.') else {
        return false;
    };
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    word(layer) && word(place) && !point_shaped(text)
}

/// The name of every `hook("…")` call in the sources, with the files it is
/// in.
fn hooks_in_sources() -> BTreeMap<String, Vec<String>> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (shown, text) in sources() {
        for (at, call) in text.match_indices("hook(\"") {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &text[at + call.len()..];
            let name = rest.split('"').next().unwrap_or_default();
            found
                .entry(name.to_owned())
                .or_default()
                .push(shown.clone());
        }
    }
    found
}

#[test]
fn every_listed_hook_marks_exactly_one_place_and_every_place_is_listed() {
    let found = hooks_in_sources();
    for name in HOOKS {
        match found.get(*name).map(Vec::as_slice) {
            None | Some([]) => panic!(
                "hook {name} is listed in crash::HOOKS but marks no place in the sources: \
                 remove it from the list"
            ),
            Some([_]) => {}
            Some(many) => panic!(
                "hook {name} marks {} places ({many:?}): a test that arms it must know where \
                 it runs; give each place a name of its own",
                many.len()
            ),
        }
    }
    for (name, files) in &found {
        assert!(
            HOOKS.contains(&name.as_str()),
            "hook({name:?}) (in {files:?}) is not in crash::HOOKS: list it"
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
    let backend = crate::gpu::observed::observe(sim.clone());
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

#[test]
fn an_armed_hook_acts_at_its_first_pass_on_the_arming_thread_only() {
    use std::sync::atomic::{AtomicU32, Ordering};

    let name = HOOKS[0];
    let acted = Arc::new(AtomicU32::new(0));
    let counted = acted.clone();
    let armed = test_hook::arm(name, move || {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    std::thread::spawn(move || hook(name)).join().unwrap();
    assert_eq!((armed.passes(), acted.load(Ordering::SeqCst)), (0, 0));
    hook(name);
    hook(name);
    assert_eq!((armed.passes(), acted.load(Ordering::SeqCst)), (2, 1));
    drop(armed);
    hook(name);
    assert_eq!(acted.load(Ordering::SeqCst), 1, "disarmed on drop");
}
