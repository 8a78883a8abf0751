use std::time::{Duration, Instant};

use super::{Executor, Ledger};
use crate::activity::WarningKind;
use crate::config::LimitMode;
use crate::limits::decide::Decision;
use crate::limits::fake::{EndsOn, FakeProcesses};
use crate::state::AccessKind;

const GIB: u64 = 1 << 30;
const UID: &str = "aaaaaaaa-0000-4000-8000-000000000001";

fn decision(pid: u32, start_time: u64, mode: LimitMode) -> Decision {
    Decision {
        kind: WarningKind::OverShare,
        mode,
        claim_uid: UID.to_owned(),
        claim: "ns/a".to_owned(),
        device: "gpu-0".to_owned(),
        sharing: Some(AccessKind::Mps),
        pid,
        start_time,
        comm: "python".to_owned(),
        memory_used: 12 * GIB,
        claim_memory_used: 22 * GIB,
        share: Some(20 * GIB),
        over_for_s: 61,
        grace_s: 60,
    }
}

/// A fake whose one process is pid 100, started at `start_time`, ending as
/// `ends_on` says.
fn pid_100(start_time: u64, ends_on: EndsOn) -> FakeProcesses {
    let fake = FakeProcesses::default();
    fake.spawn(100, start_time, ends_on);
    fake
}

fn executor(fake: &FakeProcesses, term_grace_s: u64) -> (Executor<FakeProcesses>, Ledger) {
    let ledger = Ledger::default();
    let exec = Executor::new(
        fake.clone(),
        Duration::from_secs(term_grace_s),
        ledger.clone(),
    );
    (exec, ledger)
}

/// The one outcome the ledger holds, with its count.
fn outcome(ledger: &Ledger) -> (&'static str, u64) {
    let report = ledger.report();
    assert_eq!(report.counts.len(), 1, "{report:?}");
    let (&(_, _, outcome), &count) = report.counts.iter().next().unwrap();
    let last = &report.last[&(UID.to_owned(), "gpu-0".to_owned())];
    assert_eq!(last.outcome, outcome);
    (outcome, count)
}

#[test]
fn sigterm_ends_it_and_the_wait_sees_it() {
    let fake = pid_100(7, EndsOn::Term);
    let (mut exec, ledger) = executor(&fake, 10);
    let t0 = Instant::now();
    exec.start(decision(100, 7, LimitMode::End), t0);
    assert!(!fake.alive(100));
    assert_eq!(exec.pending(), 1);
    assert!(
        ledger.report().counts.is_empty(),
        "logged when the outcome is known"
    );
    exec.wait(Duration::ZERO, t0);
    assert_eq!(exec.pending(), 0);
    assert_eq!(outcome(&ledger), ("terminated", 1));
    assert_eq!(fake.calls(), ["open 100", "start_time 100", "SIGTERM 100"]);
}

#[test]
fn a_process_ignoring_sigterm_gets_sigkill_after_the_term_grace() {
    let fake = pid_100(7, EndsOn::Kill);
    let (mut exec, ledger) = executor(&fake, 10);
    let t0 = Instant::now();
    exec.start(decision(100, 7, LimitMode::End), t0);
    exec.wait(Duration::ZERO, t0 + Duration::from_secs(9));
    assert!(fake.alive(100), "within the term grace");
    assert_eq!(exec.pending(), 1);
    exec.wait(Duration::ZERO, t0 + Duration::from_secs(10));
    assert!(!fake.alive(100));
    assert_eq!(outcome(&ledger), ("killed", 1));
    assert_eq!(
        fake.calls(),
        ["open 100", "start_time 100", "SIGTERM 100", "SIGKILL 100"]
    );
}

#[test]
fn term_grace_0_sends_sigkill_at_once() {
    let fake = pid_100(7, EndsOn::Kill);
    let (mut exec, ledger) = executor(&fake, 0);
    exec.start(decision(100, 7, LimitMode::End), Instant::now());
    assert_eq!(exec.pending(), 0);
    assert_eq!(outcome(&ledger), ("killed", 1));
    assert_eq!(fake.calls().last().unwrap(), "SIGKILL 100");
}

#[test]
fn an_exited_process_is_gone_and_nothing_is_sent() {
    let fake = FakeProcesses::default();
    let (mut exec, ledger) = executor(&fake, 10);
    exec.start(decision(100, 7, LimitMode::End), Instant::now());
    assert_eq!(outcome(&ledger), ("gone", 1));
    assert_eq!(fake.calls(), ["open 100"]);
}

#[test]
fn a_reused_pid_is_not_signalled() {
    let fake = pid_100(8, EndsOn::Term);
    let (mut exec, ledger) = executor(&fake, 10);
    exec.start(decision(100, 7, LimitMode::End), Instant::now());
    assert!(fake.alive(100));
    assert_eq!(outcome(&ledger), ("pid-reused", 1));
    assert_eq!(fake.calls(), ["open 100", "start_time 100"]);
}

#[test]
fn dry_run_checks_the_process_and_sends_nothing() {
    let fake = pid_100(7, EndsOn::Term);
    let (mut exec, ledger) = executor(&fake, 10);
    exec.start(decision(100, 7, LimitMode::DryRun), Instant::now());
    assert!(fake.alive(100));
    assert_eq!(outcome(&ledger), ("would-end", 1));
    let report = ledger.report();
    assert!(
        report
            .counts
            .contains_key(&(WarningKind::OverShare, "dry-run", "would-end"))
    );
    assert_eq!(fake.calls(), ["open 100", "start_time 100"]);
}

#[test]
fn eperm_is_not_permitted_and_the_process_lives() {
    let fake = pid_100(7, EndsOn::Term);
    fake.deny(100);
    let (mut exec, ledger) = executor(&fake, 10);
    exec.start(decision(100, 7, LimitMode::End), Instant::now());
    assert!(fake.alive(100));
    assert_eq!(exec.pending(), 0);
    assert_eq!(outcome(&ledger), ("not-permitted", 1));
}

#[test]
fn the_thread_ends_a_process_and_counts_it() {
    let fake = pid_100(7, EndsOn::Term);
    let enforcer =
        super::Enforcer::start(fake.clone(), Duration::from_secs(10), Ledger::default()).unwrap();
    enforcer.submit(decision(100, 7, LimitMode::End));
    let deadline = Instant::now() + Duration::from_secs(30);
    while enforcer.ledger().report().counts.is_empty() {
        assert!(Instant::now() < deadline, "no outcome within 30 s");
        std::thread::yield_now();
    }
    assert_eq!(outcome(enforcer.ledger()), ("terminated", 1));
}

#[test]
fn the_ledger_keeps_the_last_actions_of_at_most_max_last_actions_devices() {
    let ledger = Ledger::default();
    for i in 0..=super::MAX_LAST_ACTIONS {
        let d = Decision {
            device: format!("gpu-{i}"),
            ..decision(100, 7, LimitMode::DryRun)
        };
        ledger.record(&d, super::Outcome::WouldEnd);
    }
    let report = ledger.report();
    assert_eq!(report.last.len(), super::MAX_LAST_ACTIONS);
    let newest = format!("gpu-{}", super::MAX_LAST_ACTIONS);
    assert!(report.last.contains_key(&(UID.to_owned(), newest)));
    let total: u64 = report.counts.values().sum();
    assert_eq!(
        total,
        u64::try_from(super::MAX_LAST_ACTIONS).unwrap() + 1,
        "every action counted"
    );
}

#[test]
fn every_outcome_and_acting_mode_is_one_the_activity_file_keeps() {
    use strum::VariantArray;
    let outcomes: Vec<&str> = super::Outcome::VARIANTS.iter().map(|o| o.into()).collect();
    assert_eq!(outcomes, crate::limits::saved::OUTCOMES);
    let modes: Vec<&str> = [LimitMode::DryRun, LimitMode::End]
        .iter()
        .map(|m| m.into())
        .collect();
    assert_eq!(modes, crate::limits::saved::MODES);
}
