use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Problem, check};
use crate::config::Config;

/// A config parsed as if it were `dir/gpuslice.toml`, on a folder that
/// exists (so driver_root, "." by default here, is fine).
fn config(dir: &Path, text: &str) -> Config {
    Config::parse(text, &dir.join("gpuslice.toml"), dir).unwrap()
}

fn sim(dir: &Path, gpus: &str, rest: &str) -> Config {
    config(
        dir,
        &format!(
            "driver_root = \".\"\n{rest}\n[backend]\nkind = \"sim\"\n[backend.sim]\ngpus = [{gpus}]\n"
        ),
    )
}

fn keys(problems: &[Problem]) -> Vec<&'static str> {
    problems.iter().map(|p| p.key).collect()
}

#[test]
fn a_layout_that_does_not_fit_its_model_is_a_problem_naming_gpu_and_model() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[mig]\nadvertise = \"layout\"\n[[mig.gpu]]\nindex = 1\n\
                layout = [\"7g.80gb\", \"1g.10gb\"]\n";
    let report = check(&sim(dir.path(), "\"H100-80GB\", \"H100-80GB\"", text));
    assert_eq!(keys(&report.problems), ["mig.gpu.layout"], "{report:?}");
    let text = report.problems[0].to_string();
    assert!(
        text.starts_with("config key mig.gpu.layout: gpu-1 (H100-80GB): layout cannot be offered:"),
        "{text}"
    );
    assert!(text.contains("ask for fewer or smaller profiles"), "{text}");
    assert!(report.unchecked.is_empty());
}

#[test]
fn a_profile_the_model_lacks_is_a_problem_and_the_catch_all_entry_is_checked_per_gpu() {
    let dir = tempfile::tempdir().unwrap();
    // 7g.80gb is the H100's whole GPU; the A100-40GB's is 7g.40gb.
    let text = "[mig]\nadvertise = \"layout\"\n[[mig.gpu]]\nlayout = [\"7g.80gb\"]\n";
    let report = check(&sim(dir.path(), "\"H100-80GB\", \"A100-40GB\"", text));
    assert_eq!(keys(&report.problems), ["mig.gpu.layout"], "{report:?}");
    let text = report.problems[0].to_string();
    assert!(text.contains("gpu-1 (A100-40GB)"), "{text}");
    assert!(
        text.contains("7g.80gb") && text.contains("7g.40gb"),
        "{text}"
    );
}

#[test]
fn an_entry_for_a_gpu_the_node_lacks_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[mig]\nadvertise = \"layout\"\n[[mig.gpu]]\nindex = 4\nlayout = [\"1g.10gb\"]\n\
                [[mig.gpu]]\nuuid = \"GPU-nope\"\nlayout = [\"1g.10gb\"]\n";
    let report = check(&sim(dir.path(), "\"H100-80GB\", \"H100-80GB\"", text));
    assert_eq!(keys(&report.problems), ["mig.gpu", "mig.gpu"], "{report:?}");
    assert!(
        report.problems[0].text.contains("entry 0 selects index 4")
            && report.problems[0].text.contains("indexes 0 to 1"),
        "{report:?}"
    );
    assert!(
        report.problems[1]
            .text
            .contains("entry 1 selects uuid GPU-nope"),
        "{report:?}"
    );
}

#[test]
fn layouts_that_fit_and_partitionable_mode_are_fine() {
    let dir = tempfile::tempdir().unwrap();
    let fits = "[mig]\nadvertise = \"layout\"\n[[mig.gpu]]\nindex = 0\n\
                layout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]\n";
    assert_eq!(
        check(&sim(dir.path(), "\"H100-80GB\"", fits)),
        Default::default()
    );
    let partitionable = "[mig]\nadvertise = \"partitionable\"\n[[mig.gpu]]\nindex = 0\n";
    let report = check(&sim(dir.path(), "\"H100-80GB\"", partitionable));
    assert_eq!(report, Default::default());
}

#[test]
fn with_nvml_the_layouts_are_named_as_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let text = "driver_root = \".\"\n[mig]\n[[mig.gpu]]\nlayout = [\"9g.999gb\"]\n";
    let report = check(&config(dir.path(), text));
    assert!(report.problems.is_empty(), "{report:?}");
    assert_eq!(report.unchecked.len(), 1);
    assert!(
        report.unchecked[0].contains("needs the GPUs' models"),
        "{report:?}"
    );
    let plain = check(&config(dir.path(), "driver_root = \".\"\n"));
    assert_eq!(plain, Default::default());
}

#[test]
fn tools_the_config_names_must_exist_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("tool");
    gpuslice_cdi::atomic::write_atomic(dir.path(), "tool", b"#!/bin/sh\n", 0o644).unwrap();
    let text = "mps.control_program = \"missing\"\ntimeslice.nvidia_smi = \"tool\"\n\
                cdi_hook = \"tool\"\n";
    let text = text.replace("mps.control_program", "[mps]\ncontrol_program");
    let text = text.replace("timeslice.nvidia_smi", "[timeslice]\nnvidia_smi");
    // cdi_hook is a top-level key: put it first.
    let text = format!(
        "cdi_hook = \"tool\"\n{}",
        text.replace("cdi_hook = \"tool\"\n", "")
    );
    let report = check(&sim(dir.path(), "\"H100-80GB\"", &text));
    assert_eq!(
        keys(&report.problems),
        ["mps.control_program", "timeslice.nvidia_smi", "cdi_hook"],
        "{report:?}"
    );
    assert!(
        report.problems[0].text.contains("missing cannot be used"),
        "{report:?}"
    );
    assert!(
        report.problems[1]
            .text
            .contains("not executable (chmod +x)"),
        "{report:?}"
    );
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let report = check(&sim(dir.path(), "\"H100-80GB\"", &text));
    assert_eq!(
        keys(&report.problems),
        ["mps.control_program"],
        "{report:?}"
    );
}

#[test]
fn folders_group_library_and_log_filter_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let text = "driver_root = \"nowhere\"\ndev_root = \"gpuslice.toml\"\n\
                socket_group = \"no-such-group-gpuslice\"\n[backend.nvml]\n\
                library = \"libnvidia-ml.so.1\"\n[metrics]\ntextfile = \"gone/gpuslice.prom\"\n\
                [log]\nlevel = \"gpuslice=loud\"\n";
    gpuslice_cdi::atomic::write_atomic(dir.path(), "gpuslice.toml", b"", 0o644).unwrap();
    let report = check(&config(dir.path(), text));
    assert_eq!(
        keys(&report.problems),
        [
            "backend.nvml.library",
            "driver_root",
            "dev_root",
            "metrics.textfile",
            "socket_group",
            "log.level"
        ],
        "{report:?}"
    );
    let said: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
    assert!(said[2].contains("is not a folder"), "{said:?}");
    assert!(said[4].contains("does not exist; create it"), "{said:?}");
    assert!(said[5].contains("not a valid filter"), "{said:?}");
}

#[test]
fn the_shipped_sim_config_passes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gpuslice-sim.toml");
    let config = Config::load(&path).unwrap();
    let report = check(&config);
    assert!(report.problems.is_empty(), "{report:?}");
}
