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
//! * `latency_ms=N`: every call takes N milliseconds longer.
//!
//! A failing action may end in `@ERROR` to choose what the call answers:
//! `injected` (the default, [`GpuError::Injected`]), `in_use`,
//! `insufficient_resources`, `not_found`, `not_supported`, `no_permission` or
//! `gpu_lost`. Example:
//! `GPUSLICE_SIM_FAULTS="create_compute_instance:fail_nth=1,destroy_gpu_instance:fail_next@in_use,create_gpu_instance:latency_ms=200"`.
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
    let nth = match action.split_once('=') {
        None if action == "fail_next" => 1,
        Some(("fail_nth", n)) => number(n)?.max(1),
        Some(("latency_ms", ms)) if error.is_none() => {
            let latency = Duration::from_millis(number(ms)?);
            return Ok(FaultItem::Latency { op, latency });
        }
        _ => {
            return Err(bad(
                "expected fail_next, fail_nth=N or latency_ms=N (only failures take @ERROR)".into(),
            ));
        }
    };
    let error = error_named(op, error.unwrap_or("injected")).ok_or_else(|| {
        bad(
            "unknown @ERROR; use injected, in_use, insufficient_resources, not_found, \
             not_supported, no_permission or gpu_lost"
                .into(),
        )
    })?;
    Ok(FaultItem::Fail { op, nth, error })
}

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
}
