//! Tap events as transcript lines (`xdsloop.transcript.v1`, docs/transcripts.md): the one
//! format the server shows events in, written by the recorder (`--record`) and listed per
//! stream in `/status` (`recent`).

use std::collections::BTreeMap;

use xdsloop_proto::Codec;
use xdsloop_transcript::{
    Step,
    line::{
        Close, CloseReason as LineClose, Dir, ErrorDetail, Event, Fault, FaultMark as LineMark,
        Open, Request, RequestBody, ResourceEntry, Response, ResponseBody, STATUS_CODES, Status,
        TypeUrl, Violation, What as Line,
    },
};

use crate::{
    judge,
    protocol::{
        facts::{self, Listed, Names, RequestFacts, ResponseFacts, step_change, step_verdict},
        fetch::FETCH_STREAM_ID,
        kind::Variant,
        wire::FaultMark,
    },
    tap::{CloseReason, FaultFacts, What, WireEvent},
};

/// The line for `event`. With `bodies`, responses that carry their resources (captured for
/// `--record-resources`) get each resource's proto3 JSON, rendered with that codec.
pub fn to_line(event: &WireEvent, bodies: Option<&Codec>) -> Event {
    let what = match &event.what {
        What::Opened(opened) => Line::Open(Open {
            transport: opened.kind.to_string(),
            peer: opened.peer.as_deref().map(str::to_string),
            ordinal: None,
        }),
        What::Request(facts) => Line::Request(request(facts)),
        What::Response(facts) => {
            let mut line = response(facts, bodies);
            // Stream 0 has no `open` line to say how it came: on the server, only REST polls
            // a scenario rule touched are on it (gRPC Fetch is not tapped).
            if event.stream == FETCH_STREAM_ID {
                line.transport = Some("rest".into());
            }
            Line::Response(line)
        }
        What::Fault(facts) => Line::Fault(fault(facts)),
        What::Violation(v) => Line::Violation(violation(v)),
        What::Closed(closed) => Line::Close(Close {
            reason: close_reason(closed.reason),
            status: closed.status.as_ref().map(|s| Status {
                code: code_name(s.code).to_string(),
                message: s.message.to_string(),
            }),
        }),
    };
    Event {
        t: event.at,
        stream: Some(event.stream),
        seq: Some(event.seq),
        node: event.node.as_deref().map(str::to_string),
        what,
    }
}

/// How many names, resources or removals the event's lists leave out (a summary keeps the
/// first few of each).
pub(crate) fn omitted(event: &WireEvent) -> u64 {
    let missing = |total: usize, kept: usize| (total - kept) as u64;
    let listed = |l: &Listed<Box<str>>| missing(l.total, l.items.len());
    match &event.what {
        What::Request(r) => match &r.names {
            Names::Sotw(names) => listed(names),
            Names::Delta {
                subscribe,
                unsubscribe,
                initial_versions,
            } => {
                let declared = missing(initial_versions.total, initial_versions.items.len());
                listed(subscribe) + listed(unsubscribe) + declared
            }
        },
        What::Response(r) => {
            let resources = missing(r.resources.total, r.resources.items.len());
            resources + listed(&r.removed)
        }
        _ => 0,
    }
}

fn strings(list: &Listed<Box<str>>) -> Vec<String> {
    list.items.iter().map(|s| s.to_string()).collect()
}

fn type_url(url: &facts::TypeName) -> TypeUrl {
    TypeUrl::new(&**url)
}

fn request(facts: &RequestFacts) -> Request {
    let body = match &facts.names {
        Names::Sotw(names) => RequestBody::Sotw {
            version: facts.version.to_string(),
            names: strings(names),
        },
        Names::Delta {
            subscribe,
            unsubscribe,
            initial_versions,
        } => RequestBody::Delta {
            subscribe: strings(subscribe),
            unsubscribe: strings(unsubscribe),
            initial_resource_versions: initial_versions
                .items
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        },
    };
    Request {
        dir: Dir::In,
        transport: None,
        type_url: type_url(&facts.type_url),
        step: facts.step(),
        verdict: step_verdict(facts.verdict),
        change: step_change(facts.change),
        body,
        nonce: facts.nonce.to_string(),
        has_node: facts.has_node,
        error_detail: facts.error.as_ref().map(|e| ErrorDetail {
            code: e.code,
            message: e.message.to_string(),
        }),
    }
}

fn response(facts: &ResponseFacts, bodies: Option<&Codec>) -> Response {
    let body = match facts.variant {
        Variant::Sotw => ResponseBody::Sotw {
            version: facts.version.to_string(),
        },
        Variant::Delta => ResponseBody::Delta {
            system_version: facts.version.to_string(),
            removed: strings(&facts.removed),
        },
    };
    let json = |i: usize| {
        let codec = bodies?;
        let resource = facts.bodies.as_ref()?.get(i)?;
        let rendered = codec.to_json(&resource.type_url, &resource.bytes);
        // A resource the server serves always decodes with the codec it was encoded with;
        // should one not, the line still names it.
        Some(rendered.unwrap_or_else(|e| serde_json::json!({ "undecodable": e.to_string() })))
    };
    let resources = facts.resources.items.iter().enumerate();
    let resources = resources.map(|(i, (name, version))| ResourceEntry {
        name: name.to_string(),
        version: Some(version.to_string()),
        body: json(i),
    });
    Response {
        dir: Dir::Out,
        transport: None,
        type_url: type_url(&facts.type_url),
        step: match facts.heartbeat {
            true => Step::Heartbeat,
            false => Step::Push,
        },
        body,
        nonce: facts.nonce.to_string(),
        resources: resources.collect(),
        bytes: Some(facts.bytes as u64),
        undecodable: 0,
        fault: facts.fault.as_ref().map(mark),
    }
}

fn mark(mark: &FaultMark) -> LineMark {
    LineMark {
        rule: mark.rule.to_string(),
        action: mark.action.to_string(),
    }
}

fn fault(facts: &FaultFacts) -> Fault {
    Fault {
        rule: facts.mark.rule.to_string(),
        action: facts.mark.action.to_string(),
        type_url: facts.type_url.as_ref().map(type_url),
        nonce: facts.nonce.as_deref().map(str::to_string),
        detail: facts.detail.as_deref().map(str::to_string),
    }
}

fn violation(v: &judge::Violation) -> Violation {
    Violation {
        rule: v.rule.to_string(),
        check: v.check.to_string(),
        type_url: v.type_url.as_deref().map(TypeUrl::new),
        message: v.message.to_string(),
        evidence: None,
    }
}

fn close_reason(reason: CloseReason) -> LineClose {
    match reason {
        CloseReason::Client => LineClose::Client,
        CloseReason::Status => LineClose::Status,
        CloseReason::Reset => LineClose::Reset,
        CloseReason::Shutdown => LineClose::Shutdown,
        CloseReason::Fault => LineClose::Fault,
    }
}

/// gRPC status code names, as the transcript writes them.
fn code_name(code: i32) -> &'static str {
    usize::try_from(code)
        .ok()
        .and_then(|i| STATUS_CODES.get(i))
        .copied()
        .unwrap_or("UNKNOWN")
}

#[cfg(test)]
mod tests;
