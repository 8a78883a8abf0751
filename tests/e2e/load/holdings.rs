//! Who may hold what of a GPU together: the rule every check of the load
//! applies to a set of claims seen at one instant. Pure.
//!
//! A GPU held whole belongs to one claim; MIG slices of one GPU must not
//! overlap, and exclude the whole GPU; claims share a whole GPU only the
//! same way: under one MPS daemon (same devices, same thread percentage,
//! their memory shares within the GPU's memory) or time-sliced at one
//! interval. Never MPS beside time-slicing, never exclusive beside anything.

use std::collections::BTreeMap;

use super::node::{Catalogue, Device};
use super::workload::{Plan, Sharing};

/// What a claim takes of one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    Whole,
    Slice { start: u32, size: u32 },
    Mps { devices: Vec<String>, atp: u8 },
    TimeSlicing(&'static str),
}

impl Hold {
    fn words(&self) -> String {
        match self {
            Self::Whole => "whole".to_owned(),
            Self::Slice { start, size } => format!("slices {start}..{}", start + size),
            Self::Mps { devices, atp } => format!("MPS {atp}% over {}", devices.join("+")),
            Self::TimeSlicing(i) => format!("time-slicing {i}"),
        }
    }

    fn conflicts(&self, other: &Self, rules: Rules) -> bool {
        let shared = |h: &Self| matches!(h, Self::Mps { .. } | Self::TimeSlicing(_));
        if rules == Rules::Table && shared(self) && shared(other) {
            return false;
        }
        match (self, other) {
            (Self::Slice { start: a, size: m }, Self::Slice { start: b, size: n }) => {
                a < &(b + n) && b < &(a + m)
            }
            (Self::Mps { devices: d, atp: a }, Self::Mps { devices: e, atp: b }) => {
                d != e || a != b
            }
            (Self::TimeSlicing(a), Self::TimeSlicing(b)) => a != b,
            _ => true,
        }
    }
}

/// Which rules a set of claims seen together must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// Every rule: claims that are prepared (ListClaims, a quiet node).
    All,
    /// The claim table's rules only, for holders that may still be mid-way
    /// through a prepare (GetInventory): a device is reserved before the
    /// sharing layer agrees to how it is shared (interval, MPS daemon,
    /// memory), so two sharing claims may both hold a GPU for a moment until
    /// one of them is refused. Whole GPUs and slices are still never shared.
    Table,
}

/// What `plan` takes of each GPU (index into the catalogue's GPUs).
pub fn holds(plan: &Plan, node: &Catalogue) -> Vec<(usize, Hold)> {
    let mut devices = plan.devices.clone();
    devices.sort();
    plan.devices
        .iter()
        .filter_map(|name| match node.device(name)? {
            Device::Slice(i) => {
                let s = &node.slices[i];
                Some((
                    s.parent,
                    Hold::Slice {
                        start: s.start,
                        size: s.size,
                    },
                ))
            }
            Device::Gpu(i) => Some((
                i,
                match &plan.sharing {
                    Sharing::Alone => Hold::Whole,
                    Sharing::Mps { atp, .. } => Hold::Mps {
                        devices: devices.clone(),
                        atp: *atp,
                    },
                    Sharing::TimeSlicing(interval) => Hold::TimeSlicing(interval),
                },
            )),
        })
        .collect()
}

/// Every pair of `claims` that could not hold their devices together, and
/// every GPU whose memory shares exceed its memory, in words.
pub fn violations<'a>(
    claims: impl IntoIterator<Item = &'a Plan>,
    node: &Catalogue,
    rules: Rules,
    seen_in: &str,
) -> Vec<String> {
    let mut by_gpu: BTreeMap<usize, Vec<(&str, Hold, u64)>> = BTreeMap::new();
    for plan in claims {
        for (gpu, hold) in holds(plan, node) {
            let share = match hold {
                Hold::Mps { .. } => plan.memory_share(),
                _ => 0,
            };
            by_gpu
                .entry(gpu)
                .or_default()
                .push((plan.uid.as_str(), hold, share));
        }
    }
    let mut out = Vec::new();
    for (gpu, list) in &by_gpu {
        let name = &node.gpus[*gpu].name;
        for (i, (a, hold_a, _)) in list.iter().enumerate() {
            for (b, hold_b, _) in &list[i + 1..] {
                if a != b && hold_a.conflicts(hold_b, rules) {
                    out.push(format!(
                        "{seen_in}: {name} held by claim {a} ({}) and claim {b} ({}) at once",
                        hold_a.words(),
                        hold_b.words()
                    ));
                }
            }
        }
        let promised: u64 = list.iter().map(|(_, _, s)| s).sum();
        if rules == Rules::All && promised > node.gpus[*gpu].memory {
            out.push(format!(
                "{seen_in}: {name} has {promised} bytes of memory shares promised, over its {}",
                node.gpus[*gpu].memory
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::node::{Gpu, Slice};
    use super::super::workload::Expect;
    use super::*;

    fn node() -> Catalogue {
        let gpu = |index: usize| Gpu {
            name: format!("gpu-{index}"),
            uuid: format!("GPU-{index}"),
            index,
            memory: 80 << 30,
            mig_managed: false,
        };
        let slice = |name: &str, start, size| Slice {
            name: name.to_owned(),
            parent: 0,
            start,
            size,
        };
        Catalogue::new(
            vec![gpu(0), gpu(1)],
            vec![slice("s0", 0, 4), slice("s4", 4, 2), slice("s2", 2, 4)],
        )
    }

    fn plan(uid: &str, devices: &[&str], sharing: Sharing) -> Plan {
        Plan {
            uid: uid.to_owned(),
            devices: devices.iter().map(|d| (*d).to_owned()).collect(),
            sharing,
            on_slices: false,
            expect: Expect::MayPrepare,
        }
    }

    fn mps(atp: u8, memory_gib: Option<u64>) -> Sharing {
        Sharing::Mps { atp, memory_gib }
    }

    #[test]
    fn claims_that_may_hold_together_pass() {
        let node = node();
        let fine = [
            plan("a", &["s0"], Sharing::Alone),
            plan("b", &["s4"], Sharing::Alone),
            plan("c", &["gpu-1"], mps(50, Some(40))),
            plan("d", &["gpu-1"], mps(50, Some(40))),
        ];
        assert_eq!(
            violations(&fine, &node, Rules::All, "t"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_rule_can_fail() {
        let node = node();
        let cases = [
            (
                plan("a", &["gpu-0"], Sharing::Alone),
                plan("b", &["s4"], Sharing::Alone),
            ),
            (
                plan("a", &["s0"], Sharing::Alone),
                plan("b", &["s2"], Sharing::Alone),
            ),
            (
                plan("a", &["gpu-1"], mps(50, None)),
                plan("b", &["gpu-1"], mps(60, None)),
            ),
            (
                plan("a", &["gpu-1"], mps(50, None)),
                plan("b", &["gpu-1", "gpu-0"], mps(50, None)),
            ),
            (
                plan("a", &["gpu-1"], mps(50, None)),
                plan("b", &["gpu-1"], Sharing::TimeSlicing("Long")),
            ),
            (
                plan("a", &["gpu-1"], Sharing::TimeSlicing("Short")),
                plan("b", &["gpu-1"], Sharing::TimeSlicing("Long")),
            ),
            (
                plan("a", &["gpu-1"], mps(50, Some(48))),
                plan("b", &["gpu-1"], mps(50, Some(40))),
            ),
        ];
        for (a, b) in cases {
            let found = violations([&a, &b], &node, Rules::All, "t");
            assert_eq!(found.len(), 1, "{a:?} and {b:?}: {found:?}");
        }
    }

    #[test]
    fn the_table_rules_let_sharing_claims_meet_mid_prepare() {
        let node = node();
        let a = plan("a", &["gpu-1"], mps(50, None));
        let b = plan("b", &["gpu-1"], Sharing::TimeSlicing("Long"));
        assert!(violations([&a, &b], &node, Rules::Table, "t").is_empty());
        let c = plan("c", &["gpu-1"], Sharing::Alone);
        assert_eq!(violations([&a, &c], &node, Rules::Table, "t").len(), 1);
    }
}
