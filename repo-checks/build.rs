//! Hands the tests the target triple they are built for, so the dependency
//! checks (`tests/metadata/`) ask `cargo metadata` for that platform only: the
//! packages a build on this machine downloads, never another platform's.

fn main() {
    match std::env::var("TARGET") {
        Ok(target) => println!("cargo:rustc-env=GPUSLICE_BUILD_TARGET={target}"),
        Err(e) => panic!("cargo sets TARGET for build scripts: {e}"),
    }
}
