//! A recorded server side, loaded for `--replay FILE` (docs/transcripts.md): which requests
//! each recorded stream received, per type, and the responses that followed each, rebuilt from
//! the bodies `--record-resources` wrote. Everything is checked here, at start-up, so a
//! recording that cannot be replayed is an error naming its line, not a stream that fails later.
//!
//! A response belongs to the latest request of its own type before it on its stream (the
//! request that made the server send it, or for a push after a fixture edit the client's
//! latest word on that type): the order across types on one stream depends on the client's
//! timing, the order within a type does not.

use std::{
    collections::{BTreeMap, HashMap},
    path::Path,
    sync::Arc,
    time::{Duration, SystemTime},
};

use xdsloop_proto::{Codec, Resource};
use xdsloop_transcript::{
    Transcript,
    line::{Close, CloseReason, Response, ResponseBody, Side, What},
    read_file,
};

use crate::error::Error;

pub(crate) use xdsloop_transcript::line::Request as RecordedRequest;

/// Everything a replay serves.
#[derive(Debug, Clone)]
pub(crate) struct Script {
    /// The recording's path, as given: messages name `FILE:LINE`.
    pub file: String,
    /// The recorded streams that received at least one request, in the order they opened.
    pub streams: Vec<RecordedStream>,
    /// Lines of stateless exchanges (stream 0: Fetch, REST), which are not replayed.
    pub stateless_lines: usize,
}

/// One recorded stream.
#[derive(Debug, Clone)]
pub(crate) struct RecordedStream {
    /// Its id in the recording (`s3` in `transcript print`).
    pub id: u64,
    pub node: String,
    /// `ads-sotw`, `clusters-delta`, … as the `open` line says (empty when the recording has
    /// no `open` line for it).
    pub transport: String,
    /// Per type URL, the requests of that type in recorded order.
    pub types: BTreeMap<String, Vec<Turn>>,
    /// The status the server ended the stream with, if it did (a scenario's `close`, a
    /// malformed request): the replay ends it the same way once every request has arrived.
    pub ended: Option<RecordedEnd>,
}

/// How the recorded server ended a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordedEnd {
    pub line: usize,
    /// The gRPC code's number.
    pub code: i32,
    pub message: String,
}

impl RecordedStream {
    /// How many requests it received.
    pub(crate) fn requests(&self) -> usize {
        self.types.values().map(Vec::len).sum()
    }
}

/// One recorded request and the responses that followed it.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    /// Its line in the file.
    pub line: usize,
    /// When the recorded server saw it.
    pub at: SystemTime,
    pub request: RecordedRequest,
    pub responses: Vec<RecordedResponse>,
}

/// A recorded response, ready to encode again: its nonce kept, so the client echoes it.
#[derive(Debug, Clone)]
pub(crate) struct RecordedResponse {
    /// The recording's line it came from; only the reading's tests look at it.
    #[cfg_attr(not(test), allow(dead_code))]
    pub line: usize,
    pub type_url: String,
    /// SotW `version_info`, or Delta `system_version_info`.
    pub version: String,
    pub nonce: String,
    /// How long after its request it went out (`--replay-timing` keeps it).
    pub after: Duration,
    /// Delta `removed_resources` (`None`: a SotW response).
    pub removed: Option<Vec<String>>,
    /// Each resource with the version the recording gave it.
    pub resources: Arc<[Arc<Resource>]>,
}

/// The message every response without bodies gets.
pub(crate) const NO_BODIES: &str = "response without resources; record with --record-resources";

/// Reads and checks `path`; `codec` encodes the recorded bodies (the user's types need their
/// `--descriptor-set`).
pub(crate) fn load(path: &Path, codec: &Codec) -> Result<Script, Error> {
    let transcript = read_file(path).map_err(|e| Error::Replay(e.to_string()))?;
    from_transcript(&transcript, codec)
}

/// [`load`] of a transcript already read.
pub(crate) fn from_transcript(transcript: &Transcript, codec: &Codec) -> Result<Script, Error> {
    let at = |line: usize, message: String| {
        Error::Replay(format!("{}: {message}", transcript.location(line)))
    };
    if transcript.header.side != Side::Server {
        return Err(at(
            1,
            "a client recording: --replay needs the server side (xdsloop-server --record FILE \
             --record-resources)"
                .into(),
        ));
    }
    let mut builder = Builder {
        nodes: transcript
            .stream_nodes()
            .into_iter()
            .map(|(id, n)| (id, n.to_string()))
            .collect(),
        ..Builder::default()
    };
    for numbered in &transcript.events {
        builder
            .add(
                transcript.header.resources,
                numbered.line,
                &numbered.event,
                codec,
            )
            .map_err(|message| at(numbered.line, message))?;
    }
    let streams = builder.finish();
    if streams.is_empty() {
        return Err(Error::Replay(format!(
            "{}: no stream received a request: nothing to replay",
            transcript.file
        )));
    }
    Ok(Script {
        file: transcript.file.clone(),
        streams,
        stateless_lines: builder.stateless,
    })
}

#[derive(Default)]
struct Builder {
    /// By recorded stream id, in order of first appearance.
    streams: Vec<RecordedStream>,
    index: HashMap<u64, usize>,
    /// Per stream, the last request's type: where a response of a type the stream never
    /// asked for goes.
    last_type: HashMap<u64, String>,
    stateless: usize,
    /// Each stream's node, as the recording names it.
    nodes: HashMap<u64, String>,
}

impl Builder {
    fn add(
        &mut self,
        bodies: bool,
        line: usize,
        event: &xdsloop_transcript::Event,
        codec: &Codec,
    ) -> Result<(), String> {
        let stream = match (&event.what, event.stream) {
            (What::Gap(gap), _) => {
                return Err(format!(
                    "incomplete recording: {} events were lost here, and a replay needs every \
                     request",
                    gap.lost
                ));
            }
            (_, None | Some(0)) => {
                self.stateless += 1;
                return Ok(());
            }
            (_, Some(stream)) => stream,
        };
        match &event.what {
            What::Open(open) => self.stream(stream).transport = open.transport.clone(),
            What::Request(request) => {
                let type_url = request.type_url.0.clone();
                self.last_type.insert(stream, type_url.clone());
                let turn = Turn {
                    line,
                    at: event.t,
                    request: request.clone(),
                    responses: Vec::new(),
                };
                let recorded = self.stream(stream);
                recorded.types.entry(type_url).or_default().push(turn);
            }
            What::Response(response) => {
                if !bodies {
                    return Err(NO_BODIES.to_string());
                }
                let mut recorded = rebuild(response, line, codec)?;
                let last = self.last_type.get(&stream).cloned();
                let turns = &mut self.stream(stream).types;
                let key = match turns.contains_key(&recorded.type_url) {
                    true => Some(recorded.type_url.clone()),
                    false => last,
                };
                let turn = key
                    .and_then(|key| turns.get_mut(&key))
                    .and_then(|turns| turns.last_mut())
                    .ok_or_else(|| format!("response before any request on stream {stream}"))?;
                recorded.after = event.t.duration_since(turn.at).unwrap_or_default();
                turn.responses.push(recorded);
            }
            What::Close(close) => self.stream(stream).ended = ended(close, line)?,
            // Faults and violations are the server's notes; what went on the wire is in the
            // response lines.
            _ => {}
        }
        Ok(())
    }

    fn stream(&mut self, id: u64) -> &mut RecordedStream {
        let at = *self.index.entry(id).or_insert_with(|| {
            self.streams.push(RecordedStream {
                id,
                node: self.nodes.get(&id).cloned().unwrap_or_default(),
                transport: String::new(),
                types: BTreeMap::new(),
                ended: None,
            });
            self.streams.len() - 1
        });
        &mut self.streams[at]
    }

    fn finish(&self) -> Vec<RecordedStream> {
        let streams = self.streams.iter().filter(|s| s.requests() > 0);
        streams.cloned().collect()
    }
}

/// A close with a status the server sent, as the replay sends it again; other ends (the client
/// left, a reset, shutdown) are not the server's to act out.
fn ended(close: &Close, line: usize) -> Result<Option<RecordedEnd>, String> {
    let (CloseReason::Status | CloseReason::Fault, Some(status)) = (close.reason, &close.status)
    else {
        return Ok(None);
    };
    let code = status
        .code_number()
        .ok_or_else(|| format!("unknown gRPC status code {:?}", status.code))?;
    Ok(Some(RecordedEnd {
        line,
        code,
        message: status.message.clone(),
    }))
}

/// A response line back into a response: every resource re-encoded from its body.
fn rebuild(response: &Response, line: usize, codec: &Codec) -> Result<RecordedResponse, String> {
    let type_url = response.type_url.0.clone();
    let mut resources = Vec::with_capacity(response.resources.len());
    for entry in &response.resources {
        let Some(body) = &entry.body else {
            return Err(NO_BODIES.to_string());
        };
        let label = format!("resource \"{}\"", entry.name);
        let mut resource = codec
            .encode_resource(body, &label)
            .map_err(|e| format!("{label}: {e}"))?;
        if resource.name != entry.name {
            return Err(format!("{label}: its body names it \"{}\"", resource.name));
        }
        if let Some(version) = &entry.version {
            resource.version = version.clone();
        }
        resources.push(Arc::new(resource));
    }
    let (version, removed) = match &response.body {
        ResponseBody::Sotw { version } => (version.clone(), None),
        ResponseBody::Delta {
            system_version,
            removed,
        } => (system_version.clone(), Some(removed.clone())),
    };
    Ok(RecordedResponse {
        line,
        type_url,
        version,
        nonce: response.nonce.clone(),
        after: Duration::ZERO,
        removed,
        resources: resources.into(),
    })
}

#[cfg(test)]
pub(crate) mod sample;
#[cfg(test)]
mod tests;
