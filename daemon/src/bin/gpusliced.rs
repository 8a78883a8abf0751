//! gpusliced placeholder.
fn main() {}
