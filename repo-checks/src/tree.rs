//! The files of the checkout: what `git clone` gives a contributor.
//!
//! Owns: asking git for the repository's files. The files are those git
//! tracks plus new ones it does not ignore (so a file about to be committed
//! counts, and nothing built or ignored does), that exist on disk. Must not
//! change anything.

use std::path::{Path, PathBuf};
use std::process::Command;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TreeError {
    #[error("cannot run git ({0}); the repository checks list files with `git ls-files`")]
    Spawn(std::io::Error),
    #[error("`git ls-files` in {root} failed ({status}): {stderr}")]
    Failed {
        root: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("git listed a path that is not UTF-8: {0:?}")]
    NotUtf8(Vec<u8>),
}

/// The repository root (the folder above this crate).
#[must_use]
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The repository's files under `root`, `/`-separated, relative, sorted.
pub fn files(root: &Path) -> Result<Vec<String>, TreeError> {
    let output = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .map_err(TreeError::Spawn)?;
    if !output.status.success() {
        return Err(TreeError::Failed {
            root: root.display().to_string(),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    let mut files = output
        .stdout
        .split(|&b| b == 0)
        .filter(|path| !path.is_empty())
        .map(|path| {
            String::from_utf8(path.to_vec()).map_err(|e| TreeError::NotUtf8(e.into_bytes()))
        })
        .collect::<Result<Vec<String>, TreeError>>()?;
    files.retain(|path| root.join(path).is_file());
    files.sort();
    files.dedup();
    Ok(files)
}
