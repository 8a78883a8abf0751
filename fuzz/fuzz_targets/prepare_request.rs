//! Protobuf bytes as a gpuslice.v1.PrepareRequest: see gpuslice_fuzz::prepare.
#![no_main]
#![expect(
    clippy::disallowed_methods,
    reason = "fuzz_target! opens its debug output file with File::create"
)]

use gpuslice_proto::gpuslice::v1 as pb;
use prost::Message;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // The server refuses larger messages before decoding them.
    if data.len() > gpuslice::api::MAX_REQUEST_BYTES {
        return;
    }
    if let Ok(request) = pb::PrepareRequest::decode(data) {
        gpuslice_fuzz::prepare::check(request);
    }
});
