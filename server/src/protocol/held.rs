//! What a client holds of every type when its stream ends: what a well-behaved client
//! declares when it comes back (C11), read by the conformance judge.

use std::collections::BTreeMap;

use crate::protocol::subscription::Interest;

/// What the client holds of every type when its stream ends: what a well-behaved client
/// declares when it comes back (C11).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Held {
    /// By type URL.
    pub types: BTreeMap<String, TypeHeld>,
}

/// One type at the end of a stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TypeHeld {
    pub interest: Interest,
    /// The version the client last ACKed (SotW: its `version_info`; Delta: the response's
    /// `system_version_info`).
    pub last_acked: Option<String>,
    /// The latest response was answered with an ACK (not a NACK, not unanswered).
    pub acked: bool,
    /// Delta: what the client holds, name → version, or `None` for "told it does not exist".
    /// Built when the stream ends (only for the conformance judge). Empty for SotW.
    pub delta_known: BTreeMap<String, Option<String>>,
}
