//! A stand-in for a container's process in the benches: a `sleep` carrying
//! a claim's marker in its environment, as the claim's CDI spec sets it.

use std::process::{Child, Command, Stdio};

use gpuslice::cdi_build::marker::claim_env;

/// A `sleep` with `claim`'s marker in its environment, as its container's.
pub fn spawn_marked(claim: &str) -> Child {
    let marker = claim_env(claim);
    let (name, value) = marker.split_once('=').expect("NAME=VALUE");
    Command::new("sleep")
        .arg("3600")
        .env(name, value)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("cannot spawn sleep")
}
