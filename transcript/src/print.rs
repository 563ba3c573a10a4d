//! One readable line per event, in fixed-width columns:
//!
//! ```text
//! 12:00:01.234 s3 edge-1 cds ← NACK        v"" n3-1 error 3 "cluster web: bad"
//! ```
//!
//! time (UTC), stream, node, type, direction (`←` arrived at the recording side, `→` left it,
//! `·` a stream event, `!` a fault, violation or gap), step, then what the message says:
//! versions quoted (`v""` is empty), nonces after `n`, names in brackets (at most
//! [`MAX_NAMES`]), Delta resource versions after `@`.

use std::{collections::HashMap, io::Write};

use crate::{
    Step,
    filter::Filter,
    line::*,
    read::{Numbered, Transcript},
};

/// Names shown per list; the rest are counted.
pub const MAX_NAMES: usize = 8;
/// The widest step label (`RESUBSCRIBE`, `ESTABLISHED`).
const STEP_WIDTH: usize = 11;

/// Prints `transcript`'s header and the lines `filter` keeps; returns how many it printed.
pub fn print(
    transcript: &Transcript,
    filter: &Filter,
    out: &mut dyn Write,
) -> std::io::Result<usize> {
    let nodes = transcript.stream_nodes();
    let kept: Vec<&Numbered> = transcript
        .events
        .iter()
        .filter(|n| filter.keeps(&n.event, &nodes))
        .collect();
    let rows: Vec<[String; 3]> = kept
        .iter()
        .map(|n| {
            let event = &n.event;
            let stream = event.stream.map(|s| format!("s{s}")).unwrap_or_default();
            let node = node_of(event, &nodes).unwrap_or("-").to_string();
            [stream, node, type_label(event).to_string()]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (stream_w, node_w, type_w) = (width(0), width(1), width(2));
    writeln!(out, "{}", header_line(&transcript.header))?;
    for (n, [stream, node, _]) in kept.iter().zip(&rows) {
        let clock = crate::fields::clock(n.event.t);
        let body = body(&n.event, type_w);
        let line = format!("{clock} {stream:<stream_w$} {node:<node_w$} {body}");
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(kept.len())
}

/// `# server transcript by xdsloop-server 0.1.0, started …Z, resource bodies not recorded`.
pub fn header_line(header: &Header) -> String {
    let side = match header.side {
        Side::Server => "server",
        Side::Client => "client",
    };
    let bodies = if header.resources { "" } else { "not " };
    format!(
        "# {side} transcript by {}, started {}, resource bodies {bodies}recorded",
        header.tool,
        humantime::format_rfc3339_millis(header.started)
    )
}

fn node_of<'a>(event: &'a Event, nodes: &HashMap<u64, &'a str>) -> Option<&'a str> {
    let stream_node = event.stream.and_then(|s| nodes.get(&s).copied());
    event.node.as_deref().or(stream_node)
}

fn type_label(event: &Event) -> &str {
    event.type_url().map_or("", TypeUrl::label)
}

/// Everything after the node column: type, direction, step and details.
pub fn body(event: &Event, type_width: usize) -> String {
    let (arrow, step, details) = match &event.what {
        What::Open(open) => ("·", Step::Established.label(), open_details(open)),
        What::Request(request) => (
            arrow(request.dir),
            request.step.label(),
            request_details(request),
        ),
        What::Response(response) => (
            arrow(response.dir),
            response.step.label(),
            response_details(response),
        ),
        What::Fault(fault) => ("!", "fault", fault_details(fault)),
        What::Violation(v) => ("!", "violation", format!("{}: {}", v.check, v.message)),
        What::Close(close) => ("·", Step::Closed.label(), close_details(close)),
        What::Gap(gap) => (
            "!",
            "gap",
            format!("{} events lost: the recording is incomplete here", gap.lost),
        ),
    };
    let (ty, step) = (type_label(event), step.to_ascii_uppercase());
    format!("{ty:<type_width$} {arrow} {step:<STEP_WIDTH$} {details}")
}

fn arrow(dir: Dir) -> &'static str {
    match dir {
        Dir::In => "←",
        Dir::Out => "→",
    }
}

fn open_details(open: &Open) -> String {
    let mut s = open.transport.clone();
    if let Some(peer) = &open.peer {
        s += &format!(" peer {peer}");
    }
    if let Some(ordinal) = open.ordinal {
        s += &format!(" (the node's stream #{ordinal})");
    }
    s
}

fn request_details(request: &Request) -> String {
    let mut s = match &request.body {
        RequestBody::Sotw { version, names } => {
            format!(
                "v{version:?} {} {}",
                nonce(&request.nonce),
                list(names.iter().cloned())
            )
        }
        RequestBody::Delta {
            subscribe,
            unsubscribe,
            initial_resource_versions,
        } => {
            let mut s = format!(
                "{} +{}",
                nonce(&request.nonce),
                list(subscribe.iter().cloned())
            );
            if !unsubscribe.is_empty() {
                s += &format!(" -{}", list(unsubscribe.iter().cloned()));
            }
            if !initial_resource_versions.is_empty() {
                let held = initial_resource_versions
                    .iter()
                    .map(|(n, v)| format!("{n}@{v}"));
                s += &format!(" initial {}", list(held));
            }
            s
        }
    };
    if let Some(error) = &request.error_detail {
        s += &format!(" error {} {:?}", error.code, error.message);
    }
    s
}

fn response_details(response: &Response) -> String {
    let mut s = match &response.body {
        ResponseBody::Sotw { version } => {
            let names = response.resources.iter().map(|r| r.name.clone());
            format!("v{version:?} {} {}", nonce(&response.nonce), list(names))
        }
        ResponseBody::Delta {
            system_version,
            removed,
        } => {
            let resources = response.resources.iter().map(|r| match &r.version {
                Some(v) => format!("{}@{v}", r.name),
                None => r.name.clone(),
            });
            let mut s = format!(
                "sv{system_version:?} {} {}",
                nonce(&response.nonce),
                list(resources)
            );
            if !removed.is_empty() {
                s += &format!(" removed {}", list(removed.iter().cloned()));
            }
            s
        }
    };
    if response.undecodable > 0 {
        s += &format!(" undecodable {}", response.undecodable);
    }
    if let Some(fault) = &response.fault {
        s += &format!(" fault {}/{}", fault.rule, fault.action);
    }
    s
}

fn fault_details(fault: &Fault) -> String {
    let mut s = format!("{}/{}", fault.rule, fault.action);
    if let Some(n) = &fault.nonce {
        s += &format!(" {}", nonce(n));
    }
    if let Some(detail) = &fault.detail {
        s += &format!(" ({detail})");
    }
    s
}

fn close_details(close: &Close) -> String {
    let reason = match close.reason {
        CloseReason::Client => "by the client",
        CloseReason::Status => "with a status",
        CloseReason::Reset => "reset",
        CloseReason::Shutdown => "at shutdown",
        CloseReason::Fault => "by a fault",
    };
    match &close.status {
        Some(status) => format!("{reason}: {} {:?}", status.code, status.message),
        None => reason.to_string(),
    }
}

/// `n3-1`, or `n""` for none (also how `xdsloop-client --explain` writes nonces).
pub fn nonce(nonce: &str) -> String {
    if nonce.is_empty() {
        "n\"\"".to_string()
    } else {
        format!("n{nonce}")
    }
}

/// `[a, b]`, at most [`MAX_NAMES`] shown: `[a, …, h, +4 more]` (also how
/// `xdsloop-client --explain` writes names).
pub fn list(items: impl ExactSizeIterator<Item = String>) -> String {
    let total = items.len();
    let mut shown: Vec<String> = items.take(MAX_NAMES).collect();
    if total > MAX_NAMES {
        shown.push(format!("+{} more", total - MAX_NAMES));
    }
    format!("[{}]", shown.join(", "))
}

#[cfg(test)]
mod tests;
