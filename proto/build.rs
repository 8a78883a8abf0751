//! Compiles the protos with protox (pure Rust), so no `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["gpuslice/v1/gpuslice.proto"];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(protos, ["."])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
