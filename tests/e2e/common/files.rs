//! A test's own scratch files (configs, wrappers, fixtures): written whole,
//! with no durability (the temp folder is thrown away), so not through
//! `gpuslice_cdi::atomic`, which gpuslice's durable files take.

use std::io::Write;
use std::path::Path;

/// Writes `text` to `path`, replacing what is there (the same inode, so a
/// file bind-mounted elsewhere sees it); panics naming the path.
pub fn write_text(path: &Path, text: &str) {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Writes `bytes` as the new file `path`, refusing one that is there
/// already; panics naming the path.
pub fn write_new(path: &Path, bytes: impl AsRef<[u8]>) {
    std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes.as_ref()))
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Writes `text` as gpusliced's config file in `dir`, `gpuslice.toml`
/// (where `Daemon::start_in` looks for it).
pub fn write_gpuslice_toml(dir: &Path, text: &str) {
    write_text(&dir.join("gpuslice.toml"), text);
}
