//! One committed upgrade fixture (`tests/fixtures/upgrade/<release>/`, made
//! by `make.sh` there): its files as committed, and the node folder they
//! become when installed for a restart in the same boot or after a reboot.
//!
//! Installing changes only what a real node would see change: the folder's
//! path (written `@BASE@` in the fixture) and, for a restart in the same
//! boot, the boot id (the fixture's becomes this boot's). After a reboot the
//! CDI and run folders (tmpfs on a node) are not installed at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gpuslice::state::ClaimRecord;

use crate::stand_ins::sections;
use crate::tools::repo_root;

/// What the fixture writes for the node's folder.
pub const PLACEHOLDER: &str = "@BASE@";
/// The boot id a reboot test gives the fixture if it was made in this very
/// boot (only on the machine that made it, before its next reboot).
const EARLIER_BOOT: &str = "00000000-0000-4000-8000-0000000b0075";

/// Which start the installed folder is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boot {
    /// gpusliced stopped and started again in the same boot.
    Same,
    /// The node rebooted: /run and the CDI folder are empty.
    Rebooted,
}

/// A committed fixture.
pub struct Fixture {
    root: PathBuf,
}

impl Fixture {
    /// `tests/fixtures/upgrade/<release>`.
    pub fn new(release: &str) -> Self {
        Self {
            root: repo_root().join("tests/fixtures/upgrade").join(release),
        }
    }

    /// Every regular file but `SOURCE`, relative, sorted (the driver root's
    /// symlinks are not files).
    pub fn files(&self) -> Vec<String> {
        let mut files = Vec::new();
        walk(&self.root, "", &mut |rel, kind| {
            if kind == Kind::File && rel != "SOURCE" {
                files.push(rel.to_owned());
            }
        });
        files.sort();
        files
    }

    /// A file as committed.
    pub fn bytes(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).unwrap_or_else(|e| panic!("read fixture {rel}: {e}"))
    }

    /// The boot the fixture was made in.
    pub fn boot_id(&self) -> String {
        let hardware: serde_json::Value =
            serde_json::from_slice(&self.bytes("sim-hardware.json")).expect("hardware JSON");
        hardware["boot_id"]
            .as_str()
            .expect("a boot id in sim-hardware.json")
            .to_owned()
    }

    /// The claim records, by uid.
    pub fn records(&self) -> BTreeMap<String, ClaimRecord> {
        self.files()
            .iter()
            .filter(|f| f.starts_with("state/claims/"))
            .map(|f| {
                let record: ClaimRecord =
                    serde_json::from_slice(&self.bytes(f)).expect("a claim record");
                (record.uid.clone(), record)
            })
            .collect()
    }

    /// The files of the fixture under `prefix` (e.g. "cdi/"), as installed
    /// in `dir` for a start in the boot `boot_id`.
    pub fn installed(&self, prefix: &str, dir: &Path, boot_id: &str) -> BTreeMap<String, Vec<u8>> {
        let from = self.boot_id();
        self.files()
            .into_iter()
            .filter(|f| f.starts_with(prefix))
            .map(|f| {
                let text = String::from_utf8(self.bytes(&f)).expect("fixture text is UTF-8");
                let text = text
                    .replace(PLACEHOLDER, &dir.display().to_string())
                    .replace(&from, boot_id);
                (f, text.into_bytes())
            })
            .collect()
    }

    /// Writes the fixture into `dir` (a canonical path) for a start after
    /// `boot`, with the stand-ins' wrappers its config names; returns the
    /// boot id its files now carry.
    pub fn install(&self, dir: &Path, boot: Boot) -> String {
        let boot_id = match boot {
            Boot::Same => this_boot(),
            Boot::Rebooted if self.boot_id() == this_boot() => EARLIER_BOOT.to_owned(),
            Boot::Rebooted => self.boot_id(),
        };
        let wiped = |rel: &str| {
            boot == Boot::Rebooted && (rel.starts_with("cdi/") || rel.starts_with("run/"))
        };
        for (rel, bytes) in self.installed("", dir, &boot_id) {
            if wiped(&rel) || rel.starts_with("root/") {
                continue;
            }
            let path = dir.join(&rel);
            let folder = path.parent().expect("a file has a folder");
            std::fs::create_dir_all(folder).expect("create a fixture folder");
            let name = path.file_name().expect("a file name").to_string_lossy();
            let mode = if rel.starts_with("state/claims/") || rel == "state/mig-ahead.json" {
                0o600
            } else {
                0o644
            };
            gpuslice_cdi::write_atomic(folder, &name, &bytes, mode).expect("install a file");
        }
        self.install_driver_root(&dir.join("root"));
        sections(dir);
        boot_id
    }

    /// The driver root, copied as it is (symlinks to `/dev/null` included).
    fn install_driver_root(&self, to: &Path) {
        let from = self.root.join("root");
        walk(&from, "", &mut |rel, kind| {
            let (src, dst) = (from.join(rel), to.join(rel));
            match kind {
                Kind::Dir => std::fs::create_dir_all(&dst).expect("create a driver folder"),
                Kind::Link => {
                    let target = std::fs::read_link(&src).expect("read a driver link");
                    std::os::unix::fs::symlink(target, &dst).expect("link a driver node");
                }
                Kind::File => {
                    std::fs::copy(&src, &dst).expect("copy a driver file");
                }
            }
        });
    }
}

/// This boot's id.
pub fn this_boot() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .expect("read the boot id")
        .trim()
        .to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    Link,
    File,
}

/// Calls `visit` for everything under `dir`, parents before children.
fn walk(dir: &Path, rel: &str, visit: &mut dyn FnMut(&str, Kind)) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("list {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.expect("a folder entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let kind = entry.file_type().expect("a file type");
        if kind.is_symlink() {
            visit(&rel, Kind::Link);
        } else if kind.is_dir() {
            visit(&rel, Kind::Dir);
            walk(&entry.path(), &rel, visit);
        } else {
            visit(&rel, Kind::File);
        }
    }
}
