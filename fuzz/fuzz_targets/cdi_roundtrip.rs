//! CDI spec JSON round trip: see gpuslice_fuzz::cdi.
#![no_main]
#![expect(
    clippy::disallowed_methods,
    reason = "fuzz_target! opens its debug output file with File::create"
)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuslice_fuzz::cdi::check(data));
