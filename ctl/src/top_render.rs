//! What `gpuslicectl top` shows, as lines: a pure function of one
//! GetActivity reply, the node's name and GPU count, the time and the
//! terminal's width, so the live view and the once-through print are the
//! same text and a test reads it exactly. The live view adds its key line
//! ([`key_line`]) under the header; the once-through print has none.

use clap::ValueEnum;
use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_quantity::show::cell;

use crate::render::table;
use crate::units::{ago, span};

/// The order of the claim rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortKey {
    /// Most memory used first.
    Memory,
    /// Highest SM utilization first.
    Sm,
    /// Longest without GPU activity first.
    Idle,
    /// By namespace/name, then device.
    Name,
}

/// What the header says besides the reply.
#[derive(Debug, Clone)]
pub struct Node {
    /// The host name.
    pub name: String,
    /// GPUs in the inventory (GetStatus).
    pub gpus: u32,
}

/// One (claim, device) row before formatting.
struct Row<'a> {
    claim: &'a pb::ClaimActivity,
    device: Option<&'a pb::DeviceActivity>,
}

impl Row<'_> {
    fn label(&self) -> String {
        let r = self.claim.claim.clone().unwrap_or_default();
        format!("{}/{}", r.namespace, r.name)
    }

    fn memory(&self) -> u64 {
        self.device.map_or(0, |d| d.memory_used_bytes)
    }

    fn sm(&self) -> i64 {
        self.device.and_then(|d| d.sm_percent).map_or(-1, i64::from)
    }

    fn cells(&self, now: i64) -> Vec<String> {
        if self.claim.not_sampled_yet {
            return self.not_sampled_cells();
        }
        let (device, sharing, procs, memory, sm) = match self.device {
            Some(d) => (
                d.device.clone(),
                d.sharing.clone(),
                d.processes.len().to_string(),
                memory_cell(d),
                d.sm_percent
                    .map_or_else(|| "-".to_owned(), |p| p.to_string()),
            ),
            None => (
                "-".into(),
                self.claim.kind.clone(),
                "0".into(),
                "-".into(),
                "-".into(),
            ),
        };
        let last = ago(self.claim.last_active, now);
        vec![self.label(), device, sharing, procs, memory, sm, last]
    }

    /// A claim prepared after the sample: its device, `-` for every figure.
    fn not_sampled_cells(&self) -> Vec<String> {
        let (device, sharing) = self.device.map_or_else(
            || ("-".to_owned(), self.claim.kind.clone()),
            |d| (d.device.clone(), d.sharing.clone()),
        );
        let none = || "-".to_owned();
        let last = NOT_SAMPLED.to_owned();
        vec![self.label(), device, sharing, none(), none(), none(), last]
    }
}

/// The LAST ACTIVE cell of a claim prepared after the sample shown.
pub const NOT_SAMPLED: &str = "not sampled yet";

/// `shown` with the live view's key line under the header, cut to `width`
/// (0: uncut).
pub fn with_keys(mut shown: Vec<String>, sort: SortKey, width: usize) -> Vec<String> {
    shown.insert(shown.len().min(2), key_line(sort));
    cut(shown, width)
}

/// The keys of the live view, with the order in force.
pub fn key_line(sort: SortKey) -> String {
    let by = match sort {
        SortKey::Memory => "memory",
        SortKey::Sm => "SM",
        SortKey::Idle => "idle",
        SortKey::Name => "name",
    };
    format!("keys: q quit  m memory  s SM  i idle  n name  (sorted by {by})")
}

/// "6.0 GiB / 4.0 GiB !" (used / share, over it), or used / total.
fn memory_cell(d: &pb::DeviceActivity) -> String {
    match d.memory_share_bytes {
        Some(share) => {
            let over = if d.memory_used_bytes > share {
                " !"
            } else {
                ""
            };
            format!("{} / {}{over}", cell(d.memory_used_bytes), cell(share))
        }
        None => format!(
            "{} / {}",
            cell(d.memory_used_bytes),
            cell(d.memory_total_bytes)
        ),
    }
}

fn rows(reply: &pb::GetActivityResponse, sort: SortKey) -> Vec<Row<'_>> {
    let mut rows: Vec<Row<'_>> = reply
        .claims
        .iter()
        .flat_map(|claim| {
            let devices: Vec<Option<&pb::DeviceActivity>> = if claim.devices.is_empty() {
                vec![None]
            } else {
                claim.devices.iter().map(Some).collect()
            };
            devices.into_iter().map(move |device| Row { claim, device })
        })
        .collect();
    let name = |r: &Row<'_>| (r.label(), r.device.map(|d| d.device.clone()));
    rows.sort_by(|a, b| {
        let first = match sort {
            SortKey::Memory => b.memory().cmp(&a.memory()),
            SortKey::Sm => b.sm().cmp(&a.sm()),
            SortKey::Idle => b.claim.idle_seconds.cmp(&a.claim.idle_seconds),
            SortKey::Name => std::cmp::Ordering::Equal,
        };
        first.then_with(|| name(a).cmp(&name(b)))
    });
    rows
}

fn header(reply: &pb::GetActivityResponse, node: &Node, now: i64) -> Vec<String> {
    let sampled = match reply.sampled_at_ms {
        0 => "no sample yet".to_owned(),
        ms => format!("sampled {}", ago(Some(ms.div_euclid(1000)), now)),
    };
    let every = i64::try_from(reply.interval_ms / 1000).unwrap_or(i64::MAX);
    let mut lines = vec![format!(
        "gpuslice top  node {}  {sampled}  every {}",
        node.name,
        span(every)
    )];
    lines.push(format!(
        "GPUs {}  claims {}  unclaimed {}  warnings {}",
        node.gpus,
        reply.claims.len(),
        reply.unclaimed.len(),
        reply.warnings.len()
    ));
    lines
}

/// The screen: header, a row per (claim, device) in `sort` order, the
/// unclaimed processes, the open warnings; each line cut to `width`
/// characters (0: uncut).
pub fn lines(
    reply: &pb::GetActivityResponse,
    node: &Node,
    sort: SortKey,
    now: i64,
    width: usize,
) -> Vec<String> {
    if !reply.enabled {
        let mut out = vec![format!("gpuslice top  node {}", node.name)];
        out.push(
            "sampling is off: gpusliced samples GPU use only with [activity] interval_s > 0"
                .to_owned(),
        );
        return cut(out, width);
    }
    let mut out = header(reply, node, now);
    out.push(String::new());
    let rows: Vec<Vec<String>> = rows(reply, sort).iter().map(|r| r.cells(now)).collect();
    if rows.is_empty() {
        out.push("no prepared claims".to_owned());
    } else {
        let head = [
            "NAMESPACE/NAME",
            "DEVICE",
            "SHARING",
            "PROCS",
            "MEMORY",
            "SM%",
            "LAST ACTIVE",
        ];
        out.extend(table(&head, &rows).lines().map(str::to_owned));
    }
    if !reply.unclaimed.is_empty() {
        out.push(String::new());
        let rows: Vec<Vec<String>> = reply.unclaimed.iter().map(unclaimed_cells).collect();
        let head = ["UNCLAIMED PID", "DEVICE", "NAME", "MEMORY", "REASON"];
        out.extend(table(&head, &rows).lines().map(str::to_owned));
    }
    if !reply.warnings.is_empty() {
        out.push(String::new());
    }
    for w in &reply.warnings {
        out.push(format!(
            "warning: {} (for {})",
            w.message,
            span(now - w.since)
        ));
    }
    cut(out, width)
}

/// `shown` (the screen from the last sample that came) with a line under
/// the title saying gpusliced did not answer the last fetch, why, and when
/// top tries again; cut to `width` (0: uncut).
pub fn with_problem(
    mut shown: Vec<String>,
    problem: &str,
    retry_every: i64,
    width: usize,
) -> Vec<String> {
    let line = format!(
        "! gpusliced did not answer: {problem}; showing its last sample, trying again every {}",
        span(retry_every)
    );
    shown.insert(shown.len().min(1), line);
    cut(shown, width)
}

fn unclaimed_cells(u: &pb::UnclaimedProcess) -> Vec<String> {
    let p = u.process.clone().unwrap_or_default();
    vec![
        p.pid.to_string(),
        u.device.clone(),
        p.name,
        p.memory_used_bytes.map_or_else(|| "-".to_owned(), cell),
        u.reason.clone(),
    ]
}

fn cut(lines: Vec<String>, width: usize) -> Vec<String> {
    if width == 0 {
        return lines;
    }
    lines
        .into_iter()
        .map(|l| l.chars().take(width).collect())
        .collect()
}

#[cfg(test)]
#[path = "top_render_tests.rs"]
mod tests;
