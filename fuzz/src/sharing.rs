//! Target `sharing_config`: the opaque sharing configs of a claim.
//!
//! Input: text (lossy UTF-8) cut at lines `---` into at most [`MAX_ENTRIES`]
//! config entries. An entry may start with a header line `@class a,b` or
//! `@claim a,b` (its source and the requests it names; none: all); the rest
//! is the `opaque.parameters` JSON. The requests are "gpu" plus every name a
//! header mentions (at most [`MAX_REQUESTS`]).
//!
//! Invariants:
//! * nothing panics (integer overflow included: run.sh builds with debug
//!   assertions);
//! * parsing and validation are deterministic: an accepted config re-parses
//!   and re-validates identically;
//! * every refusal names its field first (`configs[N]...`, the module's
//!   documented contract) and stays short;
//! * a winner points at an entry of its kind that applies to the request,
//!   and every entry of an accepted claim parses on its own;
//! * a resolved policy stays within its devices: time-slicing lists exactly
//!   the request's GPUs, MPS limits and shares name the request's devices and
//!   fit their memory, a memory share never lands on a MIG device;
//! * a quantity that parses prints back as the same byte count.

use gpuslice::claims::mps_daemon::MpsKey;
use gpuslice::claims::resolve::{DeviceFacts, ResolvedSharing, validate_for_device};
use gpuslice::opaque::{
    ConfigEntry, ConfigKind, ConfigSource, MAX_CONFIG_BYTES, MIN_PINNED_LIMIT_BYTES, ParsedEntry,
    RequestSharing, SharingError, SharingPolicy, parse_bytes, parse_configs, parse_entry,
};

/// Most entries taken from one input.
pub const MAX_ENTRIES: usize = 8;
/// Most request names taken from one input.
pub const MAX_REQUESTS: usize = 4;

const GIB: u64 = 1024 * 1024 * 1024;
const H100: &str = "GPU-4b5c7a51-2b0c-5f33-8f3e-7d2f0a9c1e01";
const A100: &str = "GPU-0c1d2e3f-4a5b-5c6d-8e7f-901a2b3c4d02";
const MIG: &str = "MIG-9a8b7c6d-5e4f-5a3b-9c2d-1e0f2a3b4c03";

/// The device sets every request is checked against, as the engine would
/// pass them: one GPU, two GPUs of different memory, one MIG device, and a
/// mix (which a kind-specific config must refuse).
fn device_sets() -> [Vec<DeviceFacts<'static>>; 4] {
    let h100 = DeviceFacts {
        uuid: H100,
        kind: ConfigKind::Gpu,
        memory_bytes: 80 * GIB,
        product: "NVIDIA H100 80GB HBM3",
        mps: (true, true),
    };
    let a100 = DeviceFacts {
        uuid: A100,
        kind: ConfigKind::Gpu,
        memory_bytes: 40 * GIB,
        product: "NVIDIA A100-SXM4-40GB",
        mps: (true, true),
    };
    let mig = DeviceFacts {
        uuid: MIG,
        kind: ConfigKind::Mig,
        memory_bytes: 10 * GIB,
        product: "NVIDIA H100 80GB HBM3",
        mps: (true, true),
    };
    [vec![h100], vec![h100, a100], vec![mig], vec![a100, mig]]
}

/// One entry cut from the input.
struct Entry {
    source: ConfigSource,
    requests: Vec<String>,
    json: String,
}

fn split(text: &str) -> Vec<Entry> {
    text.split("\n---\n")
        .take(MAX_ENTRIES)
        .map(|chunk| {
            let (header, json) = match chunk.strip_prefix('@') {
                Some(rest) => rest.split_once('\n').unwrap_or((rest, "")),
                None => ("", chunk),
            };
            let (source, names) = header.split_once(' ').unwrap_or((header, ""));
            let source = if source == "class" {
                ConfigSource::Class
            } else {
                ConfigSource::Claim
            };
            let requests = names
                .split(',')
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect();
            Entry {
                source,
                requests,
                json: json.to_owned(),
            }
        })
        .collect()
}

/// Runs one input through the sharing config parser and checker.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let entries = split(&text);
    let mut requests: Vec<&str> = vec!["gpu"];
    for name in entries.iter().flat_map(|e| &e.requests) {
        if requests.len() < MAX_REQUESTS && !requests.contains(&name.as_str()) {
            requests.push(name);
        }
    }
    let configs: Vec<ConfigEntry<'_>> = entries
        .iter()
        .map(|e| ConfigEntry {
            source: e.source,
            requests: &e.requests,
            parameters_json: &e.json,
        })
        .collect();
    for entry in &entries {
        check_quantity(entry.json.trim());
    }
    let parsed = parse_configs(&configs, &requests);
    assert_eq!(
        parsed,
        parse_configs(&configs, &requests),
        "parse_configs is not deterministic"
    );
    let winners = match parsed {
        Ok(winners) => winners,
        Err(err) => return check_refusal(&err),
    };
    let mut names: Vec<&str> = winners.keys().map(String::as_str).collect();
    let mut wanted = requests.clone();
    names.sort_unstable();
    wanted.sort_unstable();
    assert_eq!(names, wanted, "the winners are not one per request");
    for (index, config) in configs.iter().enumerate() {
        if let Err(err) = parse_entry(index, config.parameters_json) {
            panic!("claim accepted although configs[{index}] is refused alone: {err}");
        }
    }
    for (request, sharing) in &winners {
        check_winner(request, sharing, &configs);
        for devices in device_sets() {
            check_resolved(request, sharing, &devices);
        }
    }
}

/// A refusal starts with its field and does not echo unbounded input.
fn check_refusal(err: &SharingError) {
    let message = err.to_string();
    assert!(
        message.starts_with("configs["),
        "refusal does not start with its field: {message}"
    );
    assert!(
        message.len() <= 3 * MAX_CONFIG_BYTES + 1024,
        "refusal is {} bytes long",
        message.len()
    );
}

fn applies(config: &ConfigEntry<'_>, request: &str) -> bool {
    config.requests.is_empty() || config.requests.iter().any(|r| r == request)
}

/// The winners point at entries of the right kind that apply to the request.
fn check_winner(request: &str, sharing: &RequestSharing, configs: &[ConfigEntry<'_>]) {
    if let Some((kind, index)) = sharing.nvidia {
        let config = configs
            .get(index)
            .expect("NVIDIA winner index out of range");
        assert!(
            applies(config, request),
            "configs[{index}] wins for {request:?} but does not apply to it"
        );
        match parse_entry(index, config.parameters_json) {
            Ok(ParsedEntry::Nvidia { kind: parsed, .. }) => {
                assert_eq!(parsed, kind, "configs[{index}] wins with the wrong kind");
            }
            other => panic!("configs[{index}] wins as an NVIDIA config but parses as {other:?}"),
        }
    }
    if let Some(index) = sharing.memory_config {
        let config = configs
            .get(index)
            .expect("memory winner index out of range");
        assert!(
            applies(config, request),
            "configs[{index}] wins for {request:?} but does not apply to it"
        );
        let parsed = parse_entry(index, config.parameters_json);
        assert!(
            matches!(parsed, Ok(ParsedEntry::MemoryShare(_))),
            "configs[{index}] wins as a memory share but parses as {parsed:?}"
        );
    }
    if sharing.memory_config.is_some() {
        assert!(
            matches!(sharing.policy, SharingPolicy::Mps(_)),
            "a memory share without MPS: {:?}",
            sharing.policy
        );
    }
}

fn memory_of(devices: &[DeviceFacts<'_>], uuid: &str) -> (ConfigKind, u64) {
    let device = devices.iter().find(|d| d.uuid == uuid).unwrap_or_else(|| {
        panic!("resolved policy names {uuid}, not one of the request's devices")
    });
    (device.kind, device.memory_bytes)
}

/// A resolved policy re-validates identically and stays within its devices.
fn check_resolved(request: &str, sharing: &RequestSharing, devices: &[DeviceFacts<'_>]) {
    let resolved = validate_for_device(request, sharing, devices);
    assert_eq!(
        resolved,
        validate_for_device(request, sharing, devices),
        "validate_for_device is not deterministic"
    );
    let resolved = match resolved {
        Ok(resolved) => resolved,
        Err(err) => return check_refusal(&err),
    };
    if let Some((kind, index)) = sharing.nvidia {
        assert!(
            devices.iter().all(|d| d.kind == kind),
            "configs[{index}] ({kind}) accepted for a device of the other kind"
        );
    }
    match resolved {
        ResolvedSharing::Exclusive => {
            assert_eq!(
                sharing.policy,
                SharingPolicy::Exclusive,
                "policy resolved to exclusive"
            );
        }
        ResolvedSharing::TimeSlicing { gpus, .. } => {
            let mut uuids: Vec<&str> = devices.iter().map(|d| d.uuid).collect();
            uuids.sort_unstable();
            assert_eq!(
                gpus, uuids,
                "time-slicing does not list exactly the request's GPUs"
            );
            assert!(
                devices.iter().all(|d| d.kind == ConfigKind::Gpu),
                "time-slicing accepted on a MIG device"
            );
        }
        ResolvedSharing::Mps {
            key,
            limits,
            memory_share,
        } => {
            assert_eq!(key, MpsKey::new(devices.iter().map(|d| d.uuid)), "MPS key");
            if let Some(p) = limits.active_thread_percentage {
                assert!((1..=100).contains(&p), "active thread percentage {p}");
            }
            for (uuid, bytes) in &limits.pinned_memory_limits {
                let (_, memory) = memory_of(devices, uuid);
                assert!(
                    (MIN_PINNED_LIMIT_BYTES..=memory).contains(bytes),
                    "pinned limit {bytes} on {uuid} outside 1Mi..{memory}"
                );
            }
            for (uuid, bytes) in &memory_share {
                let (kind, memory) = memory_of(devices, uuid);
                assert_eq!(kind, ConfigKind::Gpu, "memory share on MIG device {uuid}");
                assert!(
                    (MIN_PINNED_LIMIT_BYTES..=memory).contains(bytes),
                    "memory share {bytes} on {uuid} outside 1Mi..{memory}"
                );
            }
        }
    }
}

/// A quantity that parses prints back, as a plain byte count, to itself.
fn check_quantity(text: &str) {
    if let Ok(bytes) = parse_bytes(text) {
        assert_eq!(
            parse_bytes(&bytes.to_string()),
            Ok(bytes),
            "{text:?} parses to {bytes}, which does not parse back"
        );
    }
}
