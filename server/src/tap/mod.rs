//! The tap: what happened on one stream, as plain events. The stream loop builds one
//! [`WireEvent`] per message after the fault stage (so every observer sees the wire as it
//! was), and only when someone listens: the registry's per-stream ring, the server-wide bus
//! (recorder, tests, the live page).
//!
//! Events never hold views or snapshots: a ring of an idle stream would pin old fixture
//! generations forever. A request's or response's part of an event is its
//! [facts](crate::protocol::facts), which the core's messages give.

use std::{sync::Arc, time::SystemTime};

use crate::{
    judge::Violation,
    protocol::{
        facts::{RequestFacts, ResponseFacts, StatusFacts, TypeName},
        kind::StreamKind,
        wire::FaultMark,
    },
};

/// One thing that happened on a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct WireEvent {
    /// When it happened.
    pub at: SystemTime,
    /// The stream's id (0: a stateless fetch).
    pub stream: u64,
    /// Position within the stream, from 1.
    pub seq: u32,
    /// Once the stream's first request named it.
    pub node: Option<Arc<str>>,
    /// What happened.
    pub what: What,
}

/// What a [`WireEvent`] reports.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// The stream opened.
    Opened(Opened),
    /// A request arrived (after the machine judged it).
    Request(Box<RequestFacts>),
    /// A response went on the wire (after the fault stage).
    Response(Box<ResponseFacts>),
    /// A fault that has no response to carry its mark (stream-level, or a dropped response).
    Fault(Box<FaultFacts>),
    /// The conformance judge found the client breaking a rule.
    Violation(Arc<Violation>),
    /// The stream ended.
    Closed(Closed),
}

/// A stream opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The variant and service it came through.
    pub kind: StreamKind,
    /// The client's address, as text.
    pub peer: Option<Box<str>>,
}

/// A fault that fired without a response line to carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultFacts {
    /// The rule that fired and its action.
    pub mark: FaultMark,
    /// The type it fired on, if it fired on one.
    pub type_url: Option<TypeName>,
    /// The nonce of the response it concerns, if any.
    pub nonce: Option<Box<str>>,
    /// Parameters or outcome, for people (`2s`, `skipped: no earlier nonce`).
    pub detail: Option<Box<str>>,
}

/// The stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    /// Who ended it.
    pub reason: CloseReason,
    /// The gRPC status the server ended it with, if it sent one.
    pub status: Option<StatusFacts>,
}

/// Why a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client ended its side or went away.
    Client,
    /// The server ended it with a gRPC status (a malformed request, a strict judge).
    Status,
    /// The stream or its connection was reset, without a status.
    Reset,
    /// The server was shutting down.
    Shutdown,
    /// A scenario fault ended it.
    Fault,
}

impl WireEvent {
    /// The event as a ring keeps it: lists cut to 8 items, no resource bodies.
    pub fn summarized(&self) -> WireEvent {
        let what = match &self.what {
            What::Request(r) => What::Request(Box::new(r.summarized())),
            What::Response(r) => What::Response(Box::new(r.summarized())),
            other => other.clone(),
        };
        WireEvent {
            what,
            node: self.node.clone(),
            ..*self
        }
    }
}

#[cfg(test)]
mod tests;
