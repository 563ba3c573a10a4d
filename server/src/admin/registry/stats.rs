//! Server-wide counters since start-up: streams, requests by verdict, responses, violations
//! and faults. Streams add to them when they publish their status, inside the lock they take
//! for that anyway, so counting costs no atomic operation per message.
//!
//! [`RecorderStats`] is the recorder's own progress, shared with its task.

use std::{
    path::PathBuf,
    sync::{
        OnceLock,
        atomic::{AtomicU64, Ordering},
    },
};

use serde::{Deserialize, Serialize};

use crate::protocol::subscription::Verdict;

/// Totals since the server started (`/status` `counters`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Streams opened (all transports).
    pub streams_opened: u64,
    /// Requests received.
    pub requests: u64,
    /// Requests that ACKed a response.
    pub acks: u64,
    /// Requests that NACKed a response.
    pub nacks: u64,
    /// Requests ignored for a stale nonce (S4).
    pub stale: u64,
    /// Responses sent.
    pub responses: u64,
    /// Conformance violations found (`docs/protocol.md` C rules).
    pub violations: u64,
    /// Scenario faults that fired.
    pub faults: u64,
}

/// What one stream did since it last published: added to [`Counters`] then reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub requests: u64,
    pub acks: u64,
    pub nacks: u64,
    pub stale: u64,
    pub responses: u64,
    pub violations: u64,
    pub faults: u64,
}

impl Tally {
    pub(crate) fn request(&mut self, verdict: Verdict) {
        self.requests += 1;
        match verdict {
            Verdict::Ack => self.acks += 1,
            Verdict::Nack => self.nacks += 1,
            Verdict::Stale => self.stale += 1,
            Verdict::Initial | Verdict::Ignored => {}
        }
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        *self == Tally::default()
    }
}

impl Counters {
    pub(crate) fn add(&mut self, tally: Tally) {
        self.requests += tally.requests;
        self.acks += tally.acks;
        self.nacks += tally.nacks;
        self.stale += tally.stale;
        self.responses += tally.responses;
        self.violations += tally.violations;
        self.faults += tally.faults;
    }
}

/// The transcript recorder's progress (`/status` `recorder`).
#[derive(Debug)]
pub(crate) struct RecorderStats {
    pub path: PathBuf,
    /// Event lines written (the header not counted).
    lines: AtomicU64,
    /// Events lost because the recorder fell behind the bus (each loss is a `gap` line).
    lost: AtomicU64,
    /// Why recording stopped early (the file could not be written).
    error: OnceLock<String>,
}

/// The transcript recorder's progress (`/status` `recorder`, with `--record`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecorderView {
    /// The transcript file (`--record`).
    pub path: String,
    /// Lines written.
    pub lines: u64,
    /// Events the recorder fell behind on and never wrote.
    pub lost: u64,
    /// Why recording stopped early; `null` while it records.
    pub error: Option<String>,
}

impl RecorderStats {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            lines: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            error: OnceLock::new(),
        }
    }

    pub(crate) fn set_lines(&self, lines: u64) {
        self.lines.store(lines, Ordering::Relaxed);
    }

    pub(crate) fn add_lost(&self, lost: u64) {
        self.lost.fetch_add(lost, Ordering::Relaxed);
    }

    /// Records why recording stopped (the first reason stays).
    pub(crate) fn set_error(&self, error: String) {
        let _ = self.error.set(error);
    }

    pub(crate) fn view(&self) -> RecorderView {
        RecorderView {
            path: self.path.display().to_string(),
            lines: self.lines.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            error: self.error.get().cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_counts_requests_by_verdict_into_the_counters() {
        let mut tally = Tally::default();
        assert!(tally.is_empty());
        for verdict in [
            Verdict::Initial,
            Verdict::Ack,
            Verdict::Nack,
            Verdict::Stale,
        ] {
            tally.request(verdict);
        }
        tally.responses += 2;
        let mut counters = Counters::default();
        counters.add(tally);
        counters.add(tally);
        assert_eq!((counters.requests, counters.acks), (8, 2));
        assert_eq!(
            (counters.nacks, counters.stale, counters.responses),
            (2, 2, 4)
        );
    }
}
