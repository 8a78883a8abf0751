//! A rack of two simulated GB200 nodes (`rack.sh`), booted at once with
//! addresses of their own (`machines.rs`): the .deb installed on each,
//! gpusliced serving a `p6e-gb200.36xlarge` (four GB200s, one NVLink
//! clique for the rack) with the IMEX stand-ins at /usr/bin/nvidia-imex and
//! /usr/bin/nvidia-imex-ctl; the nodes reach each other over TCP on both
//! networks; a service with `IPAddressDeny=any` and `IPAddressAllow=` the
//! rack network reaches the other node on it and not on the other network
//! (TCP times out, UDP is refused with EPERM) while the node's own shell
//! reaches both; and the IMEX stand-ins, one per node under that sandbox,
//! form a domain of the rack over real TCP. The groundwork for the domain
//! test of issue 37 (`domain.rs`), which runs gpusliced's own IMEX units
//! instead.

const TEST: &str = "nspawn_rack_of_two_gb200_nodes_with_the_deb_reach_each_other_in_the_sandbox";
const SCRIPT: &str = include_str!("rack.sh");

#[test]
fn nspawn_rack_of_two_gb200_nodes_with_the_deb_reach_each_other_in_the_sandbox() {
    super::boot_rack(TEST, "rack.sh", SCRIPT, 2);
}
