//! What `transcript diff` compares: each line with what legitimately varies between two runs
//! of the same test taken out.
//!
//! - `t`, `seq`, `peer` and `bytes` are dropped (timing, interleaving, ports, encodings), and so
//!   are a violation's `message` and `evidence`, which quote nonces and stream ids.
//! - Streams are renumbered per node in order of first appearance: `edge-1#1`, `edge-1#2`
//!   (stream 0, the stateless Fetch and REST exchanges, stays `#0`).
//! - Nonces are renumbered per stream *and type* in order of first appearance (`1`, `2`: `n1`,
//!   `n2` as printed), and
//!   a request's `response_nonce` goes through the same map, so an ACK still points at the
//!   response it answers. Per type, because the default comparison is per type: the order in
//!   which a client asks for CDS and LDS on one stream depends on its timing, and a per-stream
//!   numbering would let that order leak into every nonce.
//! - Compared per type (the default), a request's `has_node` is dropped too: the node rides on
//!   a stream's first request, and which type goes first is the same timing question.
//!   `--strict-order` keeps it.
//! - `--ignore FIELD` drops more: a field name (`version`), or a path into objects and lists
//!   (`resources.version`, `error_detail.message`).

use std::collections::HashMap;

use serde_json::Value;

use crate::{
    error::Error,
    line::{Event, TypeUrl, What},
    read::Transcript,
};

/// Fields `diff` never compares.
pub const ALWAYS_IGNORED: [&str; 4] = ["t", "seq", "peer", "bytes"];

/// Every field a line can have: `--ignore` takes only these (as the first part of a path), so
/// a misspelt field is an error rather than a silent no-op.
pub const FIELDS: &[&str] = &[
    "t",
    "stream",
    "seq",
    "node",
    "kind",
    "transport",
    "peer",
    "ordinal",
    "dir",
    "type",
    "step",
    "verdict",
    "change",
    "version",
    "names",
    "subscribe",
    "unsubscribe",
    "initial_resource_versions",
    "nonce",
    "has_node",
    "error_detail",
    "system_version",
    "removed",
    "resources",
    "bytes",
    "undecodable",
    "fault",
    "rule",
    "action",
    "detail",
    "check",
    "message",
    "evidence",
    "reason",
    "status",
    "lost",
];

/// Which sequence a line belongs to: a node's Nth stream, and the type unless the comparison
/// is `--strict-order` (or the line has none: open, close).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Group {
    /// The node id of the line's stream.
    pub node: String,
    /// Which of the node's streams, from 1 by first appearance; 0 for stateless exchanges.
    pub stream: u64,
    /// The line's type; `None` under `--strict-order` and for lines without one.
    pub type_url: Option<TypeUrl>,
}

impl std::fmt::Display for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.node, self.stream)?;
        match &self.type_url {
            Some(t) => write!(f, " {t}"),
            None => Ok(()),
        }
    }
}

/// One line as `diff` sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalised {
    /// The sequence it is compared within.
    pub group: Group,
    /// Where it is in its file.
    pub line: usize,
    /// Renumbered (node set, stream = the node's ordinal, nonces `1`, `2`), for display.
    pub event: Event,
    /// What is compared: the renumbered line without the ignored fields.
    pub value: Value,
}

/// Field paths to drop before comparing.
#[derive(Debug, Clone, Default)]
pub struct Ignore {
    paths: Vec<Vec<String>>,
}

impl Ignore {
    /// Reads `--ignore` values (`version`, `resources.version`); a first part that is not in
    /// [`FIELDS`] is a usage error.
    pub fn parse(fields: &[String]) -> Result<Self, Error> {
        let mut paths = Vec::new();
        for field in fields {
            let path: Vec<String> = field.split('.').map(str::to_string).collect();
            if !FIELDS.contains(&path[0].as_str()) || path.iter().any(String::is_empty) {
                return Err(Error::Usage(format!(
                    "--ignore {field:?}: no line has that field (fields: {})",
                    FIELDS.join(", ")
                )));
            }
            paths.push(path);
        }
        Ok(Self { paths })
    }
}

/// `transcript`'s lines, renumbered and stripped, in file order.
pub fn normalise(transcript: &Transcript, ignore: &Ignore, strict_order: bool) -> Vec<Normalised> {
    let nodes = transcript.stream_nodes();
    let mut ordinals = Ordinals::default();
    let mut nonces: HashMap<(String, u64, Option<TypeUrl>), HashMap<String, String>> =
        HashMap::new();
    let mut out = Vec::with_capacity(transcript.events.len());
    for numbered in &transcript.events {
        let mut event = numbered.event.clone();
        let stream = event.stream.unwrap_or(0);
        let stream_node = nodes.get(&stream).copied();
        let node = event
            .node
            .as_deref()
            .or(stream_node)
            .unwrap_or("?")
            .to_string();
        let ordinal = ordinals.of(&node, event.stream);
        let type_url = event.type_url().cloned();
        if let Some(nonce) = event.nonce_mut().filter(|n| !n.is_empty()) {
            let map = nonces
                .entry((node.clone(), stream, type_url.clone()))
                .or_default();
            let next = (map.len() + 1).to_string();
            *nonce = map.entry(nonce.clone()).or_insert(next).clone();
        }
        (event.stream, event.node, event.seq) = (Some(ordinal), Some(node.clone()), None);
        clear_varying(&mut event);
        let mut value = serde_json::to_value(&event).expect("lines serialise to JSON");
        for field in ALWAYS_IGNORED {
            remove(&mut value, &[field.to_string()]);
        }
        if !strict_order {
            remove(&mut value, &["has_node".to_string()]);
        }
        for path in &ignore.paths {
            remove(&mut value, path);
        }
        let type_url = if strict_order { None } else { type_url };
        let group = Group {
            node,
            stream: ordinal,
            type_url,
        };
        out.push(Normalised {
            group,
            line: numbered.line,
            event,
            value,
        });
    }
    out
}

/// Streams numbered per node in order of first appearance; stream 0 (stateless) stays 0.
#[derive(Default)]
struct Ordinals {
    seen: HashMap<u64, u64>,
    per_node: HashMap<String, u64>,
}

impl Ordinals {
    fn of(&mut self, node: &str, stream: Option<u64>) -> u64 {
        match stream {
            None | Some(0) => 0,
            Some(id) => *self.seen.entry(id).or_insert_with(|| {
                let count = self.per_node.entry(node.to_string()).or_default();
                *count += 1;
                *count
            }),
        }
    }
}

/// The parts of a line that vary between runs and are also shown by `print`.
fn clear_varying(event: &mut Event) {
    match &mut event.what {
        What::Open(open) => open.peer = None,
        What::Response(response) => response.bytes = None,
        What::Violation(violation) => {
            violation.message.clear();
            violation.evidence = None;
        }
        What::Request(_) | What::Fault(_) | What::Close(_) | What::Gap(_) => {}
    }
}

/// Removes `path` from `value`, into every element of the lists on the way.
fn remove(value: &mut Value, path: &[String]) {
    match (value, path) {
        (Value::Array(items), _) => items.iter_mut().for_each(|item| remove(item, path)),
        (Value::Object(map), [last]) => {
            map.remove(last);
        }
        (Value::Object(map), [first, rest @ ..]) => {
            if let Some(inner) = map.get_mut(first) {
                remove(inner, rest);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
