//! gpuslicectl placeholder.
fn main() {}
