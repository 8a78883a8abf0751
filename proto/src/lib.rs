//! gRPC definitions shared by gpusliced, gpuslicectl and the DRA shim.
//!
//! This crate holds generated code only: `gpuslice.v1` is the daemon's own API
//! (see `gpuslice/v1/gpuslice.proto` for the contract of each call).

/// The daemon API, version 1.
pub mod gpuslice {
    /// `gpuslice.v1`: Prepare, Unprepare, GetInventory, ListClaims, GetStatus.
    #[allow(
        clippy::all,
        clippy::pedantic,
        reason = "generated code: lints are not ours to fix"
    )]
    pub mod v1 {
        tonic::include_proto!("gpuslice.v1");
    }
}
