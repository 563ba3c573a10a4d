//! Not-found detection (C14): a requested resource that has not arrived within a timeout is
//! reported missing. The timer starts when the subscribing request was actually sent on a live
//! stream, stops on disconnect, and is never started for a resource already held.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

type Key = (String, String);

#[derive(Debug)]
pub(crate) struct NotFound {
    timeout: Duration,
    deadlines: BTreeMap<Key, Instant>,
    /// Reported missing and not received since: not reported again.
    missing: BTreeSet<Key>,
    /// Awaited when an update of their type was rejected: the server answered, so no timer
    /// runs for them again on this stream.
    rejected: BTreeSet<Key>,
}

impl NotFound {
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            deadlines: BTreeMap::new(),
            missing: BTreeSet::new(),
            rejected: BTreeSet::new(),
        }
    }

    /// A request subscribing `name` went out at `now`. The caller passes only names not held.
    pub(crate) fn start(&mut self, type_url: &str, name: &str, now: Instant) {
        let key = (type_url.to_string(), name.to_string());
        if self.missing.contains(&key) || self.rejected.contains(&key) {
            return;
        }
        self.deadlines.entry(key).or_insert(now + self.timeout);
    }

    /// The resource arrived: no timer, and a later absence may be reported again.
    pub(crate) fn received(&mut self, type_url: &str, name: &str) {
        let key = (type_url.to_string(), name.to_string());
        self.deadlines.remove(&key);
        self.missing.remove(&key);
        self.rejected.remove(&key);
    }

    /// Nobody wants the name any more.
    pub(crate) fn forget(&mut self, type_url: &str, name: &str) {
        self.received(type_url, name);
    }

    /// The stream carrying `type_url` ended: its timers stop; they restart when the
    /// resubscription is sent.
    pub(crate) fn on_disconnect(&mut self, type_url: &str) {
        self.deadlines.retain(|(t, _), _| t != type_url);
        self.rejected.retain(|(t, _)| t != type_url);
    }

    /// An update of `type_url` was rejected: the server answered, so its timers stop (as
    /// Envoy's init-fetch timer does) and do not start again on this stream; a request for
    /// a new name starts one.
    pub(crate) fn on_rejected(&mut self, type_url: &str) {
        let stopped: Vec<Key> = self
            .deadlines
            .keys()
            .filter(|(t, _)| t == type_url)
            .cloned()
            .collect();
        for key in stopped {
            self.deadlines.remove(&key);
            self.rejected.insert(key);
        }
    }

    /// The server said the resource does not exist (Delta `removed_resources`). Returns whether
    /// this is news (not already reported).
    pub(crate) fn mark_missing(&mut self, type_url: &str, name: &str) -> bool {
        let key = (type_url.to_string(), name.to_string());
        self.deadlines.remove(&key);
        self.missing.insert(key)
    }

    /// Timers expired at `now`, as (type, name), now reported missing.
    pub(crate) fn expired(&mut self, now: Instant) -> Vec<(String, String)> {
        let due: Vec<Key> = self
            .deadlines
            .iter()
            .filter(|(_, deadline)| **deadline <= now)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &due {
            self.deadlines.remove(key);
            self.missing.insert(key.clone());
        }
        due
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.values().min().copied()
    }

    pub(crate) fn is_missing(&self, type_url: &str, name: &str) -> bool {
        self.missing
            .contains(&(type_url.to_string(), name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c14_timer_reports_a_resource_never_received_once() {
        let mut timers = NotFound::new(Duration::from_secs(15));
        let t0 = Instant::now();
        timers.start("eds", "ghost", t0);
        assert_eq!(timers.next_deadline(), Some(t0 + Duration::from_secs(15)));
        assert!(timers.expired(t0 + Duration::from_secs(14)).is_empty());
        let due = timers.expired(t0 + Duration::from_secs(15));
        assert_eq!(due, vec![("eds".to_string(), "ghost".to_string())]);
        timers.start("eds", "ghost", t0 + Duration::from_secs(20));
        assert!(
            timers.next_deadline().is_none(),
            "already reported: no new timer"
        );
    }

    #[test]
    fn c14_timer_stops_on_receipt_and_on_disconnect() {
        let mut timers = NotFound::new(Duration::from_secs(1));
        let t0 = Instant::now();
        timers.start("eds", "a", t0);
        timers.start("eds", "b", t0);
        timers.received("eds", "a");
        timers.on_disconnect("eds");
        assert!(timers.expired(t0 + Duration::from_secs(5)).is_empty());
        assert!(timers.next_deadline().is_none());
    }

    #[test]
    fn c14_a_per_type_stream_ending_stops_only_its_own_timers() {
        let mut timers = NotFound::new(Duration::from_secs(1));
        let t0 = Instant::now();
        timers.start("eds", "a", t0);
        timers.start("rds", "r", t0);
        timers.on_disconnect("eds");
        let due = timers.expired(t0 + Duration::from_secs(5));
        assert_eq!(due, vec![("rds".to_string(), "r".to_string())]);
    }

    #[test]
    fn c14_timer_starts_from_the_first_send_not_a_later_one() {
        let mut timers = NotFound::new(Duration::from_secs(10));
        let t0 = Instant::now();
        timers.start("rds", "r", t0);
        timers.start("rds", "r", t0 + Duration::from_secs(5));
        assert_eq!(timers.next_deadline(), Some(t0 + Duration::from_secs(10)));
    }

    #[test]
    fn delta_removal_marks_missing_at_once() {
        let mut timers = NotFound::new(Duration::from_secs(10));
        timers.start("cds", "c", Instant::now());
        assert!(timers.mark_missing("cds", "c"));
        assert!(!timers.mark_missing("cds", "c"), "reported once");
        assert!(timers.next_deadline().is_none());
        timers.received("cds", "c");
        assert!(!timers.is_missing("cds", "c"));
    }
}
