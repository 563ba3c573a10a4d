//! Resource TTLs (C17), sans-I/O: when each held TTL'd resource expires. A resource that
//! arrives with a TTL expires that long after it arrived unless a heartbeat (or the resource
//! again) comes first; one that arrives without a TTL does not expire. The timers keep running
//! while disconnected: an expired resource is gone whether or not a stream is up (as in Envoy).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

type Key = (String, String);

#[derive(Debug, Default)]
pub(crate) struct Expiry {
    deadlines: BTreeMap<Key, Instant>,
}

impl Expiry {
    /// `name` was applied at `now` with `ttl` (`None` clears an earlier TTL).
    pub(crate) fn set(&mut self, type_url: &str, name: &str, ttl: Option<Duration>, now: Instant) {
        let key = (type_url.to_string(), name.to_string());
        match ttl {
            Some(ttl) => self.deadlines.insert(key, now + ttl),
            None => self.deadlines.remove(&key),
        };
    }

    /// A heartbeat for a held `name` at `now`: a TTL restarts the clock; a heartbeat without
    /// one changes nothing (only resending the resource changes or removes a TTL).
    pub(crate) fn refresh(
        &mut self,
        type_url: &str,
        name: &str,
        ttl: Option<Duration>,
        now: Instant,
    ) {
        if ttl.is_some() {
            self.set(type_url, name, ttl, now);
        }
    }

    /// `name` is no longer held.
    pub(crate) fn forget(&mut self, type_url: &str, name: &str) {
        self.deadlines
            .remove(&(type_url.to_string(), name.to_string()));
    }

    /// Resources whose TTL lapsed by `now`, as (type, name); their timers are gone.
    pub(crate) fn expired(&mut self, now: Instant) -> Vec<(String, String)> {
        let due: Vec<Key> = self
            .deadlines
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &due {
            self.deadlines.remove(key);
        }
        due
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.values().min().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Option<Duration> = Some(Duration::from_secs(10));

    #[test]
    fn c17_expiry_timer() {
        let mut expiry = Expiry::default();
        let t0 = Instant::now();
        expiry.set("eds", "a", TTL, t0);
        expiry.set("eds", "b", None, t0);
        assert_eq!(expiry.next_deadline(), Some(t0 + Duration::from_secs(10)));
        assert!(expiry.expired(t0 + Duration::from_secs(9)).is_empty());
        let due = expiry.expired(t0 + Duration::from_secs(10));
        assert_eq!(due, [("eds".to_string(), "a".to_string())]);
        assert!(expiry.next_deadline().is_none(), "expired once");
    }

    #[test]
    fn c17_heartbeat_refreshes_and_a_resend_without_ttl_clears_it() {
        let mut expiry = Expiry::default();
        let t0 = Instant::now();
        expiry.set("eds", "a", TTL, t0);
        let beat = t0 + Duration::from_secs(8);
        expiry.refresh("eds", "a", TTL, beat);
        assert_eq!(expiry.next_deadline(), Some(beat + Duration::from_secs(10)));
        expiry.refresh("eds", "a", None, beat + Duration::from_secs(1));
        assert_eq!(
            expiry.next_deadline(),
            Some(beat + Duration::from_secs(10)),
            "unchanged"
        );
        expiry.set("eds", "a", None, beat);
        assert!(
            expiry.next_deadline().is_none(),
            "resent without a ttl: no expiry"
        );
        expiry.set("eds", "a", TTL, t0);
        expiry.forget("eds", "a");
        assert!(expiry.expired(t0 + Duration::from_secs(60)).is_empty());
    }
}
