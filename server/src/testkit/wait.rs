//! Awaiting what a node did: "node N ACKed type T (at version V)", "node N NACKed type T".
//!
//! The journal listened from the server's start, so an await first reads what already
//! happened, then waits for what the bus brings next: nothing falls between the two. Only if
//! the journal lost events (it fell behind, or filled up) does an await also read the
//! registry's per-stream ledgers, which keep each type's last ACK and NACK.
//!
//! A timeout says what the node did instead: its last messages of that type, and its ledger.

use std::{
    fmt::Write as _,
    time::{Duration, SystemTime},
};

use tokio::time::Instant;
use xdsloop_proto::type_url;

use super::journal::{Journal, Kept};
use crate::judge::Violation;
use crate::tap::{What, WireEvent};
use crate::{
    admin::registry::{Registry, StreamStatus},
    protocol::{
        facts::RequestFacts,
        subscription::{TypeStatus, Verdict},
    },
};

/// A point in the server's history ([`super::TestServer::mark`]): awaits after it look only at
/// what happened since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mark(pub(super) usize);

/// The client accepted a response (its request echoed the nonce, without `error_detail`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    /// The stream the ACK came on.
    pub stream: u64,
    /// The type URL.
    pub type_url: String,
    /// The version of the response it accepted.
    pub version: String,
    /// The nonce the client echoed.
    pub nonce: String,
    /// When the server received the ACK.
    pub at: SystemTime,
}

/// The client rejected a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nack {
    /// The stream the NACK came on.
    pub stream: u64,
    /// The type URL.
    pub type_url: String,
    /// The version of the response it rejected.
    pub version: String,
    /// The nonce the client echoed.
    pub nonce: String,
    /// Its `error_detail`.
    pub code: i32,
    /// The client's reason (`error_detail.message`).
    pub message: String,
    /// When the server received the NACK.
    pub at: SystemTime,
}

/// An await that ended without what it waited for.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WaitError {
    /// The message says what was awaited and what the node did instead.
    #[error("{message}")]
    Timeout {
        /// How long the await waited.
        waited: Duration,
        /// The type's state on the node's latest stream, if it ever asked for the type.
        last: Option<Box<TypeStatus>>,
        /// What was awaited and what the node did instead.
        message: String,
    },
    /// A [`super::poll_until`] condition did not hold in time; the message names what was
    /// awaited and what the last probe saw.
    #[error("{message}")]
    NotMet {
        /// The timeout that passed.
        waited: Duration,
        /// What was awaited, and the last state the probe saw.
        message: String,
    },
}

/// What an await looks for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Want<'a> {
    Ack(Option<&'a str>),
    Nack,
    /// Of any type (the query's `type_url` is empty).
    Violation,
}

#[derive(Debug)]
pub(super) enum Found {
    Ack(Ack),
    Nack(Nack),
    Violation(Box<Violation>),
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Query<'a> {
    pub node: &'a str,
    pub type_url: &'a str,
    pub want: Want<'a>,
    pub from: Mark,
}

/// `cds`, `clusters` or a full type URL, as the CLI takes them.
pub(super) fn resolve(type_name: &str) -> String {
    type_url::resolve(type_name).unwrap_or_else(|| type_name.to_string())
}

/// Waits until `query` is satisfied or `timeout` passes.
pub(super) async fn wait(
    journal: &Journal,
    registry: &Registry,
    query: Query<'_>,
    timeout: Duration,
) -> Result<Found, WaitError> {
    let mut changes = journal.changes();
    let deadline = Instant::now() + timeout;
    loop {
        changes.borrow_and_update();
        if let Some(found) = journal.read(|kept| lookup(&query, kept, registry)) {
            return Ok(found);
        }
        // The journal's sender lives as long as the journal: this ends by the deadline.
        if tokio::time::timeout_at(deadline, changes.changed())
            .await
            .is_err()
        {
            let message = journal.read(|kept| describe(&query, kept, registry, timeout));
            let last = latest_status(&query, registry).map(Box::new);
            return Err(WaitError::Timeout {
                waited: timeout,
                last,
                message,
            });
        }
    }
}

/// What satisfies `query` so far: in the journal, or, only if the journal lost events, in the
/// ledgers (see the module docs).
fn lookup(query: &Query<'_>, kept: &Kept, registry: &Registry) -> Option<Found> {
    find(query, kept).or_else(|| {
        let incomplete = !kept.complete();
        incomplete.then(|| in_registry(query, registry)).flatten()
    })
}

/// The first event since the query's mark that satisfies it.
fn find(query: &Query<'_>, kept: &Kept) -> Option<Found> {
    let events = kept.events.get(query.from.0..)?;
    events.iter().enumerate().find_map(|(i, event)| {
        if let Want::Violation = query.want {
            return violation(query, event);
        }
        let request = concerning(query, event)?;
        let earlier = &kept.events[..query.from.0 + i];
        matches(query, event, request, earlier)
    })
}

/// The violation `event` reports, if it is one of the query's node.
fn violation(query: &Query<'_>, event: &WireEvent) -> Option<Found> {
    match &event.what {
        What::Violation(v) if event.node.as_deref() == Some(query.node) => {
            Some(Found::Violation(Box::new((**v).clone())))
        }
        _ => None,
    }
}

/// The request `event` carries, if it is one of the query's node and type.
fn concerning<'e>(query: &Query<'_>, event: &'e WireEvent) -> Option<&'e RequestFacts> {
    let What::Request(request) = &event.what else {
        return None;
    };
    let ours = event.node.as_deref() == Some(query.node) && *request.type_url == *query.type_url;
    ours.then_some(&**request)
}

fn matches(
    query: &Query<'_>,
    event: &WireEvent,
    request: &RequestFacts,
    earlier: &[std::sync::Arc<WireEvent>],
) -> Option<Found> {
    // The response the request answers carries the version (Delta requests have none).
    let answered = sent_version(earlier, event.stream, &request.nonce)
        .unwrap_or_else(|| request.version.to_string());
    match (query.want, request.verdict) {
        (Want::Ack(version), Verdict::Ack) if version.is_none_or(|v| v == answered) => {
            Some(Found::Ack(Ack {
                stream: event.stream,
                type_url: query.type_url.to_string(),
                version: answered,
                nonce: request.nonce.to_string(),
                at: event.at,
            }))
        }
        (Want::Nack, Verdict::Nack) => {
            let error = request.error.as_ref();
            Some(Found::Nack(Nack {
                stream: event.stream,
                type_url: query.type_url.to_string(),
                version: answered,
                nonce: request.nonce.to_string(),
                code: error.map_or(0, |e| e.code),
                message: error.map(|e| e.message.to_string()).unwrap_or_default(),
                at: event.at,
            }))
        }
        _ => None,
    }
}

/// The version of the response `stream` sent with `nonce`, from the latest such response.
fn sent_version(earlier: &[std::sync::Arc<WireEvent>], stream: u64, nonce: &str) -> Option<String> {
    earlier.iter().rev().find_map(|event| match &event.what {
        What::Response(r) if event.stream == stream && &*r.nonce == nonce => {
            Some(r.version.to_string())
        }
        _ => None,
    })
}

/// The node's streams, open ones first, then the recently closed (most recent first).
fn node_streams(node: &str, registry: &Registry) -> Vec<StreamStatus> {
    let mut open = registry.streams();
    open.reverse();
    let closed = registry.recently_closed().into_iter().map(|c| c.stream);
    open.into_iter()
        .chain(closed)
        .filter(|s| s.node_id.as_deref() == Some(node))
        .collect()
}

fn latest_status(query: &Query<'_>, registry: &Registry) -> Option<TypeStatus> {
    node_streams(query.node, registry)
        .into_iter()
        .find_map(|s| s.types.get(query.type_url).cloned())
}

/// The ledgers' last ACK or NACK, for a journal that lost events. They keep only the latest
/// of each, so this finds a match only while it is still the latest.
fn in_registry(query: &Query<'_>, registry: &Registry) -> Option<Found> {
    node_streams(query.node, registry)
        .into_iter()
        .find_map(|s| {
            let status = s.types.get(query.type_url)?;
            match query.want {
                Want::Ack(version) => {
                    let acked = status.last_acked.as_ref()?;
                    version.is_none_or(|v| v == acked.version).then(|| {
                        Found::Ack(Ack {
                            stream: s.id,
                            type_url: query.type_url.to_string(),
                            version: acked.version.clone(),
                            nonce: acked.nonce.clone(),
                            at: acked.at,
                        })
                    })
                }
                // The ledgers keep no violations.
                Want::Violation => None,
                Want::Nack => status.last_nack.as_ref().map(|nacked| {
                    Found::Nack(Nack {
                        stream: s.id,
                        type_url: query.type_url.to_string(),
                        version: nacked.version.clone(),
                        nonce: nacked.nonce.clone(),
                        code: 0,
                        message: nacked.message.clone(),
                        at: nacked.at,
                    })
                }),
            }
        })
}

/// How many of the node's last messages of the type a timeout lists.
const SHOWN: usize = 6;

/// "node n1 did not ACK cds at v2 within 5s; instead: ..."
fn describe(query: &Query<'_>, kept: &Kept, registry: &Registry, waited: Duration) -> String {
    let short = type_url::short_name(query.type_url);
    let wanted = match query.want {
        Want::Ack(Some(version)) => format!("ACK {short} at version {version:?}"),
        Want::Ack(None) => format!("ACK {short}"),
        Want::Nack => format!("NACK {short}"),
        Want::Violation => "break a client rule".to_string(),
    };
    let mut text = format!(
        "node {:?} did not {wanted} within {}",
        query.node,
        humantime::format_duration(waited)
    );
    let from = kept.events.get(query.from.0..).unwrap_or_default();
    let seen: Vec<String> = from
        .iter()
        .filter(|e| e.node.as_deref() == Some(query.node))
        .filter_map(|e| line(e, query.type_url))
        .collect();
    if seen.is_empty() {
        let streams = node_streams(query.node, registry);
        let _ = match (streams.is_empty(), query.from.0 > 0) {
            (true, _) => write!(text, "; instead: no stream of that node was seen"),
            (false, true) => write!(text, "; instead: no {short} message of it since the mark"),
            (false, false) => write!(text, "; instead: it never asked for {short}"),
        };
    } else {
        let skip = seen.len().saturating_sub(SHOWN);
        let _ = match short.is_empty() {
            true => write!(text, "; instead, its last messages:"),
            false => write!(text, "; instead, its last {short} messages:"),
        };
        for line in &seen[skip..] {
            let _ = write!(text, "\n  {line}");
        }
    }
    if !kept.complete() {
        let _ = write!(text, "\n  (the test server lost {} events)", kept.lost);
    }
    text
}

/// One message of the type, for a timeout's story.
fn line(event: &WireEvent, type_url: &str) -> Option<String> {
    let stream = event.stream;
    match &event.what {
        What::Request(r) if type_url.is_empty() || *r.type_url == *type_url => {
            let mut line = format!("stream {stream}: {} ", r.step().label());
            match r.verdict {
                Verdict::Nack => {
                    let message = r.error.as_ref().map(|e| &*e.message).unwrap_or_default();
                    let _ = write!(line, "nonce {:?}: {message:?}", &*r.nonce);
                }
                Verdict::Initial => {
                    let _ = write!(line, "(version {:?})", &*r.version);
                }
                _ => {
                    let _ = write!(line, "version {:?} nonce {:?}", &*r.version, &*r.nonce);
                }
            }
            Some(line)
        }
        What::Response(r) if type_url.is_empty() || *r.type_url == *type_url => {
            let count = match r.resources.total {
                1 => "1 resource".to_string(),
                n => format!("{n} resources"),
            };
            Some(format!(
                "stream {stream}: push version {:?} nonce {:?} ({count})",
                &*r.version, &*r.nonce
            ))
        }
        What::Closed(closed) => Some(format!("stream {stream}: closed ({:?})", closed.reason)),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
