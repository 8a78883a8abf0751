//! The daemon's TOML config: see gpuslice_fuzz::daemon_config.
#![no_main]
#![expect(
    clippy::disallowed_methods,
    reason = "fuzz_target! opens its debug output file with File::create"
)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuslice_fuzz::daemon_config::check(data));
