//! The server's outages on purpose (`do: { outage: { for: 10s } }`), as data: the one in
//! progress, the last one over, and how many there were. The rule's firing writes it
//! ([`Outages::begin`]); the accept loop follows it (closes the listener and every connection,
//! listens again when it is over and says so with [`Outages::end`]); `/status` reads it.
//! Shared by everything that holds the server's [`super::Scenarios`].

use std::{
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant, SystemTime},
};

use tokio::sync::watch;

/// One outage: which rule, what set it off, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outage {
    /// The id of the rule that set it off.
    pub rule: String,
    /// The scenario installation that rule belongs to (`/status` `scenario.generation`).
    pub generation: u64,
    /// What set it off, for people: `installed`, `after 5s`, `requested cds web by node n on
    /// stream 3`.
    pub trigger: String,
    /// When the listener closed.
    pub started_at: SystemTime,
    /// How long it stays closed.
    pub duration: Duration,
    /// When the listener opens again (monotonic, for the accept loop's timer).
    pub until: Instant,
    /// Connections open when it began, all closed by it (set by the accept loop).
    pub connections_closed: usize,
    /// When the listener was bound again; `None` while it lasts.
    pub ended_at: Option<SystemTime>,
    /// Past its time, the address could not be bound again (another process took the port):
    /// the last error, while it keeps failing.
    pub rebind: Option<RebindFailure>,
}

/// The listener's address cannot be bound again after an outage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebindFailure {
    /// The last bind error.
    pub error: String,
    /// The first failed attempt.
    pub since: SystemTime,
    /// Attempts so far.
    pub attempts: u64,
}

#[derive(Debug, Default)]
struct Log {
    current: Option<Outage>,
    last: Option<Outage>,
    count: u64,
}

/// The outage log and the signal the accept loop waits on. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Outages {
    log: Arc<Mutex<Log>>,
    /// `Some(until)` while an outage is in progress.
    signal: Arc<watch::Sender<Option<Instant>>>,
}

impl Default for Outages {
    fn default() -> Self {
        Self {
            log: Arc::default(),
            signal: Arc::new(watch::Sender::new(None)),
        }
    }
}

impl Outages {
    fn lock(&self) -> MutexGuard<'_, Log> {
        // Plain data behind the lock: a panic elsewhere leaves it usable.
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts `outage`; `false` (and nothing changes) while another is in progress.
    pub(crate) fn begin(&self, outage: Outage) -> bool {
        let until = outage.until;
        {
            let mut log = self.lock();
            if log.current.is_some() {
                return false;
            }
            log.current = Some(outage);
            log.count += 1;
        }
        self.signal.send_replace(Some(until));
        true
    }

    /// The accept loop closed `connections` when the outage began.
    pub(crate) fn closed(&self, connections: usize) {
        if let Some(current) = &mut self.lock().current {
            current.connections_closed = connections;
        }
    }

    /// Binding the address again failed with `error`; returns the attempts so far.
    pub(crate) fn rebind_failed(&self, error: String) -> u64 {
        let mut log = self.lock();
        let Some(current) = &mut log.current else {
            return 0;
        };
        let failure = current.rebind.get_or_insert_with(|| RebindFailure {
            error: String::new(),
            since: SystemTime::now(),
            attempts: 0,
        });
        failure.error = error;
        failure.attempts += 1;
        failure.attempts
    }

    /// The listener is bound again: the outage in progress is over.
    pub(crate) fn end(&self) {
        {
            let mut log = self.lock();
            if let Some(mut done) = log.current.take() {
                done.ended_at = Some(SystemTime::now());
                done.rebind = None;
                log.last = Some(done);
            }
        }
        self.signal.send_replace(None);
    }

    /// The outage in progress, if one.
    pub(crate) fn current(&self) -> Option<Outage> {
        self.lock().current.clone()
    }

    /// The last outage that is over, if one.
    pub(crate) fn last(&self) -> Option<Outage> {
        self.lock().last.clone()
    }

    /// Outages since the server started.
    pub(crate) fn count(&self) -> u64 {
        self.lock().count
    }

    pub(crate) fn is_active(&self) -> bool {
        self.signal.borrow().is_some()
    }

    /// `Some(until)` while an outage is in progress, then every change.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Option<Instant>> {
        self.signal.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outage(rule: &str) -> Outage {
        Outage {
            rule: rule.into(),
            generation: 1,
            trigger: "installed".into(),
            started_at: SystemTime::now(),
            duration: Duration::from_secs(1),
            until: Instant::now() + Duration::from_secs(1),
            connections_closed: 0,
            ended_at: None,
            rebind: None,
        }
    }

    #[test]
    fn one_outage_at_a_time_and_the_last_one_is_kept_when_over() {
        let outages = Outages::default();
        let signal = outages.subscribe();
        assert!(outages.begin(outage("first")));
        assert!(!outages.begin(outage("second")), "one is in progress");
        assert!(outages.is_active() && signal.borrow().is_some());
        outages.closed(2);
        assert_eq!(outages.current().unwrap().connections_closed, 2);
        assert_eq!(outages.rebind_failed("address in use".into()), 1);
        assert_eq!(outages.rebind_failed("address in use".into()), 2);
        let failing = outages.current().unwrap().rebind.unwrap();
        assert_eq!(
            (failing.error.as_str(), failing.attempts),
            ("address in use", 2)
        );
        outages.end();
        assert_eq!(
            outages.last().unwrap().rebind,
            None,
            "bound again in the end"
        );
        assert!(!outages.is_active() && signal.borrow().is_none());
        let last = outages.last().unwrap();
        assert_eq!(last.rule, "first");
        assert!(last.ended_at.is_some());
        assert_eq!(outages.count(), 1);
        assert!(outages.begin(outage("second")), "over: a new one may start");
        assert_eq!(outages.count(), 2);
    }
}
