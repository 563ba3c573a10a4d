//! Resource TTLs and heartbeats, sans-I/O (S14-S16): what a client can take, and when one
//! type on one stream is owed a heartbeat. Time is an input (`now`); the stream loop sleeps
//! until [`Heartbeats::next_deadline`] and calls the machine's `on_tick`.
//!
//! - S14: TTL'd resources go out wrapped in `Resource{name, resource, ttl}`: always in Delta;
//!   in SotW only to clients whose node advertises `xds.config.resource-in-sotw` (gRPC does;
//!   a client that does not would reject the wrapper), others get them bare, without a TTL.
//! - S15: a heartbeat (the wrapper without `resource`, the version the client holds, a new
//!   nonce) goes out every third of the smallest TTL the client holds ([`period`]), counted
//!   from when the last push was answered or the last heartbeat sent (not from its answer),
//!   and only to clients advertising `xds.config.supports-resource-ttl` (gRPC NACKs
//!   heartbeats and does not advertise it). Its ACK is neither an update nor a
//!   push: the ledger keeps the last push as `last_sent`; `/status` counts heartbeats apart.
//! - S16: a TTL'd resource that leaves the fixtures is not removed explicitly; its heartbeats
//!   stop and the client lets it expire.

use std::{
    collections::VecDeque,
    time::{Duration, Instant, SystemTime},
};

use serde::Serialize;
use xdsloop_proto::discovery::Node;

pub(crate) use xdsloop_proto::discovery::{
    RESOURCE_IN_SOTW, SUPPORTS_RESOURCE_TTL as SUPPORTS_TTL,
};

/// What a client said it can take (its node's `client_features`, on the first request).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Features {
    pub resource_in_sotw: bool,
    pub ttl: bool,
}

impl Features {
    pub(crate) fn of(node: Option<&Node>) -> Self {
        let has =
            |feature: &str| node.is_some_and(|n| n.client_features.iter().any(|f| f == feature));
        Self {
            resource_in_sotw: has(RESOURCE_IN_SOTW),
            ttl: has(SUPPORTS_TTL),
        }
    }
}

/// Heartbeats of one type on one stream, as `/status` shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeartbeatStatus {
    /// TTL'd resources the client holds from the last push.
    pub ttl_resources: usize,
    /// Heartbeats sent.
    pub sent: u64,
    /// When the latest went out.
    pub last_at: Option<SystemTime>,
}

/// How long after the last heartbeat (or the answered push) the next is due: a third of the
/// smallest TTL. One heartbeat lost on the way (a `drop` fault, a slow link) then leaves the
/// next arriving with a third of the TTL to spare; at half the TTL it would arrive just as
/// the client's copy expires and race its timer.
pub(crate) fn period(ttl: Duration) -> Duration {
    ttl / 3
}

/// Heartbeat nonces whose answers are recognised: an answer later than three periods is one to
/// a heartbeat the client's copy has long been refreshed past.
const HEARTBEAT_NONCES: usize = 3;

/// One type's heartbeat schedule on one stream.
#[derive(Debug, Default)]
pub(crate) struct Heartbeats {
    /// The smallest TTL the client holds (from the last push), and how many TTL'd resources.
    ttl: Option<Duration>,
    ttl_resources: usize,
    /// A push awaits its ACK or NACK (heartbeats do not wait for theirs: one may be lost).
    in_flight: bool,
    due: Option<Instant>,
    /// The nonces of the heartbeats sent since the last push, newest last (a few: heartbeats
    /// do not wait for their answers, so an answer may come after the next one was sent).
    nonces: VecDeque<String>,
    sent: u64,
    last_at: Option<SystemTime>,
}

impl Heartbeats {
    /// A push went out leaving the client holding `ttl_resources` TTL'd resources, the
    /// shortest living `ttl` (`None`: nothing to keep alive, or the client takes no heartbeats).
    pub(crate) fn on_push(&mut self, ttl: Option<Duration>, ttl_resources: usize) {
        self.ttl = ttl;
        self.ttl_resources = ttl_resources;
        self.in_flight = true;
        self.due = None;
        self.nonces.clear();
    }

    /// The client holds no TTL'd resource any more, though no push said so (the last one left
    /// the fixtures and is left to expire, S16): nothing to keep alive.
    pub(crate) fn stop(&mut self) {
        self.ttl = None;
        self.ttl_resources = 0;
        self.due = None;
    }

    /// The latest response (push or heartbeat) was answered.
    pub(crate) fn on_answer(&mut self) {
        self.in_flight = false;
    }

    /// Whether `nonce` is one of the heartbeats' sent since the last push (its answer is not a
    /// push's ACK or NACK, and not stale).
    pub(crate) fn answers_heartbeat(&self, nonce: &str) -> bool {
        !nonce.is_empty() && self.nonces.iter().any(|n| n == nonce)
    }

    /// Whether a heartbeat is due at `now`. A type with no push in flight and TTL'd resources
    /// held is scheduled here, a [`period`] from `now`, unless a heartbeat sent
    /// already scheduled the next.
    pub(crate) fn due(&mut self, now: Instant) -> bool {
        let Some(ttl) = self.ttl.filter(|_| !self.in_flight) else {
            self.due = None;
            return false;
        };
        match self.due {
            None => {
                self.due = Some(now + period(ttl));
                false
            }
            Some(due) => due <= now,
        }
    }

    /// A heartbeat with `nonce` went out at `now` (`at` on the wall clock). The next is due a
    /// [`period`] later whether or not this one is answered: a heartbeat lost on the way
    /// must not let the client's copy expire.
    pub(crate) fn on_sent(&mut self, nonce: String, now: Instant, at: SystemTime) {
        if self.nonces.len() == HEARTBEAT_NONCES {
            self.nonces.pop_front();
        }
        self.nonces.push_back(nonce);
        self.due = self.ttl.map(|ttl| now + period(ttl));
        self.sent += 1;
        self.last_at = Some(at);
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.due
    }

    /// `None` for a type that holds no TTL'd resource and never had a heartbeat.
    pub(crate) fn status(&self) -> Option<HeartbeatStatus> {
        (self.ttl_resources > 0 || self.sent > 0).then_some(HeartbeatStatus {
            ttl_resources: self.ttl_resources,
            sent: self.sent,
            last_at: self.last_at,
        })
    }
}

#[cfg(test)]
mod tests;
