//! The one restart policy of the daemons gpusliced keeps (a kind of
//! access's, a ComputeDomain's), whoever restarts them: gpusliced's own watcher
//! thread for a child ([`Restarts`] counts and decides), systemd for a unit
//! (a transient unit gets [`RestartPolicy::unit_properties`], and the shipped
//! template `gpuslice-imex@.service` states the same values, which a test
//! holds to [`DAEMON_RESTARTS`]). Changing how the daemons restart is
//! changing that one value. Pure but for the property values.

use std::time::Duration;

use zbus::zvariant::Value;

/// How a daemon that exits on its own is started again, and when it is
/// given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Failed starts in a row (the daemon died within [`Self::quick`], or did
    /// not come back ready) after which it is given up as failed.
    pub give_up_after: u32,
    /// A daemon that lived less than this died quickly: its start failed.
    pub quick: Duration,
    /// The pause before a restart (systemd's `RestartSec`; a child waits
    /// this times the failed starts in a row, so one that lived long is
    /// started again at once).
    pub delay: Duration,
    /// The window systemd counts starts in (`StartLimitIntervalSec`), with
    /// [`Self::give_up_after`] as its burst.
    pub start_window: Duration,
}

/// The policy of every daemon gpusliced keeps.
pub const DAEMON_RESTARTS: RestartPolicy = RestartPolicy {
    give_up_after: 5,
    quick: Duration::from_secs(1),
    delay: Duration::from_secs(1),
    start_window: Duration::from_secs(30),
};

impl RestartPolicy {
    /// The properties of a transient unit that restart it by this policy.
    #[must_use]
    pub fn unit_properties(&self) -> Vec<(&'static str, Value<'static>)> {
        vec![
            ("Restart", Value::from("on-failure")),
            ("RestartUSec", Value::from(micros(self.delay))),
            ("StartLimitBurst", Value::from(self.give_up_after)),
            (
                "StartLimitIntervalUSec",
                Value::from(micros(self.start_window)),
            ),
        ]
    }

    /// The lines of a unit file that restart it by this policy, as
    /// `(section, key, value)`.
    #[must_use]
    pub fn unit_file_lines(&self) -> [(&'static str, &'static str, String); 4] {
        [
            ("Unit", "StartLimitIntervalSec", seconds(self.start_window)),
            ("Unit", "StartLimitBurst", self.give_up_after.to_string()),
            ("Service", "Restart", "on-failure".to_owned()),
            ("Service", "RestartSec", seconds(self.delay)),
        ]
    }
}

/// What a watcher does after a start ended or was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Start it again after this pause (zero: at once).
    Restart(Duration),
    /// Give it up: it failed [`RestartPolicy::give_up_after`] starts in a row.
    GiveUp,
}

/// A child's failed starts in a row, judged by a [`RestartPolicy`].
#[derive(Debug, Clone)]
pub struct Restarts {
    policy: RestartPolicy,
    failed_in_a_row: u32,
}

impl Restarts {
    /// None failed yet.
    #[must_use]
    pub fn new(policy: RestartPolicy) -> Self {
        Self {
            policy,
            failed_in_a_row: 0,
        }
    }

    /// The daemon exited after living `lived`: a quick death is a failed
    /// start, a long life clears the count.
    pub fn exited_after(&mut self, lived: Duration) -> Verdict {
        if lived < self.policy.quick {
            self.failed()
        } else {
            self.failed_in_a_row = 0;
            Verdict::Restart(Duration::ZERO)
        }
    }

    /// A start failed (it did not come back ready).
    pub fn failed(&mut self) -> Verdict {
        self.failed_in_a_row += 1;
        if self.failed_in_a_row >= self.policy.give_up_after {
            Verdict::GiveUp
        } else {
            Verdict::Restart(self.policy.delay / 5 * self.failed_in_a_row)
        }
    }

    /// A start succeeded (the daemon came back ready).
    pub fn succeeded(&mut self) {
        self.failed_in_a_row = 0;
    }

    /// Why a daemon was given up, by the policy's numbers: "it exited
    /// within a second of each of its last 5 starts".
    #[must_use]
    pub fn give_up_reason(&self) -> String {
        let quick = match self.policy.quick.as_secs() {
            1 if self.policy.quick.subsec_nanos() == 0 => "a second".to_owned(),
            _ => format!("{:?}", self.policy.quick),
        };
        let starts = self.policy.give_up_after;
        format!("it exited within {quick} of each of its last {starts} starts")
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RestartPolicy = RestartPolicy {
        give_up_after: 3,
        quick: Duration::from_secs(1),
        delay: Duration::from_secs(1),
        start_window: Duration::from_secs(30),
    };

    #[test]
    fn quick_deaths_in_a_row_give_up_and_a_long_life_clears_them() {
        let mut r = Restarts::new(POLICY);
        let (quick, long) = (Duration::from_millis(10), Duration::from_secs(5));
        let pause = |ms| Verdict::Restart(Duration::from_millis(ms));
        let lives = [(quick, pause(200)), (quick, pause(400)), (long, pause(0))];
        let again = [
            (quick, pause(200)),
            (quick, pause(400)),
            (quick, Verdict::GiveUp),
        ];
        for (lived, verdict) in lives.into_iter().chain(again) {
            assert_eq!(r.exited_after(lived), verdict, "after {lived:?}");
        }
    }

    #[test]
    fn the_reason_for_giving_up_states_the_policy() {
        let r = Restarts::new(DAEMON_RESTARTS);
        assert_eq!(
            r.give_up_reason(),
            "it exited within a second of each of its last 5 starts"
        );
        let r = Restarts::new(RestartPolicy {
            quick: Duration::from_millis(1500),
            ..POLICY
        });
        assert_eq!(
            r.give_up_reason(),
            "it exited within 1.5s of each of its last 3 starts"
        );
    }

    #[test]
    fn a_ready_start_clears_the_failed_ones() {
        let mut r = Restarts::new(POLICY);
        assert!(matches!(r.failed(), Verdict::Restart(_)));
        assert!(matches!(r.failed(), Verdict::Restart(_)));
        r.succeeded();
        assert!(matches!(r.failed(), Verdict::Restart(_)));
        assert!(matches!(r.failed(), Verdict::Restart(_)));
        assert_eq!(r.failed(), Verdict::GiveUp);
    }

    #[test]
    fn a_transient_unit_restarts_by_the_policy() {
        let props = DAEMON_RESTARTS.unit_properties();
        let get = |name: &str| props.iter().find(|(key, _)| *key == name).map(|(_, v)| v);
        assert_eq!(get("Restart"), Some(&Value::from("on-failure")));
        assert_eq!(get("RestartUSec"), Some(&Value::from(1_000_000u64)));
        assert_eq!(get("StartLimitBurst"), Some(&Value::from(5u32)));
        assert_eq!(
            get("StartLimitIntervalUSec"),
            Some(&Value::from(30_000_000u64))
        );
    }

    /// The shipped IMEX template unit restarts by the same policy: a change
    /// of [`DAEMON_RESTARTS`] fails here until the unit says it too.
    #[test]
    fn the_shipped_imex_unit_states_the_policy() {
        let unit = include_str!("../../../systemd/gpuslice-imex@.service");
        let mut section = "";
        let mut found = Vec::new();
        for line in unit.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name;
            } else if let Some((key, value)) = line.split_once('=') {
                found.push((section.to_owned(), key.to_owned(), value.to_owned()));
            }
        }
        for (want_section, key, value) in DAEMON_RESTARTS.unit_file_lines() {
            assert!(
                found.contains(&(want_section.to_owned(), key.to_owned(), value.clone())),
                "gpuslice-imex@.service lacks [{want_section}] {key}={value}"
            );
        }
    }
}
