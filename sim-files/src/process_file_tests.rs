//! The process files on their own: written whole and read back while the
//! process lives, a reused pid not taken for it, what is no process file
//! skipped and handed back, and the `/proc/<pid>/stat` reader.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command};

use super::{
    Folder, SimFileError, SimProcessFile, Skipped, parse_stat, proc_start_time, process_file_path,
    read_folder, read_live, remove_process_file, write_process_file,
};

/// A `sleep` child, killed and reaped when dropped.
struct Sleeper(Child);

impl Sleeper {
    fn spawn() -> Self {
        Self(Command::new("sleep").arg("1000").spawn().unwrap())
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn file(pid: u32, start_time: Option<u64>) -> SimProcessFile {
    SimProcessFile {
        pid,
        start_time,
        device: "GPU-0".to_owned(),
        memory_bytes: 3 << 30,
        sm_percent: 40,
        mps_client: false,
    }
}

/// Writes `text` as `dir/name`, as anything but the writer would.
fn plant(dir: &Path, name: &str, text: &str) {
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(dir.join(name))
        .unwrap();
    out.write_all(text.as_bytes()).unwrap();
}

#[test]
fn a_file_is_read_back_while_its_process_lives() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("processes");
    assert_eq!(
        read_folder(&folder),
        Ok(Folder::default()),
        "no folder: none"
    );
    let child = Sleeper::spawn();
    let pid = child.0.id();
    let written = file(pid, proc_start_time(pid));
    write_process_file(&folder, &written).unwrap();
    let path = process_file_path(&folder, pid);
    assert_eq!(path, folder.join(format!("{pid}.json")));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with("}\n"), "{text}");
    assert_eq!(
        serde_json::from_str::<SimProcessFile>(&text).unwrap(),
        written
    );
    assert_eq!(read_live(&folder).unwrap(), std::slice::from_ref(&written));
    // Another process than the one the file was written for has the pid.
    let reused = file(pid, written.start_time.map(|t| t + 1));
    write_process_file(&folder, &reused).unwrap();
    assert_eq!(read_live(&folder).unwrap(), []);
    // Without a start time, a live pid is enough.
    write_process_file(&folder, &file(pid, None)).unwrap();
    assert_eq!(read_live(&folder).unwrap(), [file(pid, None)]);
    drop(child);
    assert_eq!(
        read_live(&folder).unwrap(),
        [],
        "a dead process is not listed"
    );
    assert_eq!(remove_process_file(&folder, pid), Ok(true));
    assert_eq!(remove_process_file(&folder, pid), Ok(false));
}

#[test]
fn what_is_no_process_file_is_skipped_and_handed_back() {
    let dir = tempfile::tempdir().unwrap();
    let me = std::process::id();
    write_process_file(dir.path(), &file(me, None)).unwrap();
    plant(dir.path(), "garbage.json", "{ not json");
    plant(
        dir.path(),
        "extra.json",
        r#"{"pid": 1, "device": "GPU-x", "memory_bytes": 1, "sm_percent": 0, "x": 1}"#,
    );
    plant(dir.path(), ".hidden.json", "{}");
    plant(dir.path(), "notes.txt", "not a process");
    std::fs::create_dir(dir.path().join("folder.json")).unwrap();
    let found = read_folder(dir.path()).unwrap();
    assert_eq!(found.live, [file(me, None)]);
    let names: Vec<(&str, bool)> = found
        .skipped
        .iter()
        .map(|s| match s {
            Skipped::Unreadable { file, .. } => (file.as_str(), false),
            Skipped::NotAProcess { file, .. } => (file.as_str(), true),
        })
        .collect();
    assert_eq!(
        names,
        [
            ("extra.json", true),
            ("folder.json", false),
            ("garbage.json", true)
        ]
    );
    let not_a_folder = dir.path().join("notes.txt");
    let err = read_live(&not_a_folder).unwrap_err();
    assert!(
        matches!(&err, SimFileError { reason, .. } if reason.starts_with("cannot list: ")),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("simulated GPU state {}: ", not_a_folder.display())),
        "{err}"
    );
}

#[test]
fn stat_lines_give_state_and_start_time() {
    let line = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 100 10";
    assert_eq!(parse_stat(line), Some(('S', 987_654)));
    assert_eq!(parse_stat("42 (short) S 1 2"), None);
    assert_eq!(parse_stat("no parenthesis"), None);
    assert!(proc_start_time(std::process::id()).is_some());
    assert_eq!(proc_start_time(u32::MAX), None);
}
