//! NVIDIA's nvidia-smi (550.163.01, from Debian's non-free component,
//! unpacked by `tests/tools/sid-fetch.sh --component non-free` into
//! `$GPUSLICE_NVIDIA_USERSPACE`, default
//! `/var/cache/gpuslice-test/nvidia-userspace`), run over the library of a
//! node's folder (`LD_LIBRARY_PATH`), and readers of what it prints.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::tools::skip;

/// Where `.ci/run` unpacks NVIDIA's user space when no variable says.
pub const DEFAULT_USERSPACE: &str = "/var/cache/gpuslice-test/nvidia-userspace";

/// NVIDIA's nvidia-smi, or `None` after the skip line (a failure under
/// `GPUSLICE_REQUIRE_TOOLS=1`).
pub fn nvidia_smi(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("GPUSLICE_NVIDIA_USERSPACE")
        .map_or_else(|| PathBuf::from(DEFAULT_USERSPACE), PathBuf::from);
    let smi = dir.join("root/usr/lib/nvidia/current/nvidia-smi");
    if smi.is_file() {
        return Some(smi);
    }
    skip(
        test,
        &format!(
            "NVIDIA's nvidia-smi is not at {} (tests/tools/sid-fetch.sh --component non-free {} \
             nvidia-smi libnvidia-ml1 unpacks it)",
            smi.display(),
            dir.display()
        ),
    );
    None
}

/// What one run printed.
#[derive(Debug)]
pub struct Printed {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `smi args` over the library in `dir`.
pub fn run(smi: &Path, dir: &Path, args: &[&str]) -> Printed {
    let out = Command::new(smi)
        .args(args)
        .env("LD_LIBRARY_PATH", dir)
        .env_remove("GPUSLICE_NVML_SIM_CONFIG")
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", smi.display()));
    Printed {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `smi args` and asks for success.
pub fn ok(smi: &Path, dir: &Path, args: &[&str]) -> String {
    let printed = run(smi, dir, args);
    assert_eq!(
        printed.code,
        Some(0),
        "nvidia-smi {args:?}: {}\n{}",
        printed.stdout,
        printed.stderr
    );
    printed.stdout
}

/// One row of `nvidia-smi mig -lgip` (its two lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileRow {
    pub gpu: u32,
    pub name: String,
    pub id: u32,
    pub free: u32,
    pub total: u32,
    pub gib: String,
    pub p2p: String,
    pub sm: u32,
    pub dec: u32,
    pub enc: u32,
    pub ce: u32,
    pub jpeg: u32,
    pub ofa: u32,
}

/// The words of a table line between its `|` borders.
fn cells(line: &str) -> Option<Vec<&str>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split_whitespace().collect())
}

/// The rows of `nvidia-smi mig -lgip`.
pub fn profile_rows(printed: &str) -> Vec<ProfileRow> {
    let lines: Vec<&str> = printed.lines().collect();
    let mut rows = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(first) = cells(line) else { continue };
        let [gpu, mig, name, id, instances, gib, p2p, sm, dec, enc] = first.as_slice() else {
            continue;
        };
        if *mig != "MIG" {
            continue;
        }
        let second = lines.get(i + 1).and_then(|l| cells(l)).unwrap_or_default();
        let [ce, jpeg, ofa] = second.as_slice() else {
            continue;
        };
        let (free, total) = instances.split_once('/').unwrap_or(("x", "x"));
        let n = |s: &str| s.parse::<u32>().unwrap_or(u32::MAX);
        rows.push(ProfileRow {
            gpu: n(gpu),
            name: (*name).to_owned(),
            id: n(id),
            free: n(free),
            total: n(total),
            gib: (*gib).to_owned(),
            p2p: (*p2p).to_owned(),
            sm: n(sm),
            dec: n(dec),
            enc: n(enc),
            ce: n(ce),
            jpeg: n(jpeg),
            ofa: n(ofa),
        });
    }
    rows
}

/// `Key : value` fields of `nvidia-smi -q` for one GPU, in order (the
/// first GPU's when several): the key with the section it sits in,
/// e.g. "MIG Mode/Current", "PCI/Device Id", "FB Memory Usage/Total".
pub fn q_fields(printed: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let mut sections: Vec<(usize, String)> = Vec::new();
    let mut gpus = 0;
    for line in printed.lines() {
        if line.starts_with("GPU ") {
            gpus += 1;
            if gpus > 1 {
                break;
            }
            continue;
        }
        let depth = line.len() - line.trim_start().len();
        let text = line.trim();
        if text.is_empty() || gpus == 0 {
            continue;
        }
        sections.retain(|(d, _)| *d < depth);
        match text.split_once(" : ") {
            Some((key, value)) => {
                let mut path: Vec<&str> = sections.iter().map(|(_, s)| s.as_str()).collect();
                path.push(key.trim());
                fields.push((path.join("/"), value.trim().to_owned()));
            }
            None if !text.ends_with(':') && !text.contains(':') => {
                sections.push((depth, text.to_owned()));
            }
            None => {
                let key = text.trim_end_matches(':').trim();
                sections.push((depth, key.to_owned()));
            }
        }
    }
    fields
}

/// The value of `key` in `-q` fields.
pub fn field<'a>(fields: &'a [(String, String)], key: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::{field, profile_rows, q_fields};

    #[test]
    fn lgip_rows_are_read_from_their_two_lines() {
        let printed = "\
|   0  MIG 1g.10gb       19     7/7        9.75       No     16     1     0   |
|                                                             1     1     0   |
+-----------------------------------------------------------------------------+
|   0  MIG 7g.80gb        0     1/1        79.25      No     132    7     0   |
|                                                             8     7     1   |
";
        let rows = profile_rows(printed);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].name.as_str(), rows[0].id, rows[0].gib.as_str()),
            ("1g.10gb", 19, "9.75")
        );
        assert_eq!((rows[1].ce, rows[1].jpeg, rows[1].ofa), (8, 7, 1));
    }

    #[test]
    fn q_fields_carry_their_section() {
        let printed = "\
==============NVSMI LOG==============

Attached GPUs                             : 1
GPU 00000000:03:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    MIG Mode
        Current                           : Enabled
    PCI
        Device Id                         : 0x233010DE
    FB Memory Usage
        Total                             : 81559 MiB
";
        let fields = q_fields(printed);
        assert_eq!(
            field(&fields, "Product Name"),
            Some("NVIDIA H100 80GB HBM3")
        );
        assert_eq!(field(&fields, "MIG Mode/Current"), Some("Enabled"));
        assert_eq!(field(&fields, "PCI/Device Id"), Some("0x233010DE"));
        assert_eq!(field(&fields, "FB Memory Usage/Total"), Some("81559 MiB"));
    }
}
