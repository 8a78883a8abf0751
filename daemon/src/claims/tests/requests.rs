//! Prepare requests for the engine's tests: the test kit's builders (claim
//! `ns/claim`, every device in pool `node` under request `gpu`, every config
//! from the claim), under the names these tests use.

pub(crate) use crate::testkit::requests::{request, request_with};
