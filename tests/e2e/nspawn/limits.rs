//! `[limits] overshare = "end"` under the packaged, hardened unit
//! (`limits.sh`): an MPS claim's fake GPU processes run as nobody, as a
//! container's do, over the claim's memory share. With the unit's
//! `CAP_KILL` the claim's largest process is ended (its `sim exec` exits
//! 143), the other lives, and the journal has one line for it; with a
//! drop-in `CapabilityBoundingSet=~CAP_KILL` (the bounding set otherwise the
//! same) the same over-share is `not-permitted`, an ERROR line names
//! `CAP_KILL` and the owner's uid, and the process lives; with the drop-in
//! removed it is ended. So `CAP_KILL` is what ending another user's process
//! needs, and the rest of the sandbox (`ProtectProc=invisible`,
//! `SystemCallFilter=`) lets it through.

const TEST: &str = "nspawn_limits_end_another_users_process_only_with_cap_kill";
const SCRIPT: &str = include_str!("limits.sh");

#[test]
fn nspawn_limits_end_another_users_process_only_with_cap_kill() {
    super::boot(TEST, "limits.sh", SCRIPT);
}
