//! A ComputeDomain under the shipped units (`compute_domain.sh`), on a rack of three
//! simulated GB200 nodes booted at once (`machines.rs`), each with the .deb,
//! its own addresses and `/etc/gpuslice/gpuslice.toml`, gpusliced.service as
//! packaged: gpusliced starts the domain's IMEX daemon (the stand-in at
//! /usr/bin/nvidia-imex) as `gpuslice-imex@<uid>.service` over D-Bus, with a
//! runtime `IPAddressAllow=` of the rack network, while its own unit stays
//! AF_UNIX-only; the daemons connect over real TCP. Two nodes form the
//! domain, a workload on one imports the other's export; a third joins
//! without a restart of either daemon and the import holds; a restart of
//! gpusliced leaves its daemon's unit running (same MainPID and
//! InvocationID); an address outside `IPAddressAllow=` in the domain's
//! mapping is tried by the daemon and dropped by its sandbox while the same
//! connection answers from the node's shell; unprepares stop the units and
//! remove their runtime properties and folders, and the import ends with
//! its exporter. Issue 37's rack test.

const TEST: &str =
    "nspawn_rack_of_three_gb200_nodes_forms_a_compute_domain_under_the_shipped_units";
const SCRIPT: &str = include_str!("compute_domain.sh");

#[test]
fn nspawn_rack_of_three_gb200_nodes_forms_a_compute_domain_under_the_shipped_units() {
    super::boot_rack(TEST, "compute_domain.sh", SCRIPT, 3);
}
