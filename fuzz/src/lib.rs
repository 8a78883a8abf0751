//! The fuzz targets' bodies: each a thin adapter from fuzzer bytes to one of
//! gpuslice's real entry points, plus the invariants it checks. The targets
//! in `fuzz_targets/` only call these; nothing here copies the library's
//! logic (parsing, precedence, validation), it only states what must hold.
//!
//! A broken invariant is a panic with a message naming it, which libFuzzer
//! reports as a crash and saves as a reproducer.
//!
//! * [`sharing`]: opaque sharing configs (`opaque::parse_configs`, then
//!   `validate_for_device` against fixed device facts).
//! * [`daemon_config`]: the TOML config as `Config::load` reads it.
//! * [`prepare`]: a `gpuslice.v1.PrepareRequest` through the service's
//!   conversion, validation and the claim engine on the simulated [`node`].
//! * [`request_gen`]: structure-aware Prepare requests for `prepare_structured`.
//! * [`cdi`]: CDI spec JSON through the model, validation and `to_json`.
//! * [`usage_history`]: `usage-history.json` through the loader and back.

pub mod cdi;
pub mod daemon_config;
pub mod node;
pub mod prepare;
pub mod request_gen;
pub mod sharing;
pub mod usage_history;
