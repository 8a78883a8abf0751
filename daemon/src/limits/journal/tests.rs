use std::time::Duration;

use super::message;
use crate::activity::WarningKind;
use crate::config::LimitMode;
use crate::limits::decide::Decision;
use crate::limits::enforce::Outcome;
use crate::state::AccessKind;

const GIB: u64 = 1 << 30;

fn overshare() -> Decision {
    Decision {
        kind: WarningKind::OverShare,
        mode: LimitMode::End,
        claim_uid: "7a1e".to_owned(),
        claim: "ml/infer-a".to_owned(),
        device: "gpu-2".to_owned(),
        sharing: Some(AccessKind::Mps),
        pid: 18836,
        start_time: 7,
        comm: "python".to_owned(),
        memory_used: 12 * GIB,
        claim_memory_used: 22 * GIB,
        share: Some(20 * GIB),
        over_for_s: 65,
        grace_s: 60,
    }
}

#[test]
fn an_ended_process_is_one_line_saying_what_why_and_how() {
    let ten = Duration::from_secs(10);
    assert_eq!(
        message(&overshare(), Outcome::Terminated, ten, None, None),
        "ended process 18836 (python, 12.0 GiB) of claim ml/infer-a (7a1e): the claim used \
         22.0 GiB on gpu-2 for 65 s, over its mps share of 20.0 GiB (limits: overshare = end, \
         grace 60 s); SIGTERM"
    );
    let killed = message(&overshare(), Outcome::Killed, ten, None, None);
    assert!(
        killed.ends_with("; SIGKILL, still running 10 s after SIGTERM"),
        "{killed}"
    );
    let at_once = message(&overshare(), Outcome::Killed, Duration::ZERO, None, None);
    assert!(at_once.ends_with("grace 60 s); SIGKILL"), "{at_once}");
}

#[test]
fn dry_run_and_the_outcomes_that_send_nothing_say_so() {
    let ten = Duration::from_secs(10);
    let dry = Decision {
        mode: LimitMode::DryRun,
        ..overshare()
    };
    let line = message(&dry, Outcome::WouldEnd, ten, None, None);
    assert!(
        line.starts_with("would end process 18836 (python, 12.0 GiB)"),
        "{line}"
    );
    assert!(line.ends_with("(limits: overshare = dry-run, grace 60 s); dry-run: nothing sent"));
    let gone = message(&overshare(), Outcome::Gone, ten, None, None);
    assert!(
        gone.starts_with("did not end process 18836") && gone.ends_with("it had already exited")
    );
    let reused = message(&overshare(), Outcome::PidReused, ten, None, None);
    assert!(
        reused.ends_with("(start time changed): nothing sent"),
        "{reused}"
    );
}

#[test]
fn not_permitted_names_cap_kill_and_the_owner() {
    let line = message(
        &overshare(),
        Outcome::NotPermitted,
        Duration::ZERO,
        Some(65534),
        None,
    );
    assert!(
        line.ends_with(
            "gpusliced may not signal process 18836 (uid 65534): it needs CAP_KILL; was the \
             unit changed?"
        ),
        "{line}"
    );
}

#[test]
fn an_unclaimed_process_names_its_device() {
    let d = Decision {
        kind: WarningKind::Unclaimed,
        claim_uid: String::new(),
        claim: String::new(),
        sharing: None,
        share: None,
        memory_used: GIB,
        claim_memory_used: GIB,
        over_for_s: 3,
        grace_s: 1,
        device: "gpu-1".to_owned(),
        ..overshare()
    };
    assert_eq!(
        message(&d, Outcome::Terminated, Duration::from_secs(10), None, None),
        "ended process 18836 (python, 1.0 GiB) on gpu-1: it belongs to no gpuslice claim, for \
         3 s (limits: unclaimed = end, grace 1 s); SIGTERM"
    );
}
