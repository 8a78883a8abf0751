//! The usage history file: see gpuslice_fuzz::usage_history.
#![no_main]
#![expect(
    clippy::disallowed_methods,
    reason = "fuzz_target! opens its debug output file with File::create"
)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuslice_fuzz::usage_history::check(data));
