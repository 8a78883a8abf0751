//! Structure-aware Prepare requests: see gpuslice_fuzz::request_gen and
//! gpuslice_fuzz::prepare.
#![no_main]
#![expect(
    clippy::disallowed_methods,
    reason = "fuzz_target! opens its debug output file with File::create"
)]

use gpuslice_fuzz::node::node;
use gpuslice_fuzz::prepare::check;
use gpuslice_fuzz::request_gen::GenRequest;

libfuzzer_sys::fuzz_target!(|request: GenRequest| {
    check(request.build(&node().device_names));
});
