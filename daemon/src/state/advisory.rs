//! The writer of advisory files in the state folder (`activity.json`,
//! `limits.json`, `usage-history.json`): a temp file, then a rename, so a reader never sees
//! half a file, but no fsync, so not the durable writer of records and
//! specs. A crash may lose the last write; the files' owners say what that
//! costs.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A failed write of an advisory file.
#[derive(Debug, thiserror::Error)]
#[error("writing {path}")]
pub struct SaveError {
    /// The file (or its temp file).
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

/// Writes `bytes` as `dir/name` (mode 0644) through `.name.tmp-<pid>`. On
/// failure the temp file is removed and the error names the path it met.
pub fn write_advisory(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), SaveError> {
    let target = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(&tmp)
        .map_err(|source| SaveError {
            path: tmp.clone(),
            source,
        })?;
    let written = out.write_all(bytes).map_err(|e| (tmp.clone(), e));
    drop(out);
    if let Err(e) =
        written.and_then(|()| std::fs::rename(&tmp, &target).map_err(|e| (target.clone(), e)))
    {
        let _ = std::fs::remove_file(&tmp);
        let (path, source) = e;
        return Err(SaveError { path, source });
    }
    Ok(())
}
