//! The conformance judge: checks, as a stream runs, the client rules of `docs/protocol.md`
//! that can be seen on the wire, and names each violation after its rule.
//!
//! One [`Judge`] per stream runs inline in the stream loop (a strict server must be able to
//! close the stream on the request that broke a rule). It reads the machine's own ledger
//! *before* the machine handles a request, so it keeps no copy of the protocol state, and it
//! allocates nothing while a client behaves. Each rule is a field of the judge, checked by
//! static dispatch. This build checks no rules yet: every hook is in place, every call returns
//! no violation, and the stream loop already turns violations into events, counters and logs.

use std::sync::Arc;

use crate::protocol::{
    held::Held,
    subscription::{Exchange, Ledger},
};

/// A client behaviour a rule forbids, with the evidence in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The rule in docs/protocol.md (`C5`).
    pub rule: &'static str,
    /// The check within it (`C5.nack-version`).
    pub check: &'static str,
    /// The type the offending request or response was about, if one.
    pub type_url: Option<Arc<str>>,
    /// The judge's sentence: what was seen, against what was expected.
    pub message: Box<str>,
}

/// What the judge reads of a request, borrowed from it (nothing is copied to judge it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestView<'a> {
    pub type_url: &'a str,
    /// SotW `version_info`; empty for Delta, whose requests carry none.
    pub version: &'a str,
    pub nonce: &'a str,
    pub has_node: bool,
    /// `error_detail`'s code and message: the request is a NACK.
    pub error: Option<(i32, &'a str)>,
}

/// One stream's judge.
#[derive(Debug, Default)]
pub struct Judge {
    found: Vec<Violation>,
}

impl Judge {
    pub fn new() -> Self {
        Self::default()
    }

    /// Before the machine handles `request`: `ledger` is the type's wire history so far and
    /// `nonces_issued` how many nonces the stream has handed out (`_issued`).
    pub fn before(&mut self, _request: &RequestView<'_>, _ledger: Option<&Ledger>, _issued: u64) {}

    /// After the machine handled the request, with what it decided.
    pub fn after(&mut self, _exchange: Exchange) {}

    /// A response went on the wire.
    pub fn on_response(&mut self, _type_url: &str, _nonce: &str) {}

    /// Whether [`Self::closed`] needs what the client held (building it moves the machine's
    /// maps, so the loop asks first).
    pub fn wants_held(&self) -> bool {
        false
    }

    /// The stream ended with the client holding `held`.
    pub fn closed(&mut self, _held: Held) {}

    /// The violations found since the last call, oldest first.
    pub fn take_violations(&mut self) -> Vec<Violation> {
        std::mem::take(&mut self.found)
    }
}
