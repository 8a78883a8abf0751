//! The simulator's process files, as `sim exec` writes them: a private,
//! minimal stand-in with the signatures of the helpers the simulator's room
//! is adding to `gpuslice::gpu::sim::process_file` (write, remove, start
//! time), to be replaced by them once they land.

use std::io::ErrorKind;
use std::path::Path;

use anyhow::Context;
use gpuslice::gpu::sim::process_file::{SimProcessFile, process_file_path};

/// Writes `process` as `<dir>/<pid>.json` (temp file, rename), creating `dir`.
pub fn write_process_file(dir: &Path, process: &SimProcessFile) -> anyhow::Result<()> {
    let mut json = serde_json::to_vec_pretty(process)?;
    json.push(b'\n');
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = format!("{}.json", process.pid);
    gpuslice_cdi::atomic::write_atomic(dir, &name, &json, 0o644)
        .with_context(|| format!("cannot write {}", dir.join(&name).display()))
}

/// Removes the file of `pid`; `Ok(false)` when there was none.
pub fn remove_process_file(dir: &Path, pid: u32) -> anyhow::Result<bool> {
    let path = process_file_path(dir, pid);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err).with_context(|| format!("cannot remove {}", path.display())),
    }
}

/// Field 22 of `/proc/<pid>/stat` (start time, clock ticks since boot).
pub fn proc_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    start_time(&stat)
}

/// The start time in a stat line; fields are counted after the command's
/// last ')' (a command may hold spaces and parentheses).
fn start_time(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{proc_start_time, remove_process_file, start_time, write_process_file};
    use gpuslice::gpu::sim::process_file::SimProcessFile;

    #[test]
    fn the_start_time_is_field_22_even_after_a_command_with_parentheses() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 200 18446744073709551615";
        assert_eq!(start_time(stat), Some(987_654));
        assert_eq!(start_time("4242 (x) S 1"), None);
        assert!(proc_start_time(std::process::id()).is_some());
    }

    #[test]
    fn a_file_is_written_read_back_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("sim-processes");
        let file = SimProcessFile {
            pid: 4242,
            start_time: Some(7),
            device: "GPU-1".into(),
            memory_bytes: 1 << 30,
            sm_percent: 30,
            mps_client: true,
        };
        write_process_file(&folder, &file).unwrap();
        let text = std::fs::read_to_string(folder.join("4242.json")).unwrap();
        let back: SimProcessFile = serde_json::from_str(&text).unwrap();
        assert_eq!(back, file);
        assert!(remove_process_file(&folder, 4242).unwrap());
        assert!(!remove_process_file(&folder, 4242).unwrap());
    }
}
