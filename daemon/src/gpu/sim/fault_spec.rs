//! The text form of injected faults, so a running daemon can be given them:
//! the `GPUSLICE_SIM_FAULTS` environment variable, read when the simulated
//! backend is opened ([`super::SimBackend::open`]).
//!
//! Syntax: items separated by commas, each `OP:ACTION`, where OP is an
//! operation name of [`op::ALL`] (the backend verb, e.g.
//! `create_compute_instance`) and ACTION one of
//!
//! * `fail_next`: the next call fails;
//! * `fail_nth=N`: the Nth call from start-up fails (N ≥ 1);
//! * `fail_gpu=I`: every call on GPU index I fails, for the life of the
//!   process (a GPU that stopped answering; verbs on one GPU only);
//! * `latency_ms=N`: every call takes N milliseconds longer.
//!
//! A failing action may end in `@ERROR` to choose what the call answers:
//! `injected` (the default, [`GpuError::Injected`]), `in_use`,
//! `insufficient_resources`, `not_found`, `not_supported`, `no_permission` or
//! `gpu_lost`. Example:
//! `GPUSLICE_SIM_FAULTS="create_compute_instance:fail_nth=1,destroy_gpu_instance:fail_next@in_use,create_gpu_instance:latency_ms=200,device_info:fail_gpu=1@gpu_lost"`.
//! Pure parsing; arming goes through [`Faults`].

use std::time::Duration;

use super::faults::{Faults, op};
use crate::gpu::GpuError;

/// The environment variable a simulated daemon reads its faults from.
pub const ENV_VAR: &str = "GPUSLICE_SIM_FAULTS";

/// One parsed item of a fault spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultItem {
    /// Fail the `nth` call of `op` with `error`.
    Fail {
        /// The operation.
        op: &'static str,
        /// 1-based call number.
        nth: u64,
        /// What the call answers.
        error: GpuError,
    },
    /// Every call of `op` on GPU `gpu` fails with `error`.
    FailGpu {
        /// The operation.
        op: &'static str,
        /// The GPU's index.
        gpu: u32,
        /// What the call answers.
        error: GpuError,
    },
    /// Every call of `op` takes `latency`.
    Latency {
        /// The operation.
        op: &'static str,
        /// The added time.
        latency: Duration,
    },
}

/// A fault spec that cannot be understood, naming the item and what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{ENV_VAR} item {item:?}: {problem}")]
pub struct FaultSpecError {
    /// The offending item.
    pub item: String,
    /// What is wrong, and the accepted forms.
    pub problem: String,
}

/// Parses a whole spec; an empty or blank spec is no faults.
pub fn parse(spec: &str) -> Result<Vec<FaultItem>, FaultSpecError> {
    spec.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(parse_item)
        .collect()
}

/// Parses `spec` and arms every item in `faults`.
pub fn arm(faults: &Faults, spec: &str) -> Result<(), FaultSpecError> {
    for item in parse(spec)? {
        match item {
            FaultItem::Fail { op, nth, error } => faults.fail_nth(op, nth, error),
            FaultItem::FailGpu { op, gpu, error } => faults.fail_gpu(op, gpu, error),
            FaultItem::Latency { op, latency } => faults.set_latency(op, Some(latency)),
        }
    }
    Ok(())
}

fn parse_item(item: &str) -> Result<FaultItem, FaultSpecError> {
    let bad = |problem: String| FaultSpecError {
        item: item.to_owned(),
        problem,
    };
    let (name, action) = item
        .split_once(':')
        .ok_or_else(|| bad("expected OP:ACTION, e.g. create_gpu_instance:fail_next".into()))?;
    let op = op::ALL
        .into_iter()
        .find(|known| *known == name.trim())
        .ok_or_else(|| bad(format!("unknown operation; known: {}", op::ALL.join(", "))))?;
    let (action, error) = match action.trim().split_once('@') {
        Some((action, error)) => (action, Some(error)),
        None => (action.trim(), None),
    };
    let number = |text: &str| -> Result<u64, FaultSpecError> {
        text.parse::<u64>()
            .map_err(|_| bad(format!("{text:?} is not a whole number")))
    };
    let error_of = |error: Option<&str>| {
        error_named(op, error.unwrap_or("injected")).ok_or_else(|| {
            bad(
                "unknown @ERROR; use injected, in_use, insufficient_resources, not_found, \
                 not_supported, no_permission or gpu_lost"
                    .into(),
            )
        })
    };
    let nth = match action.split_once('=') {
        None if action == "fail_next" => 1,
        Some(("fail_nth", n)) => number(n)?.max(1),
        Some(("fail_gpu", i)) if PER_GPU.contains(&op) => {
            let gpu = u32::try_from(number(i)?)
                .map_err(|_| bad(format!("GPU index {i} is too large")))?;
            let error = error_of(error)?;
            return Ok(FaultItem::FailGpu { op, gpu, error });
        }
        Some(("fail_gpu", _)) => {
            return Err(bad(format!(
                "fail_gpu applies to verbs on one GPU: {}",
                PER_GPU.join(", ")
            )));
        }
        Some(("latency_ms", ms)) if error.is_none() => {
            let latency = Duration::from_millis(number(ms)?);
            return Ok(FaultItem::Latency { op, latency });
        }
        _ => {
            return Err(bad(
                "expected fail_next, fail_nth=N, fail_gpu=I or latency_ms=N \
                 (only failures take @ERROR)"
                    .into(),
            ));
        }
    };
    let error = error_of(error)?;
    Ok(FaultItem::Fail { op, nth, error })
}

/// The verbs that act on one GPU (the others are node-wide).
const PER_GPU: [&str; 13] = [
    op::DEVICE_INFO,
    op::MIG_PROFILES,
    op::SET_MIG_MODE,
    op::GPU_INSTANCES,
    op::CREATE_GPU_INSTANCE,
    op::CREATE_COMPUTE_INSTANCE,
    op::DESTROY_COMPUTE_INSTANCE,
    op::DESTROY_GPU_INSTANCE,
    op::COMPUTE_MODE,
    op::SET_COMPUTE_MODE,
    op::PROCESSES,
    op::PROCESS_UTILIZATION,
    op::MEMORY_USE,
];

/// The error an injected failure of `op` answers with.
fn error_named(op: &'static str, name: &str) -> Option<GpuError> {
    let what = format!("{op} (injected)");
    Some(match name {
        "injected" => GpuError::Injected { call: op },
        "in_use" => GpuError::InUse { what },
        "insufficient_resources" => GpuError::InsufficientResources { what },
        "not_found" => GpuError::NotFound { what },
        "not_supported" => GpuError::NotSupported { what },
        "no_permission" => GpuError::NoPermission { what },
        "gpu_lost" => GpuError::GpuLost { what },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{FaultItem, arm, parse};
    use crate::gpu::GpuError;
    use crate::gpu::sim::faults::{Faults, Latency, op};

    #[test]
    fn parses_every_action() {
        let items = parse(
            " create_compute_instance:fail_nth=2, destroy_gpu_instance:fail_next@in_use,\
             create_gpu_instance:latency_ms=200 ,",
        )
        .unwrap();
        assert_eq!(
            items,
            vec![
                FaultItem::Fail {
                    op: op::CREATE_COMPUTE_INSTANCE,
                    nth: 2,
                    error: GpuError::Injected {
                        call: op::CREATE_COMPUTE_INSTANCE
                    },
                },
                FaultItem::Fail {
                    op: op::DESTROY_GPU_INSTANCE,
                    nth: 1,
                    error: GpuError::InUse {
                        what: "destroy_gpu_instance (injected)".into()
                    },
                },
                FaultItem::Latency {
                    op: op::CREATE_GPU_INSTANCE,
                    latency: Duration::from_millis(200),
                },
            ]
        );
        assert_eq!(parse("  "), Ok(vec![]));
    }

    #[test]
    fn refuses_with_the_item_and_the_fix() {
        let cases = [
            ("create_gpu_instance", "expected OP:ACTION"),
            ("make_coffee:fail_next", "known: driver_info"),
            ("set_mig_mode:explode", "expected fail_next"),
            ("set_mig_mode:fail_nth=x", "\"x\" is not a whole number"),
            (
                "set_mig_mode:latency_ms=5@in_use",
                "only failures take @ERROR",
            ),
            ("set_mig_mode:fail_next@bad", "unknown @ERROR"),
            (
                "device_count:fail_gpu=1",
                "fail_gpu applies to verbs on one GPU",
            ),
            ("device_info:fail_gpu=x", "\"x\" is not a whole number"),
            ("device_info:fail_gpu=99999999999", "too large"),
            ("device_info:fail_gpu=1@bad", "unknown @ERROR"),
        ];
        for (item, wanted) in cases {
            let err = parse(&format!("device_count:fail_next,{item}")).unwrap_err();
            assert_eq!(err.item, item);
            let msg = err.to_string();
            assert!(msg.contains("GPUSLICE_SIM_FAULTS"), "{msg}");
            assert!(msg.contains(wanted), "{item}: {msg}");
        }
    }

    #[test]
    fn armed_spec_fires() {
        let faults = Faults::new();
        arm(
            &faults,
            "device_count:fail_nth=2@gpu_lost,device_info:latency_ms=1",
        )
        .unwrap();
        assert_eq!(faults.check(op::DEVICE_COUNT), Ok(Latency::NONE));
        assert!(matches!(
            faults.check(op::DEVICE_COUNT),
            Err(GpuError::GpuLost { .. })
        ));
        assert_ne!(faults.check(op::DEVICE_INFO), Ok(Latency::NONE));
    }

    #[test]
    fn a_failing_gpu_is_parsed_and_armed() {
        let items = parse("device_info:fail_gpu=1@gpu_lost").unwrap();
        let lost = GpuError::GpuLost {
            what: "device_info (injected)".into(),
        };
        assert_eq!(
            items,
            vec![FaultItem::FailGpu {
                op: op::DEVICE_INFO,
                gpu: 1,
                error: lost.clone(),
            }]
        );
        let faults = Faults::new();
        arm(&faults, "device_info:fail_gpu=1@gpu_lost").unwrap();
        assert_eq!(faults.check_gpu(op::DEVICE_INFO, 0), Ok(Latency::NONE));
        assert_eq!(faults.check_gpu(op::DEVICE_INFO, 1), Err(lost.clone()));
        assert_eq!(faults.check_gpu(op::DEVICE_INFO, 1), Err(lost));
    }
}
