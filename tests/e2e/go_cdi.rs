//! The reference Go CDI library as a second validator: `tests/tools/cdicheck`
//! built offline in GOPATH mode against Debian's
//! golang-github-container-orchestrated-devices-container-device-interface-dev
//! (the library podman 4.3 and containerd 1.7 link), once per test run, into
//! the target dir. Every spec the e2e tests check goes through it (see
//! `cdi_schema::assert_all_valid`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::tools::{built_once, go_build, run, which};

/// Where Debian's package puts the library's sources.
const GOPATH: &str = "/usr/share/gocode";
const LIBRARY: &str = "src/github.com/container-orchestrated-devices/container-device-interface";

/// The built checker, or why it cannot be built here.
pub fn checker() -> Result<&'static Path, &'static str> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built_once(&BUILT, build)
}

fn build() -> Result<PathBuf, String> {
    let go = which("go").ok_or("`go` is not installed (apt-get install golang-go)")?;
    if !Path::new(GOPATH).join(LIBRARY).is_dir() {
        return Err(format!(
            "the Go CDI library is not in {GOPATH}/{LIBRARY} (apt-get install \
             golang-github-container-orchestrated-devices-container-device-interface-dev)"
        ));
    }
    go_build(&go, "cdicheck", GOPATH).map_err(|e| format!("building the Go CDI checker: {e}"))
}

/// The checker's verdict on `files`: Ok(its report) when the library loads
/// every one, Err(its report) when it rejects any. `inject` also applies each
/// device's edits (needs real device nodes as hostPaths).
pub fn check(checker: &Path, files: &[PathBuf], inject: bool) -> Result<String, String> {
    let mut cmd = Command::new(checker);
    if inject {
        cmd.arg("-inject");
    }
    run(cmd.args(files))
}

#[test]
fn the_go_check_can_fail() {
    let checker = match checker() {
        Ok(c) => c,
        Err(why) => return crate::tools::skip("the_go_check_can_fail", why),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let good = dir.path().join("good.json");
    let bad = dir.path().join("bad.json");
    let spec = |version: &str, extra: &str| {
        format!(
            r#"{{"cdiVersion":"{version}","kind":"k8s.gpuslice.dev/claim",{extra}
               "devices":[{{"name":"d0","containerEdits":{{"env":["A=1"]}}}}]}}"#
        )
    };
    for (path, text) in [
        (&good, spec("0.5.0", "")),
        // 0.6.0 and its `annotations` field are newer than podman 4.3 reads.
        (&bad, spec("0.6.0", r#""annotations":{"a":"b"},"#)),
    ] {
        crate::common::files::write_new(path, text);
    }
    let report = check(checker, &[good], true).expect("a 0.5.0 spec loads");
    assert!(
        report.contains("OK ") && report.contains("k8s.gpuslice.dev/claim=d0"),
        "{report}"
    );
    let report = check(checker, &[bad], false).expect_err("a 0.6.0 spec is refused");
    assert!(report.contains("INVALID"), "{report}");
}
