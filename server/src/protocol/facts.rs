//! What a request or a response says, as plain data: the facts each message gives whoever
//! observes or judges a stream ([`TapRequest`], [`TapResponse`]), and the gRPC status a stream
//! ends with. The machines' messages carry these traits ([`crate::protocol::machine`]), so the
//! rooms around the core (the tap, the judge, the fault stage, replay) read a message without
//! knowing whether it is SotW or Delta.
//!
//! Names and versions are copied, at most [`SUMMARY_ITEMS`] of each list at
//! [`Capture::Summary`]; only [`Capture::Bodies`] keeps the resources themselves.

mod messages;

use std::{collections::HashMap, ops::Deref, sync::Arc};

use xdsloop_proto::{Resource, type_url};
use xdsloop_transcript::step::{Change as StepChange, Step, Verdict as StepVerdict};

use crate::protocol::{
    kind::Variant,
    subscription::{Change, Exchange, Verdict},
    wire::FaultMark,
};

pub(crate) const SUMMARY_ITEMS: usize = 8;

/// How much of a message an event keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Capture {
    /// The first 8 items of each list and the counts (the ring).
    Summary,
    /// Every name and version (a recorder, a test).
    Full,
    /// Every name and version, and the resources themselves (`--record-resources`).
    Bodies,
}

impl Capture {
    fn limit(self) -> usize {
        match self {
            Capture::Summary => SUMMARY_ITEMS,
            Capture::Full | Capture::Bodies => usize::MAX,
        }
    }
}

/// A request, as it arrived and as the machine judged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFacts {
    /// The request's type URL.
    pub type_url: TypeName,
    /// ACK, NACK, stale or initial, from its nonce and `error_detail`.
    pub verdict: Verdict,
    /// The first request for its type on this stream.
    pub first_for_type: bool,
    /// Whether it widened or narrowed the interest in its type.
    pub change: Change,
    /// Whether it subscribes to the wildcard, as the machine read it ([`Exchange::wildcard`]).
    pub wildcard: bool,
    /// The node's earlier streams had this type: a first request for it is a resubscription.
    pub earlier_had_type: bool,
    /// SotW `version_info` (empty for Delta).
    pub version: Box<str>,
    /// `response_nonce`.
    pub nonce: Box<str>,
    /// Its `error_detail`, on a NACK.
    pub error: Option<ErrorFacts>,
    /// It carried a `node` (a stream's first request must; later ones may leave it out).
    pub has_node: bool,
    /// The resource names it asked for.
    pub names: Names,
}

/// A request's `error_detail`: what makes it a NACK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorFacts {
    /// The gRPC status code.
    pub code: i32,
    /// The client's reason, as it wrote it.
    pub message: Box<str>,
}

/// What a request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    /// SotW: the full list, every time.
    Sotw(Listed<Box<str>>),
    /// Delta: changes only, and on a first request the versions the client holds.
    Delta {
        /// `resource_names_subscribe`.
        subscribe: Listed<Box<str>>,
        /// `resource_names_unsubscribe`.
        unsubscribe: Listed<Box<str>>,
        /// `initial_resource_versions`: (name, version) pairs.
        initial_versions: Listed<(Box<str>, Box<str>)>,
    },
}

/// A response as it went on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseFacts {
    /// The response's type URL.
    pub type_url: TypeName,
    /// SotW or Delta.
    pub variant: Variant,
    /// SotW `version_info`, Delta `system_version_info`.
    pub version: Box<str>,
    /// The nonce a client echoes to ACK or NACK it.
    pub nonce: Box<str>,
    /// Name and version of each resource, in entry order.
    pub resources: Listed<(Box<str>, Box<str>)>,
    /// Delta `removed_resources`.
    pub removed: Listed<Box<str>>,
    /// Encoded size of the message.
    pub bytes: usize,
    /// The scenario rule that changed it on its way out.
    pub fault: Option<FaultMark>,
    /// The resources themselves, only at [`Capture::Bodies`].
    pub bodies: Option<Arc<[Arc<Resource>]>>,
    /// A heartbeat (S15): `resources` are the ones it keeps alive, and it carries no bodies.
    pub heartbeat: bool,
}

/// A gRPC status by its numeric code (the transport names it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusFacts {
    /// The gRPC status code.
    pub code: i32,
    /// The status message.
    pub message: Box<str>,
}

/// Some items of a list, and how many it had.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Listed<T> {
    /// The items kept (all of them, or the first few: see [`Capture`]).
    pub items: Box<[T]>,
    /// How many the list had.
    pub total: usize,
}

impl<T: Clone> Listed<T> {
    /// As many of `items` as `capture` keeps.
    pub fn capture(items: impl ExactSizeIterator<Item = T>, capture: Capture) -> Self {
        let total = items.len();
        Self {
            items: items.take(capture.limit()).collect(),
            total,
        }
    }

    /// Every item is here.
    pub fn is_complete(&self) -> bool {
        self.items.len() == self.total
    }

    fn summarized(&self) -> Self {
        let items = self.items.iter().take(SUMMARY_ITEMS).cloned().collect();
        Self {
            items,
            total: self.total,
        }
    }
}

/// A type URL without an allocation for the known xDS types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeName {
    /// One of the xDS types xdsloop knows (`type_url::ORDERED`).
    Known(&'static str),
    /// Any other type URL.
    Other(Arc<str>),
}

impl TypeName {
    /// The name for `url`, without an allocation if it is a known type.
    pub fn of(url: &str) -> Self {
        let known = type_url::ORDERED.iter().find(|(_, known)| *known == url);
        known.map_or_else(|| TypeName::Other(url.into()), |(_, u)| TypeName::Known(u))
    }
}

impl Deref for TypeName {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            TypeName::Known(url) => url,
            TypeName::Other(url) => url,
        }
    }
}

/// What the judge reads of a request, borrowed from it (nothing is copied to judge it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestView<'a> {
    pub type_url: &'a str,
    /// SotW `version_info`; empty for Delta, whose requests carry none.
    pub version: &'a str,
    pub nonce: &'a str,
    pub has_node: bool,
    /// The node's id, when the request carries a node.
    pub node_id: Option<&'a str>,
    /// `error_detail`'s code and message: the request is a NACK.
    pub error: Option<(i32, &'a str)>,
    /// Delta `initial_resource_versions`; `None` for SotW.
    pub initial_versions: Option<&'a HashMap<String, String>>,
}

/// A request type the tap can describe.
pub(crate) trait TapRequest {
    /// The fields the judge reads, borrowed.
    fn view(&self) -> RequestView<'_>;
    /// The request's own facts; [`RequestFacts::settle`] adds the machine's verdict.
    fn facts(&self, capture: Capture) -> RequestFacts;
}

/// A response type the tap can describe.
pub(crate) trait TapResponse {
    fn type_url(&self) -> &str;
    fn nonce(&self) -> &str;
    fn facts(&self, capture: Capture) -> ResponseFacts;
}

impl RequestFacts {
    /// Adds what the machine decided and whether the node's earlier streams had the type.
    pub fn settle(&mut self, exchange: Exchange, earlier_had_type: bool) {
        self.verdict = exchange.verdict;
        self.first_for_type = exchange.first_for_type;
        self.change = exchange.change;
        self.wildcard = exchange.wildcard;
        self.earlier_had_type = earlier_had_type;
    }

    /// The loop step this request takes (the transcript's and the page's label).
    pub fn step(&self) -> Step {
        Step::of_request(
            step_verdict(self.verdict),
            self.first_for_type,
            self.earlier_had_type,
            step_change(self.change),
        )
    }
}

pub(crate) fn step_verdict(verdict: Verdict) -> StepVerdict {
    match verdict {
        Verdict::Initial => StepVerdict::Initial,
        Verdict::Ack => StepVerdict::Ack,
        Verdict::Nack => StepVerdict::Nack,
        Verdict::Stale => StepVerdict::Stale,
        Verdict::Ignored => StepVerdict::Ignored,
    }
}

pub(crate) fn step_change(change: Change) -> Option<StepChange> {
    match change {
        Change::None => None,
        Change::Widened => Some(StepChange::Widened),
        Change::Narrowed => Some(StepChange::Narrowed),
    }
}

impl Names {
    fn summarized(&self) -> Names {
        match self {
            Names::Sotw(names) => Names::Sotw(names.summarized()),
            Names::Delta {
                subscribe,
                unsubscribe,
                initial_versions,
            } => Names::Delta {
                subscribe: subscribe.summarized(),
                unsubscribe: unsubscribe.summarized(),
                initial_versions: initial_versions.summarized(),
            },
        }
    }
}

impl RequestFacts {
    /// The facts as a ring keeps them: lists cut to 8 items.
    pub fn summarized(&self) -> RequestFacts {
        RequestFacts {
            type_url: self.type_url.clone(),
            version: self.version.clone(),
            nonce: self.nonce.clone(),
            error: self.error.clone(),
            names: self.names.summarized(),
            ..*self
        }
    }
}

impl ResponseFacts {
    /// The facts as a ring keeps them: lists cut to 8 items, no resource bodies.
    pub fn summarized(&self) -> ResponseFacts {
        ResponseFacts {
            type_url: self.type_url.clone(),
            version: self.version.clone(),
            nonce: self.nonce.clone(),
            resources: self.resources.summarized(),
            removed: self.removed.summarized(),
            fault: self.fault.clone(),
            bodies: None,
            ..*self
        }
    }
}

#[cfg(test)]
mod tests;
