//! The fleet's shared counts: every node task records its streams and responses here; the
//! progress line, waits and the final report read it.
//!
//! One mutex with short critical sections (a few map updates per response) is cheaper than a
//! channel hop per response, and readers get a consistent view.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use super::node::Outcome;

/// How a node came to hold a version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Its first version of the type: `at` counts from the node's first connection attempt.
    First,
    /// A change from an older version.
    Change,
}

/// One node's ACK of one version.
#[derive(Clone, Copy, Debug)]
pub struct Ack {
    pub node: u32,
    pub at: Instant,
    pub arrival: Arrival,
}

/// Everything seen about one (type, version).
#[derive(Clone, Debug)]
pub struct VersionTally {
    /// The first response carrying this version, on any node.
    pub first_seen: Instant,
    pub acks: Vec<Ack>,
    pub nacks: u64,
    pub nack_error: Option<String>,
    /// Nodes holding it now.
    pub holding: usize,
    pub responses: u64,
    pub bytes: u64,
}

/// The raw counts; [`super::report`] turns them into percentiles.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub streams_open: usize,
    /// Per node: first connection attempt.
    pub started: Vec<Option<Instant>>,
    /// Per node: when every type it asked for first had an accepted version.
    pub configured: Vec<Option<Instant>>,
    pub configured_nodes: usize,
    /// By (type URL, version).
    pub versions: BTreeMap<(String, String), VersionTally>,
    pub nacks: u64,
    pub reconnects: u64,
    pub stream_failures: u64,
    pub responses: u64,
    pub bytes: u64,
    /// Responses that did not decode (never answered: there is no nonce to echo).
    pub undecodable: u64,
    pub last_error: Option<String>,
}

/// Shared by all node tasks of one fleet.
#[derive(Debug)]
pub(crate) struct Tally {
    /// When the fleet started, on both clocks: the origin of its reports.
    pub origin: Origin,
    counts: Mutex<Counts>,
    /// Bumped on every record so waiters can re-check without polling.
    changes: watch::Sender<u64>,
}

impl Tally {
    pub(crate) fn new(nodes: usize) -> Self {
        let counts = Counts {
            started: vec![None; nodes],
            configured: vec![None; nodes],
            ..Counts::default()
        };
        Self {
            origin: Origin::now(),
            counts: Mutex::new(counts),
            changes: watch::Sender::new(0),
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Runs `f` on the counts (a consistent view).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Counts) -> T) -> T {
        f(&self.counts.lock().expect("tally lock poisoned"))
    }

    fn write(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut self.counts.lock().expect("tally lock poisoned"));
        self.changes.send_modify(|n| *n += 1);
    }

    pub(crate) fn connecting(&self, node: usize) {
        self.write(|c| {
            c.started[node].get_or_insert_with(Instant::now);
        });
    }

    pub(crate) fn stream_opened(&self) {
        self.write(|c| c.streams_open += 1);
    }

    /// A stream ended (`was_open`) or failed to open; the node will reconnect.
    pub(crate) fn stream_ended(&self, was_open: bool, error: Option<String>) {
        self.write(|c| {
            if was_open {
                c.streams_open -= 1;
                c.reconnects += 1;
            } else {
                c.stream_failures += 1;
            }
            if error.is_some() {
                c.last_error = error;
            }
        });
    }

    /// The node is shutting down with its stream open.
    pub(crate) fn stream_closed(&self) {
        self.write(|c| c.streams_open -= 1);
    }

    pub(crate) fn undecodable(&self, bytes: usize, error: String) {
        self.write(|c| {
            c.undecodable += 1;
            c.bytes += bytes as u64;
            c.last_error = Some(error);
        });
    }

    /// One handled response of `bytes` bytes. `configured`: the node now holds every type it
    /// asked for.
    pub(crate) fn response(
        &self,
        node: usize,
        bytes: usize,
        outcome: Option<&Outcome>,
        configured: bool,
    ) {
        self.write(|c| {
            // Read under the lock, so times follow the order of the records: a version's
            // first sighting is never later than an ACK of it recorded after it.
            let now = Instant::now();
            c.responses += 1;
            c.bytes += bytes as u64;
            if configured && c.configured[node].is_none() {
                c.configured[node] = Some(now);
                c.configured_nodes += 1;
            }
            let Some(outcome) = outcome else { return };
            let key = (outcome.type_url.clone(), outcome.version.clone());
            let v = c.versions.entry(key).or_insert_with(|| VersionTally {
                first_seen: now,
                acks: Vec::new(),
                nacks: 0,
                nack_error: None,
                holding: 0,
                responses: 0,
                bytes: 0,
            });
            v.responses += 1;
            v.bytes += bytes as u64;
            match &outcome.verdict {
                Err(message) => {
                    v.nacks += 1;
                    v.nack_error = Some(message.clone());
                    c.nacks += 1;
                }
                Ok(()) if outcome.first || outcome.changed => {
                    let arrival = if outcome.first {
                        Arrival::First
                    } else {
                        Arrival::Change
                    };
                    v.holding += 1;
                    v.acks.push(Ack {
                        node: node as u32,
                        at: now,
                        arrival,
                    });
                    if let Some(previous) = &outcome.previous {
                        let key = (outcome.type_url.clone(), previous.clone());
                        if let Some(old) = c.versions.get_mut(&key) {
                            old.holding = old.holding.saturating_sub(1);
                        }
                    }
                }
                Ok(()) => {} // The same version again (e.g. SotW EDS after new names).
            }
        });
    }
}

/// Where a report's clock starts: the fleet's start, on both clocks.
#[derive(Clone, Copy, Debug)]
pub struct Origin {
    pub instant: Instant,
    pub unix_us: u64,
}

impl Origin {
    pub fn now() -> Self {
        Self {
            instant: Instant::now(),
            unix_us: micros((SystemTime::now().duration_since(UNIX_EPOCH)).unwrap_or_default()),
        }
    }

    /// µs from the origin to `at` (0 for an earlier `at`).
    pub fn offset(&self, at: Instant) -> u64 {
        micros(at.saturating_duration_since(self.instant))
    }
}

/// Whole microseconds (saturating).
pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
