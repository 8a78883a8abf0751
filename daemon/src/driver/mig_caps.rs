//! TEMPORARY minimal reader of /proc/driver/nvidia-caps/mig-minors; the full
//! one lands from branch work/gpu.

use std::collections::HashMap;
use std::path::Path;

/// Capability minors of MIG instances, by (gpu minor, gi, ci).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigCaps {
    gi: HashMap<(u32, u32), u32>,
    ci: HashMap<(u32, u32, u32), u32>,
}

impl MigCaps {
    /// Reads `<driver_root>/proc/driver/nvidia-caps/mig-minors`; empty if absent.
    pub fn read(driver_root: &Path) -> Self {
        let mut caps = Self::default();
        let path = driver_root.join("proc/driver/nvidia-caps/mig-minors");
        let Ok(text) = std::fs::read_to_string(path) else {
            return caps;
        };
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(name), Some(minor)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(minor) = minor.parse::<u32>() else {
                continue;
            };
            let parts: Vec<&str> = name.split('/').collect();
            let num = |s: &str, p: &str| s.strip_prefix(p).and_then(|n| n.parse::<u32>().ok());
            match parts.as_slice() {
                [g, i, "access"] => {
                    if let (Some(g), Some(i)) = (num(g, "gpu"), num(i, "gi")) {
                        caps.gi.insert((g, i), minor);
                    }
                }
                [g, i, c, "access"] => {
                    if let (Some(g), Some(i), Some(c)) = (num(g, "gpu"), num(i, "gi"), num(c, "ci"))
                    {
                        caps.ci.insert((g, i, c), minor);
                    }
                }
                _ => {}
            }
        }
        caps
    }

    /// The cap minor granting access to GPU instance `gi` of GPU `gpu`.
    pub fn gpu_instance(&self, gpu: u32, gi: u32) -> Option<u32> {
        self.gi.get(&(gpu, gi)).copied()
    }

    /// The cap minor granting access to compute instance `ci` of `gi`.
    pub fn compute_instance(&self, gpu: u32, gi: u32, ci: u32) -> Option<u32> {
        self.ci.get(&(gpu, gi, ci)).copied()
    }
}
