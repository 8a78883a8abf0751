//! The kubelet's gRPC APIs the shim serves, generated from the published
//! protos vendored unchanged in `third_party/kubelet/` (a test checks them
//! against the sha256s its SOURCE records). Generated code only.

#![allow(
    clippy::all,
    clippy::pedantic,
    reason = "generated code: lints are not ours to fix"
)]

/// `k8s.io.kubelet.pkg.apis.dra.v1`: the DRA plugin API the kubelet prefers
/// (Kubernetes 1.34+).
pub mod dra_v1 {
    tonic::include_proto!("k8s.io.kubelet.pkg.apis.dra.v1");
}

/// `k8s.io.kubelet.pkg.apis.dra.v1beta1`: the same calls for 1.32 and 1.33
/// kubelets (message-identical to v1 except v1's `share_id`).
pub mod dra_v1beta1 {
    tonic::include_proto!("k8s.io.kubelet.pkg.apis.dra.v1beta1");
}

/// `pluginregistration`: how the kubelet discovers plugins on its registry
/// socket (GetInfo, NotifyRegistrationStatus).
pub mod registration {
    tonic::include_proto!("pluginregistration");
}

/// `v1.DRAResourceHealth`: device health the kubelet watches (Kubernetes 1.36+).
pub mod health_v1 {
    tonic::include_proto!("v1");
}

/// `v1alpha1.DRAResourceHealth`: the same for 1.34 and 1.35 kubelets.
pub mod health_v1alpha1 {
    tonic::include_proto!("v1alpha1");
}
