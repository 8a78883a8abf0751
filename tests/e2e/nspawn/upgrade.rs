//! An upgrade of the installed .deb to a newer version of itself, and the
//! downgrade back, under a real systemd (`upgrade.sh`), while a claim of every
//! kind is prepared (exclusive, a MIG GPU taken whole, a slice, MPS on a
//! slice, two MPS claims sharing a daemon, time-slicing) and two MPS control
//! daemons run as transient units. The newer version is the same .deb
//! repacked inside the container with a higher Version and a changed default
//! gpuslice.toml. After each: gpusliced was restarted by the package's
//! scripts; every claim keeps its CDI ids, its spec and record byte for byte
//! and unwritten, the MIG layout and sharing table are the same, each MPS
//! daemon keeps its unit, MainPID and InvocationID (taken over, never started
//! again), a second prepare answers already_prepared with the same devices,
//! and the operator's edits of both conffiles are kept (the changed default
//! beside as .dpkg-dist). docs/operations.md "What an upgrade does" follows it.

const TEST: &str = "nspawn_the_deb_upgrades_and_downgrades_keeping_every_claim";
const SCRIPT: &str = include_str!("upgrade.sh");

#[test]
fn nspawn_the_deb_upgrades_and_downgrades_keeping_every_claim() {
    super::boot(TEST, "upgrade.sh", SCRIPT);
}
