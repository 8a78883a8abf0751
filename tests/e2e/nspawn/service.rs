//! The service's life under a real systemd (`in_container.sh`): the service
//! starts (Type=notify reaches active), logs to the journal, answers
//! gpuslicectl, reloads, is killed and restarted by the watchdog when it
//! hangs, runs sandboxed, supervises MPS control daemons as transient units
//! `gpuslice-mps-<hash>.service` started over the system bus (shared by
//! claims on one GPU set, restarted by systemd with their limits applied
//! again, adopted across a restart of gpusliced, stopped when their claims
//! are gone), refuses the metrics exporters until the packaged drop-ins allow
//! them (then serves and writes them), and is removed and purged cleanly.

const TEST: &str = "nspawn_the_deb_under_a_real_systemd";
const SCRIPT: &str = include_str!("in_container.sh");

#[test]
fn nspawn_the_deb_under_a_real_systemd() {
    super::boot(TEST, "in_container.sh", SCRIPT);
}
