//! The real pidfds on this test's own children (no privilege needed).

use std::process::{Child, Command};
use std::time::Duration;

use super::{ControlError, EndSignal, Pidfds, ProcessControl};
use crate::activity::procfs::ProcFs;

fn sleeper() -> Child {
    Command::new("sleep").arg("600").spawn().unwrap()
}

#[test]
fn a_wrong_start_time_is_seen_and_the_right_one_lets_sigterm_end_it() {
    let mut child = sleeper();
    let pid = child.id();
    let mut control = Pidfds::new("/");
    let handle = control.open(pid).unwrap();
    let sampled = ProcFs::default().start_time_of(pid).unwrap();
    assert_eq!(control.start_time(pid).unwrap(), sampled);
    assert_ne!(
        control.start_time(pid).unwrap(),
        sampled + 1,
        "a stale start time differs"
    );
    assert_eq!(
        control.wait(&[&handle], Duration::ZERO),
        [false],
        "still running"
    );
    assert!(child.try_wait().unwrap().is_none());
    control.signal(&handle, EndSignal::Term).unwrap();
    assert_eq!(control.wait(&[&handle], Duration::from_secs(60)), [true]);
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert_eq!(control.owner(pid), None, "reaped: gone from /proc");
}

#[test]
fn a_signal_after_the_process_was_reaped_is_gone_not_sent_elsewhere() {
    let mut child = sleeper();
    let pid = child.id();
    let mut control = Pidfds::new("/");
    let handle = control.open(pid).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(matches!(
        control.signal(&handle, EndSignal::Term),
        Err(ControlError::Gone { .. })
    ));
    assert!(matches!(control.open(pid), Err(ControlError::Gone { .. })));
    assert!(matches!(
        control.start_time(pid),
        Err(ControlError::Gone { .. })
    ));
}

#[test]
fn pid_0_is_refused_before_any_call() {
    let mut control = Pidfds::new("/");
    assert!(matches!(
        control.open(0),
        Err(ControlError::Gone { pid: 0 })
    ));
}
