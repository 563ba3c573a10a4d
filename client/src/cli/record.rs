//! `--record FILE`: the client's side of the loop as a transcript (`side: client`, the format
//! of docs/transcripts.md): a line per stream opened or closed, request sent and response
//! received, with the verdicts the client knows first-hand. `--record-resources` adds each
//! received resource in the proto3 JSON mapping.
//!
//! Lines come from the reports the CLI observes ([`Report::StreamOpened`], [`Report::Sent`],
//! [`Report::Received`], [`Report::StreamClosed`]); reports the CLI missed because it fell
//! behind become a `gap` line, so the file never claims to be complete when it is not.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::path::Path;
use std::time::{Instant, SystemTime};

use serde_json::json;
use xdsloop_proto::Codec;
use xdsloop_transcript::LineWriter;
use xdsloop_transcript::line::{
    Close, CloseReason, Dir, ErrorDetail, Event, Header, Open, Request, RequestBody, ResourceEntry,
    Response, ResponseBody, Side, Status, TypeUrl, What,
};
use xdsloop_transcript::step::Verdict;

use crate::config::{ClientConfig, Variant};
use crate::core::event::{ReceivedReport, Report, SentReport, Step};
use crate::core::request::Outgoing;
use crate::core::stream::{StreamEnd, StreamInfo};
use crate::error::ClientError;

/// Writes `--record`'s transcript: one line per step of the loop, as reports arrive.
#[derive(Debug)]
pub struct Recorder {
    writer: LineWriter<File>,
    path: String,
    node: String,
    mode: Variant,
    /// The server, as the `peer` of every stream.
    peer: String,
    /// Renders resource bodies (`--record-resources`); `None` records names and versions only.
    bodies: Option<Codec>,
    /// Per stream: the `seq` of its last line.
    seq: HashMap<u64, u32>,
    /// Streams opened and not closed: at the end they get a `shutdown` close line.
    open: BTreeSet<u64>,
}

impl Recorder {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &Path, config: &ClientConfig, bodies: bool) -> Result<Self, ClientError> {
        let tool = format!("xdsloop-client {}", env!("CARGO_PKG_VERSION"));
        let header = Header::new(Side::Client, tool, SystemTime::now(), bodies);
        let writer = LineWriter::create(path, &header)
            .map_err(|e| ClientError::output_because(format!("--record {}", path.display()), e))?;
        Ok(Self {
            writer,
            path: path.display().to_string(),
            node: config.node.id.clone(),
            mode: config.source.variant(),
            peer: config.server.clone(),
            bodies: bodies.then(|| config.codec.clone()),
            seq: HashMap::new(),
            open: BTreeSet::new(),
        })
    }

    /// Writes the line `report` makes, if it makes one, seen at `t`.
    pub fn record(&mut self, report: &Report, t: SystemTime) -> Result<(), ClientError> {
        let (stream, what) = match report {
            Report::StreamOpened(info) => {
                self.open.insert(info.id);
                (info.id, self.opened(info))
            }
            Report::StreamClosed { stream, end } => {
                self.open.remove(&stream.id);
                (stream.id, What::Close(closed(end)))
            }
            Report::Sent(sent) => (sent.stream, What::Request(request(sent))),
            Report::Received(received) => (received.stream, self.response(received)),
            _ => return Ok(()),
        };
        self.write(stream, what, t)
    }

    /// `lost` reports never reached the recorder (it fell behind): a `gap` line.
    pub fn gap(&mut self, lost: u64, t: SystemTime) -> Result<(), ClientError> {
        let result = self.writer.gap(t, lost, Instant::now());
        result.map_err(|e| self.error(e))
    }

    /// When buffered lines are due on disk.
    pub fn next_flush(&self) -> Option<Instant> {
        self.writer.next_flush()
    }

    /// Writes out what is buffered if it has waited long enough.
    pub fn flush_if_due(&mut self) -> Result<(), ClientError> {
        let result = self.writer.flush_if_due(Instant::now());
        result.map(|_| ()).map_err(|e| self.error(e))
    }

    /// Closes the streams still open (the client is stopping) and flushes the file.
    pub fn finish(mut self, t: SystemTime) -> Result<(), ClientError> {
        let open = std::mem::take(&mut self.open);
        for stream in open {
            let close = Close {
                reason: CloseReason::Shutdown,
                status: None,
            };
            self.write(stream, What::Close(close), t)?;
        }
        let path = self.path.clone();
        self.writer
            .finish()
            .map(|_| ())
            .map_err(|e| ClientError::output_because(format!("--record {path}"), e))
    }

    fn write(&mut self, stream: u64, what: What, t: SystemTime) -> Result<(), ClientError> {
        let seq = self.seq.entry(stream).or_default();
        *seq += 1;
        let event = Event {
            t,
            stream: Some(stream),
            seq: Some(*seq),
            node: Some(self.node.clone()),
            what,
        };
        let result = self.writer.write(&event, Instant::now());
        result.map_err(|e| self.error(e))
    }

    fn error(&self, e: std::io::Error) -> ClientError {
        ClientError::output_because(format!("--record {}", self.path), e)
    }

    fn opened(&self, info: &StreamInfo) -> What {
        What::Open(Open {
            transport: info.key.transport(self.mode),
            peer: Some(self.peer.clone()),
            ordinal: Some(info.ordinal),
        })
    }

    fn response(&self, received: &ReceivedReport) -> What {
        let body = match received.mode {
            Variant::Sotw => ResponseBody::Sotw {
                version: received.version.clone(),
            },
            Variant::Delta => ResponseBody::Delta {
                system_version: received.version.clone(),
                removed: received.removed.clone(),
            },
        };
        let resources = received
            .resources
            .iter()
            .map(|r| ResourceEntry {
                name: r.name.clone(),
                version: r.version.clone(),
                body: self
                    .bodies
                    .as_ref()
                    .zip(r.body.as_ref())
                    .map(|(codec, any)| {
                        codec.to_json(&any.type_url, &any.value).unwrap_or_else(
                            |e| json!({ "@type": any.type_url, "error": e.to_string() }),
                        )
                    }),
            })
            .collect();
        What::Response(Response {
            dir: Dir::In,
            transport: None,
            type_url: TypeUrl::new(&received.type_url),
            step: match received.is_heartbeat() {
                true => Step::Heartbeat,
                false => Step::Push,
            },
            body,
            nonce: received.nonce.clone(),
            resources,
            bytes: Some(received.bytes as u64),
            undecodable: received.undecodable,
            fault: None,
        })
    }
}

/// A request line; its verdict is what the client meant: `ack` or `nack` only on the reply a
/// response gets, `initial` on every other request (also a SotW one that repeats the latest
/// nonce, as the protocol wants).
fn request(sent: &SentReport) -> Request {
    let verdict = match sent.step {
        Step::Ack => Verdict::Ack,
        Step::Nack => Verdict::Nack,
        _ => Verdict::Initial,
    };
    let (body, error) = match &sent.request {
        Outgoing::Sotw(r) => {
            let body = RequestBody::Sotw {
                version: r.version_info.clone(),
                names: r.resource_names.clone(),
            };
            (body, r.error_detail.as_ref())
        }
        Outgoing::Delta(r) => {
            let body = RequestBody::Delta {
                subscribe: r.resource_names_subscribe.clone(),
                unsubscribe: r.resource_names_unsubscribe.clone(),
                initial_resource_versions: r
                    .initial_resource_versions
                    .iter()
                    .map(|(n, v)| (n.clone(), v.clone()))
                    .collect::<BTreeMap<_, _>>(),
            };
            (body, r.error_detail.as_ref())
        }
    };
    Request {
        dir: Dir::Out,
        transport: None,
        type_url: TypeUrl::new(sent.request.type_url()),
        step: sent.step,
        verdict,
        change: None,
        body,
        nonce: sent.request.response_nonce().to_string(),
        has_node: sent.request.has_node(),
        error_detail: error.map(|e| ErrorDetail {
            code: e.code,
            message: e.message.clone(),
        }),
    }
}

/// A status the server sent is a `status` close; a stream that broke without one, `reset`.
fn closed(end: &StreamEnd) -> Close {
    match &end.status {
        Some((code, message)) => Close {
            reason: CloseReason::Status,
            status: Some(Status {
                code: code.clone(),
                message: message.clone(),
            }),
        },
        None => Close {
            reason: CloseReason::Reset,
            status: None,
        },
    }
}

#[cfg(test)]
mod tests;
