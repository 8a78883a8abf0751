//! Compiles the kubelet protos vendored unchanged in `third_party/kubelet/`
//! (its SOURCE says from where) with protox (pure Rust), so no `protoc` is
//! needed. Only servers are generated: the kubelet is the client.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "kubelet-dra-v1-api.proto",
        "kubelet-dra-v1beta1-api.proto",
        "kubelet-pluginregistration-v1-api.proto",
        "kubelet-dra-health-v1-api.proto",
        "kubelet-dra-health-v1alpha1-api.proto",
    ];
    let vendored = "../third_party/kubelet";
    for proto in protos {
        println!("cargo:rerun-if-changed={vendored}/{proto}");
    }
    let descriptors = protox::compile(protos, [vendored])?;
    tonic_prost_build::configure()
        .build_client(false)
        .compile_fds(descriptors)?;
    Ok(())
}
