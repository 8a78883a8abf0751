//! The floor of a prepare, shared by the benches: one durable write as the
//! atomic writer does it, with raw std calls.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// temp file (create_new), write_all, fsync, rename, fsync dir.
pub fn durable_write(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .expect("create a floor temp file");
    file.write_all(bytes).expect("write a floor file");
    file.sync_all().expect("fsync a floor file");
    drop(file);
    std::fs::rename(&tmp, dir.join(name)).expect("rename a floor file");
    sync_dir(dir);
}

/// fsync of a folder.
pub fn sync_dir(dir: &Path) {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .expect("fsync a folder");
}
