//! The one mapping from domain errors to gRPC status codes. Never INTERNAL for
//! something the caller or the operator can fix.

use tonic::{Code, Status};

use crate::claims::ClaimError;
use crate::claims::compute_policy::TimeSliceError;
use crate::claims::mps_daemon::MpsError;
use crate::gpu::GpuError;
use crate::state::StateError;

/// The gRPC status for a claim error; the message is the error's own text.
pub fn error(err: ClaimError) -> Status {
    let code = match &err {
        ClaimError::InvalidUid { .. }
        | ClaimError::InvalidField { .. }
        | ClaimError::NoDevices
        | ClaimError::UnknownDevice { .. }
        | ClaimError::DuplicateDevice { .. }
        | ClaimError::DevicesOverlap { .. }
        | ClaimError::Sharing(_)
        | ClaimError::Limits(_) => Code::InvalidArgument,
        ClaimError::DeviceHeld { .. }
        | ClaimError::GpuShared { .. }
        | ClaimError::SharingOnMigManaged { .. }
        | ClaimError::NotOfferedWhole { .. }
        | ClaimError::PreparedDifferently { .. }
        | ClaimError::SliceOccupied { .. }
        | ClaimError::GpuPartitioned { .. }
        | ClaimError::LayoutUnplaceable { .. }
        | ClaimError::MigModeStuck { .. }
        | ClaimError::FeatureMissing(_) => Code::FailedPrecondition,
        ClaimError::DeviceNodeMissing { .. }
        | ClaimError::DeviceUnhealthy { .. }
        | ClaimError::DeviceGone { .. }
        | ClaimError::CdiFile { .. } => Code::Unavailable,
        ClaimError::State(StateError::NewerVersion { .. }) => Code::FailedPrecondition,
        ClaimError::MemoryExhausted { .. } => Code::ResourceExhausted,
        ClaimError::SharingNotConfigured { .. } => Code::Unavailable,
        ClaimError::Mps(mps) => mps_code(mps),
        ClaimError::TimeSlicing(ts) => timeslice_code(ts),
        ClaimError::InvalidSpec { .. } => Code::Internal,
        ClaimError::State(_) => Code::Unavailable,
        ClaimError::Gpu(gpu) => gpu_code(gpu),
    };
    if code == Code::Unavailable {
        tracing::warn!(error = %err, "claim operation failed; the caller will retry");
    }
    Status::new(code, err.to_string())
}

fn mps_code(err: &MpsError) -> Code {
    match err {
        MpsError::LimitsConflict { .. } | MpsError::Overlap { .. } => Code::FailedPrecondition,
        MpsError::LimitDevice { .. } => Code::InvalidArgument,
        MpsError::PipeDirTooLong { .. } => Code::FailedPrecondition,
        MpsError::Io { .. }
        | MpsError::Command { .. }
        | MpsError::DiedDuringStart { .. }
        | MpsError::NotReady { .. }
        | MpsError::LimitNotApplied { .. }
        | MpsError::Systemd { .. } => Code::Unavailable,
    }
}

fn timeslice_code(err: &TimeSliceError) -> Code {
    match err {
        TimeSliceError::IntervalConflict { .. }
        | TimeSliceError::MpsInUse { .. }
        | TimeSliceError::TimeSliceInUse { .. } => Code::FailedPrecondition,
        TimeSliceError::Command { .. } => Code::Unavailable,
    }
}

fn gpu_code(err: &GpuError) -> Code {
    match err {
        GpuError::InsufficientResources { .. } => Code::ResourceExhausted,
        GpuError::InUse { .. } | GpuError::NotSupported { .. } | GpuError::NoPermission { .. } => {
            Code::FailedPrecondition
        }
        GpuError::NoSuchGpu { .. } | GpuError::NotFound { .. } => Code::NotFound,
        GpuError::SimState { .. } => Code::Internal,
        GpuError::LibraryLoad { .. }
        | GpuError::DriverNotLoaded { .. }
        | GpuError::GpuLost { .. }
        | GpuError::Nvml { .. }
        | GpuError::Injected { .. } => Code::Unavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_house_rules() {
        let cases = [
            (ClaimError::NoDevices, Code::InvalidArgument),
            (
                ClaimError::InvalidUid { uid: "x".into() },
                Code::InvalidArgument,
            ),
            (
                ClaimError::DeviceHeld {
                    device: "gpu-0".into(),
                    holder: "h".into(),
                    holder_device: "gpu-0".into(),
                },
                Code::FailedPrecondition,
            ),
            (
                ClaimError::Gpu(GpuError::InsufficientResources { what: "x".into() }),
                Code::ResourceExhausted,
            ),
            (
                ClaimError::MemoryExhausted {
                    gpu: "gpu-0".into(),
                    uuid: "GPU-a".into(),
                    asked: 2,
                    left: 1,
                    holders: "c (1)".into(),
                },
                Code::ResourceExhausted,
            ),
            (
                ClaimError::TimeSlicing(TimeSliceError::IntervalConflict {
                    gpu: "GPU-a".into(),
                    holder: "c".into(),
                    held: crate::opaque::TimeSliceInterval::Long,
                    asked: crate::opaque::TimeSliceInterval::Short,
                }),
                Code::FailedPrecondition,
            ),
            (
                ClaimError::Sharing(crate::opaque::SharingError::Conflict {
                    field: "configs[0].memory".into(),
                    problem: "x".into(),
                }),
                Code::InvalidArgument,
            ),
            (
                ClaimError::DeviceNodeMissing {
                    device: "gpu-0".into(),
                    path: "/dev/nvidia0".into(),
                },
                Code::Unavailable,
            ),
            (
                ClaimError::DeviceUnhealthy {
                    device: "gpu-0".into(),
                    reason: "XID 79".into(),
                    gpu: "gpu-0".into(),
                },
                Code::Unavailable,
            ),
        ];
        for (err, code) in cases {
            let text = err.to_string();
            let status = error(err);
            assert_eq!(status.code(), code, "{text}");
            assert_eq!(status.message(), text);
        }
    }
}
