//! The shared library's SONAME is NVML's, `libnvidia-ml.so.1`, as clients
//! that check it (and the dynamic loader's cache) expect. Its debug info is
//! left out (`--strip-debug`): with the simulator and what it links it
//! would weigh some 170 MB in a debug build, and tests copy the library.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnvidia-ml.so.1");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--strip-debug");
}
