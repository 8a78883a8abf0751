//! Getting one of the Go tools' binaries (`tests/tools/<tool>/build.sh`: the
//! real allocator, the admission evaluator): the script builds it, or finds
//! it cached by the hash of its inputs, under the test target's tmp dir,
//! from the Debian sid packages its `fetch.sh` unpacked. Included by each
//! tool's client (`#[path]`), so the two share one builder.
//!
//! Owns: telling "not installed here" (the packages were never fetched: a
//! test may skip) from "broken" (they were, and the build failed: always a
//! failure).

use std::path::{Path, PathBuf};
use std::process::Command;

/// build.sh's exit status when the sid packages are not unpacked.
const EXIT_MISSING: i32 = 3;

/// Why there is no binary.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NotBuilt {
    /// The toolchain or a library package is not unpacked here.
    #[error("{0}")]
    Missing(String),
    /// They are, but the build failed.
    #[error("{0}")]
    Failed(String),
}

/// The repository's top folder.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// Builds `tests/tools/<tool>` (called `name` in errors), passing `args` to
/// its build.sh after the output folder (minutes cold, seconds when Go's
/// cache is warm, nothing when this checkout built the same inputs before),
/// and returns the binary's path.
pub fn build(tool: &str, name: &str, args: &[&str]) -> Result<PathBuf, NotBuilt> {
    let root = repo_root();
    let script = root.join(format!("tests/tools/{tool}/build.sh"));
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("gpuslice-{tool}"));
    let failed = |why: String| NotBuilt::Failed(format!("building the {name} failed: {why}"));
    let output = Command::new("bash")
        .arg(&script)
        .arg(&out_dir)
        .args(args)
        .current_dir(&root)
        .output()
        .map_err(|e| failed(format!("cannot run {}: {e}", script.display())))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Its progress lines (which Go, how long) belong in the test's log.
    eprint!("{stderr}");
    match output.status.code() {
        Some(0) => {
            let stdout = String::from_utf8_lossy(&output.stdout);
            let binary = PathBuf::from(stdout.trim_end());
            if binary.is_file() {
                Ok(binary)
            } else {
                Err(failed(format!(
                    "{} printed {stdout:?}, which is not a file",
                    script.display()
                )))
            }
        }
        Some(EXIT_MISSING) => Err(NotBuilt::Missing(format!(
            "the {name}'s Go packages are not unpacked here: {}",
            last_line(&stderr)
        ))),
        _ => Err(failed(format!(
            "{} exited with {}: {}",
            script.display(),
            output.status,
            last_line(&stderr)
        ))),
    }
}

fn last_line(text: &str) -> String {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .to_owned()
}
