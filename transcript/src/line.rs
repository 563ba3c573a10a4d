//! The lines of a transcript (schema `xdsloop.transcript.v1`): a header, then one event per
//! line. The field names and values here are the file format; docs/transcripts.md describes
//! each one. Readers ignore fields they do not know, so adding an optional field keeps `v1`;
//! removing or changing one bumps the schema.

mod body;

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

pub use crate::fields::TypeUrl;
use crate::fields::rfc3339;
use crate::step::{Change, Step, Verdict};
use body::{RawRequest, RawResponse};
pub use body::{RequestBody, ResponseBody};

/// The schema this build writes and reads.
pub const SCHEMA: &str = "xdsloop.transcript.v1";

/// The first line of every transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`SCHEMA`] in what this build writes; the reader rejects any other.
    pub schema: String,
    /// Always `header`.
    pub kind: HeaderKind,
    /// Which end of the loop recorded it.
    pub side: Side,
    /// The recording program and its version (`xdsloop-server 0.1.0`).
    pub tool: String,
    /// When recording started (RFC 3339, UTC, in the file).
    #[serde(with = "rfc3339")]
    pub started: SystemTime,
    /// Whether responses carry each resource's `body` (`--record-resources`).
    pub resources: bool,
}

impl Header {
    /// The header of a transcript in this build's [`SCHEMA`], recorded by `tool` on `side`.
    pub fn new(side: Side, tool: impl Into<String>, started: SystemTime, resources: bool) -> Self {
        Self {
            schema: SCHEMA.to_string(),
            kind: HeaderKind::Header,
            side,
            tool: tool.into(),
            started,
            resources,
        }
    }
}

/// `"kind": "header"`, so every line of the file says what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderKind {
    /// The only value: this line is the header.
    Header,
}

/// Which end of the loop recorded a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The management server: requests arrive, responses leave.
    Server,
    /// The xDS client: requests leave, responses arrive.
    Client,
}

/// Seen from the recording side: `in` arrived, `out` was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// Received by the recording side.
    In,
    /// Sent by the recording side.
    Out,
}

/// One line after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When the recording side saw it.
    #[serde(with = "rfc3339")]
    pub t: SystemTime,
    /// The recording side's stream id; 0 for stateless exchanges (unary Fetch, REST polls);
    /// absent on `gap` lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<u64>,
    /// Position of the line within its stream, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u32>,
    /// The node id, once the stream has said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// What happened, with the fields of its kind (flattened into the line).
    #[serde(flatten)]
    pub what: What,
}

/// What happened; `kind` in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum What {
    /// A stream opened.
    Open(Open),
    /// A request passed, in either direction.
    Request(Request),
    /// A response passed, in either direction.
    Response(Response),
    /// A scenario fault fired with no response line to carry it (server side only).
    Fault(Fault),
    /// The server's conformance judge flagged the client (server side only).
    Violation(Violation),
    /// The stream ended.
    Close(Close),
    /// The recorder lost events here.
    Gap(Gap),
}

/// A stream opened ([`Step::Established`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Open {
    /// `ads-sotw`, `ads-delta`, or `<service>-sotw` / `<service>-delta` for per-type services.
    pub transport: String,
    /// The other end's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// This is the node's Nth stream, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<u32>,
}

/// A DiscoveryRequest or DeltaDiscoveryRequest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawRequest")]
pub struct Request {
    /// `in` in a server transcript, `out` in a client's.
    pub dir: Dir,
    /// Only on stream 0, which has no `open` line to say it (`rest`, `fetch`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The type asked for; `type` in the file, as a short name where it has one.
    #[serde(rename = "type")]
    pub type_url: TypeUrl,
    /// Its place in the loop: subscribe, resubscribe, update, ack, nack or ignored.
    pub step: Step,
    /// How it relates to the latest response of its type on the stream.
    pub verdict: Verdict,
    /// Set when the request widened or narrowed the interest in its type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
    /// The SotW or Delta fields: versions and names.
    #[serde(flatten)]
    pub body: RequestBody,
    /// `response_nonce`: the response this request answers ("" for none).
    pub nonce: String,
    /// Whether the request carried a `node`.
    pub has_node: bool,
    /// Set on a NACK: why the client rejected the response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_detail: Option<ErrorDetail>,
}

/// A DiscoveryResponse or DeltaDiscoveryResponse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawResponse")]
pub struct Response {
    /// `out` in a server transcript, `in` in a client's.
    pub dir: Dir,
    /// Only on stream 0 (see [`Request::transport`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The type it carries; `type` in the file, as a short name where it has one.
    #[serde(rename = "type")]
    pub type_url: TypeUrl,
    /// `push`, or `heartbeat` when it only refreshes TTL'd resources.
    pub step: Step,
    /// The SotW `version` or the Delta `system_version` and `removed` names.
    #[serde(flatten)]
    pub body: ResponseBody,
    /// The response's nonce, which the request answering it echoes.
    pub nonce: String,
    /// The resources it carries, in the order they were sent.
    pub resources: Vec<ResourceEntry>,
    /// Encoded size of the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Client side: resources it could not decode.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub undecodable: u32,
    /// Server side: the scenario rule that changed this response on its way out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultMark>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One resource of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceEntry {
    /// The resource's name (`cluster_name` for endpoints).
    pub name: String,
    /// The resource's own version (Delta; the server's content hash for SotW).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The resource in the proto3 JSON mapping, with `@type` (only with `--record-resources`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

/// A request's `error_detail`: what makes it a NACK.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// The gRPC status code number the client gave (3, `INVALID_ARGUMENT`, is usual).
    pub code: i32,
    /// The client's reason, in its own words.
    pub message: String,
}

/// Which scenario rule did what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultMark {
    /// The scenario rule's id.
    pub rule: String,
    /// The action the rule applied to the response (`corrupt`, ...).
    pub action: String,
}

/// A scenario fault that fired without a response line to carry it: the response was dropped
/// or delayed, the stream closed, reset or hung, or the rule was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// The scenario rule's id.
    pub rule: String,
    /// The rule's action (`drop`, `delay`, `close`, `reset`, `hang`, ...).
    pub action: String,
    /// The type of the response it hit, if one.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_url: Option<TypeUrl>,
    /// The nonce of the response it hit, if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// Parameters or outcome, for people (`2s`, `skipped: no earlier nonce`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A client behaviour the server's conformance judge flagged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    /// The rule in docs/protocol.md (`C5`).
    pub rule: String,
    /// The check within it (`C5.nack-version`).
    pub check: String,
    /// The type concerned, when the check is about one.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_url: Option<TypeUrl>,
    /// The judge's sentence, with the evidence in words.
    pub message: String,
    /// The evidence as data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<serde_json::Value>,
}

/// The stream ended ([`Step::Closed`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Close {
    /// Who or what ended it.
    pub reason: CloseReason,
    /// The gRPC status, when one was sent or received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

/// Why a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseReason {
    /// The client ended the stream or went away.
    Client,
    /// The server ended it with a gRPC status.
    Status,
    /// The stream or its connection was reset, without a status.
    Reset,
    /// The recording side was shutting down.
    Shutdown,
    /// A scenario fault ended it (the `fault` line before says which rule).
    Fault,
}

/// A gRPC status: its code name (`UNAVAILABLE`) and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The code's name as gRPC spells it (one of [`STATUS_CODES`]).
    pub code: String,
    /// The status message, as sent.
    pub message: String,
}

/// gRPC status code names (grpc/doc/statuscodes.md), indexed by code, as transcripts write them.
pub const STATUS_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

impl Status {
    /// The code's number (`UNAVAILABLE`: 14), when the name is one of gRPC's.
    pub fn code_number(&self) -> Option<i32> {
        let at = STATUS_CODES.iter().position(|name| *name == self.code)?;
        i32::try_from(at).ok()
    }
}

/// The recorder fell behind and lost `lost` events here: the transcript is incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// How many events were lost at this point.
    pub lost: u64,
}

/// The `kind` of an event line, for filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Kind {
    /// [`What::Open`].
    Open,
    /// [`What::Request`].
    Request,
    /// [`What::Response`].
    Response,
    /// [`What::Fault`].
    Fault,
    /// [`What::Violation`].
    Violation,
    /// [`What::Close`].
    Close,
    /// [`What::Gap`].
    Gap,
}

impl Event {
    /// Which kind of line this is.
    pub fn kind(&self) -> Kind {
        match self.what {
            What::Open(_) => Kind::Open,
            What::Request(_) => Kind::Request,
            What::Response(_) => Kind::Response,
            What::Fault(_) => Kind::Fault,
            What::Violation(_) => Kind::Violation,
            What::Close(_) => Kind::Close,
            What::Gap(_) => Kind::Gap,
        }
    }

    /// The xDS type the line is about, if any.
    pub fn type_url(&self) -> Option<&TypeUrl> {
        match &self.what {
            What::Request(r) => Some(&r.type_url),
            What::Response(r) => Some(&r.type_url),
            What::Fault(f) => f.type_url.as_ref(),
            What::Violation(v) => v.type_url.as_ref(),
            What::Open(_) | What::Close(_) | What::Gap(_) => None,
        }
    }

    /// The loop step the line records; faults, violations and gaps are not steps.
    pub fn step(&self) -> Option<Step> {
        match &self.what {
            What::Open(_) => Some(Step::Established),
            What::Request(r) => Some(r.step),
            What::Response(r) => Some(r.step),
            What::Close(_) => Some(Step::Closed),
            What::Fault(_) | What::Violation(_) | What::Gap(_) => None,
        }
    }

    /// The nonce the line names: a response's own, a request's `response_nonce`, the response
    /// a fault hit.
    pub fn nonce_mut(&mut self) -> Option<&mut String> {
        match &mut self.what {
            What::Request(r) => Some(&mut r.nonce),
            What::Response(r) => Some(&mut r.nonce),
            What::Fault(f) => f.nonce.as_mut(),
            What::Open(_) | What::Violation(_) | What::Close(_) | What::Gap(_) => None,
        }
    }
}

#[cfg(test)]
mod tests;
