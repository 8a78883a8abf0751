//! What a node's loop keeps between passes, so that it acts once per
//! change and not once per pass: each write it made until its cache shows
//! it (a watch event comes a moment after the answer), when it first saw a
//! domain without its template (the creation delay counts from there),
//! when each member's Lease went missing (a member is gone a little after
//! its Lease goes, or long after one never came), and a growing pause after
//! each failed write.
//!
//! Time is given by the caller (`Instant`s), so tests can drive it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The longest a write waits for the cache to show it before the pass may
/// make it again.
pub const PENDING: Duration = Duration::from_secs(10);
/// A member whose Lease was seen and is gone (its Node deleted) is gone
/// this long after (its own removal of its entry comes before its Lease's:
/// this lets that reach the cache first).
pub const GONE_AFTER_DELETE: Duration = Duration::from_secs(2);
/// A member whose Lease was never seen is gone this long after its entry
/// was first seen without one (a plugin started after the Lease went).
pub const GONE_WITHOUT_LEASE: Duration = Duration::from_secs(15);
/// Once a member is gone this long, any member removes its entry, not only
/// the first.
pub const OVERDUE: Duration = Duration::from_secs(10);
/// How long a member that is not the first waits before it corrects a
/// stale `status.status` itself (the first one usually has by then).
pub const STATUS_GRACE: Duration = Duration::from_secs(2);
/// How long a new member of a domain whose members are unsettled (fewer
/// entries than `numNodes`, two on one index, a node joining) waits for
/// them to settle before it tells its daemon the members there are.
pub const MEMBERS_HOLD: Duration = Duration::from_secs(5);
/// How long a template found that is not the domain's is left before the
/// create is tried again.
pub const REFUSED_RETRY: Duration = Duration::from_secs(600);
/// The first and the longest pause after a failed write.
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// A write made, and the resourceVersion it made (when it is a number).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written<T> {
    what: T,
    version: Option<u64>,
    at: Instant,
}

/// What one step of a domain is, for its pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    Template,
    Lease,
    Apply,
    Remove,
    Members,
}

/// The loop's memory.
#[derive(Debug, Default)]
pub struct Memory {
    /// Per domain uid: when it was first seen without its template.
    first_seen: BTreeMap<String, Instant>,
    /// Per domain uid: no template create before then.
    template_after: BTreeMap<String, Instant>,
    /// Per domain uid: the last status write of each kind.
    applied: BTreeMap<(String, Step), Written<String>>,
    /// Per domain uid: a Lease step made, waiting for the cache.
    lease: BTreeMap<String, Written<bool>>,
    /// (uid, node) whose Lease was seen.
    lease_seen: BTreeSet<(String, String)>,
    /// (uid, node) whose entry is there without its Lease, since.
    missing: BTreeMap<(String, String), Instant>,
    /// Per step: not before, and the next pause.
    backoff: BTreeMap<(String, Step), (Instant, Duration)>,
    /// Per domain uid: since when a deferred status correction waits.
    deferred: BTreeMap<String, Instant>,
    /// Per domain uid: since when the node has a channel of it.
    member: BTreeMap<String, Instant>,
}

impl Memory {
    /// When the template of `uid` may be made, its delay counted from the
    /// first time it was seen missing.
    pub fn template_due(&mut self, uid: &str, delay: Duration, now: Instant) -> Instant {
        let first = *self.first_seen.entry(uid.to_owned()).or_insert(now);
        let after = self.template_after.get(uid).copied().unwrap_or(first);
        (first + delay).max(after)
    }

    /// No template create for `uid` before `now + pause`.
    pub fn hold_template(&mut self, uid: &str, now: Instant, pause: Duration) {
        self.template_after.insert(uid.to_owned(), now + pause);
    }

    /// The template of `uid` is in the cache.
    pub fn template_seen(&mut self, uid: &str) {
        self.first_seen.remove(uid);
        self.template_after.remove(uid);
    }

    /// Whether the status write `what` (its text) of kind `step` to `uid`
    /// was made and the cache (at `version`) has not caught up with it yet.
    pub fn written(
        &self,
        uid: &str,
        step: Step,
        what: &str,
        version: Option<u64>,
        now: Instant,
    ) -> bool {
        self.applied.get(&(uid.to_owned(), step)).is_some_and(|w| {
            let shown = matches!((w.version, version), (Some(made), Some(seen)) if seen >= made);
            w.what == what && !shown && now < w.at + PENDING
        })
    }

    /// The status write `what` of kind `step` landed at `version`.
    pub fn wrote(
        &mut self,
        uid: &str,
        step: Step,
        what: String,
        version: Option<u64>,
        now: Instant,
    ) {
        self.applied.insert(
            (uid.to_owned(), step),
            Written {
                what,
                version,
                at: now,
            },
        );
    }

    /// Whether a Lease step (`create`: true) for `uid` was made and the
    /// cache does not show it yet.
    pub fn lease_pending(&self, uid: &str, create: bool, now: Instant) -> bool {
        (self.lease.get(uid)).is_some_and(|w| w.what == create && now < w.at + PENDING)
    }

    /// A Lease step for `uid` was made.
    pub fn lease_done(&mut self, uid: &str, create: bool, now: Instant) {
        let written = Written {
            what: create,
            version: None,
            at: now,
        };
        self.lease.insert(uid.to_owned(), written);
    }

    /// The members of `uid` (other than `me`) that are gone, true when
    /// overdue, given the names its status lists and the nodes holding its
    /// Lease; and when the next one turns gone or overdue.
    pub fn gone<'a>(
        &mut self,
        uid: &str,
        me: &str,
        names: impl IntoIterator<Item = &'a str>,
        holders: &BTreeSet<String>,
        now: Instant,
    ) -> (BTreeMap<String, bool>, Option<Instant>) {
        let mut gone = BTreeMap::new();
        let mut next: Option<Instant> = None;
        for name in names.into_iter().filter(|n| *n != me) {
            let key = (uid.to_owned(), name.to_owned());
            if holders.contains(name) {
                self.missing.remove(&key);
                self.lease_seen.insert(key);
                continue;
            }
            let since = *self.missing.entry(key.clone()).or_insert(now);
            let after = if self.lease_seen.contains(&key) {
                GONE_AFTER_DELETE
            } else {
                GONE_WITHOUT_LEASE
            };
            let (gone_at, overdue_at) = (since + after, since + after + OVERDUE);
            if now >= gone_at {
                gone.insert(name.to_owned(), now >= overdue_at);
            }
            let wake = if now < gone_at { gone_at } else { overdue_at };
            if now < wake {
                next = Some(next.map_or(wake, |n| n.min(wake)));
            }
        }
        (gone, next)
    }

    /// Whether `step` of `uid` pauses after a failure; when it may go on.
    pub fn paused(&self, uid: &str, step: Step, now: Instant) -> Option<Instant> {
        let (until, _) = self.backoff.get(&(uid.to_owned(), step))?;
        (now < *until).then_some(*until)
    }

    /// `step` of `uid` failed: a pause, twice the last one (returned).
    pub fn failed(&mut self, uid: &str, step: Step, now: Instant) -> Duration {
        let key = (uid.to_owned(), step);
        let pause = self
            .backoff
            .get(&key)
            .map_or(BACKOFF_MIN, |(_, p)| (*p * 2).min(BACKOFF_MAX));
        self.backoff.insert(key, (now + pause, pause));
        pause
    }

    /// `step` of `uid` went through.
    pub fn succeeded(&mut self, uid: &str, step: Step) {
        self.backoff.remove(&(uid.to_owned(), step));
    }

    /// When a deferred status correction of `uid` (`defer`: the turn says
    /// so) may be made; None when it is not deferred.
    pub fn deferred(&mut self, uid: &str, defer: bool, now: Instant) -> Option<Instant> {
        held_for(&mut self.deferred, uid, defer, now, STATUS_GRACE)
    }

    /// Until when the node may hold its daemon's members of `uid` back while
    /// they are unsettled: [`MEMBERS_HOLD`] after it became a member (`is`:
    /// it is one now); None when it is not.
    pub fn member(&mut self, uid: &str, is: bool, now: Instant) -> Option<Instant> {
        held_for(&mut self.member, uid, is, now, MEMBERS_HOLD)
    }

    /// Forgets every domain but `live` (uids).
    pub fn keep_only(&mut self, live: &BTreeSet<String>) {
        let keep = |uid: &String| live.contains(uid);
        self.first_seen.retain(|uid, _| keep(uid));
        self.template_after.retain(|uid, _| keep(uid));
        self.applied.retain(|(uid, _), _| keep(uid));
        self.lease.retain(|uid, _| keep(uid));
        self.lease_seen.retain(|(uid, _)| keep(uid));
        self.missing.retain(|(uid, _), _| keep(uid));
        self.backoff.retain(|(uid, _), _| keep(uid));
        self.deferred.retain(|uid, _| keep(uid));
        self.member.retain(|uid, _| keep(uid));
    }
}

/// `hold` after the first `now` at which `uid` was `on` (kept in `since`),
/// for as long as it stays on; None, and forgotten, once it is off.
fn held_for(
    since: &mut BTreeMap<String, Instant>,
    uid: &str,
    on: bool,
    now: Instant,
    hold: Duration,
) -> Option<Instant> {
    if !on {
        since.remove(uid);
        return None;
    }
    Some(*since.entry(uid.to_owned()).or_insert(now) + hold)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};

    use super::{GONE_AFTER_DELETE, GONE_WITHOUT_LEASE, Memory, OVERDUE, Step};

    #[test]
    fn a_member_is_gone_soon_after_its_lease_goes_and_overdue_later() {
        let mut memory = Memory::default();
        let t0 = Instant::now();
        let held = BTreeSet::from(["b".to_owned()]);
        let (gone, _) = memory.gone("u", "a", ["a", "b"], &held, t0);
        assert!(gone.is_empty());
        let none = BTreeSet::new();
        let (gone, next) = memory.gone("u", "a", ["a", "b"], &none, t0);
        assert!(gone.is_empty());
        assert_eq!(next, Some(t0 + GONE_AFTER_DELETE));
        let (gone, _) = memory.gone("u", "a", ["b"], &none, t0 + GONE_AFTER_DELETE);
        assert_eq!(gone.get("b"), Some(&false));
        let late = t0 + GONE_AFTER_DELETE + OVERDUE;
        assert_eq!(
            memory.gone("u", "a", ["b"], &none, late).0.get("b"),
            Some(&true)
        );
        // Never seen: the long wait.
        let (gone, next) = memory.gone("u", "a", ["c"], &none, t0);
        assert!(gone.is_empty());
        assert_eq!(next, Some(t0 + GONE_WITHOUT_LEASE));
    }

    #[test]
    fn a_write_waits_for_the_cache_and_failures_pause_longer_each_time() {
        let mut memory = Memory::default();
        let t0 = Instant::now();
        memory.wrote("u", Step::Apply, "x".to_owned(), Some(10), t0);
        assert!(memory.written("u", Step::Apply, "x", Some(9), t0));
        assert!(
            !memory.written("u", Step::Apply, "x", Some(10), t0),
            "shown"
        );
        assert!(
            !memory.written("u", Step::Apply, "y", Some(9), t0),
            "another"
        );
        memory.failed("u", Step::Lease, t0);
        assert_eq!(
            memory.paused("u", Step::Lease, t0),
            Some(t0 + Duration::from_secs(1))
        );
        memory.failed("u", Step::Lease, t0);
        assert_eq!(
            memory.paused("u", Step::Lease, t0),
            Some(t0 + Duration::from_secs(2))
        );
        memory.succeeded("u", Step::Lease);
        assert_eq!(memory.paused("u", Step::Lease, t0), None);
    }
}
