//! Recordings written line by line for the replay's unit tests.

use serde_json::{Value, json};
use xdsloop_proto::{
    Codec,
    type_url::{CLUSTER, ENDPOINT},
};

use super::{Script, from_transcript};
use crate::error::Error;

const T: &str = "2026-03-02T09:30:00.000000Z";

pub(crate) fn header(side: &str, resources: bool) -> Value {
    json!({"schema": "xdsloop.transcript.v1", "kind": "header", "side": side,
           "tool": "test", "started": T, "resources": resources})
}

pub(crate) fn open(stream: u64, transport: &str) -> Value {
    json!({"t": T, "stream": stream, "seq": 1, "kind": "open", "transport": transport})
}

/// A SotW request of `node` (`ty`: `cds`, `eds`), `step` also its verdict unless `nack`.
pub(crate) fn request(
    stream: u64,
    node: &str,
    ty: &str,
    step: &str,
    version: &str,
    nonce: &str,
    names: &[&str],
) -> Value {
    let verdict = match step {
        "subscribe" | "resubscribe" | "update" => "initial",
        other => other,
    };
    let mut line = json!({"t": T, "stream": stream, "seq": 2, "node": node, "kind": "request",
        "dir": "in", "type": ty, "step": step, "verdict": verdict, "version": version,
        "names": names, "nonce": nonce, "has_node": true});
    if step == "nack" {
        line["error_detail"] = json!({"code": 3, "message": "rejected"});
    }
    line
}

/// A Delta request: `subscribe` names, no unsubscriptions.
pub(crate) fn delta_request(
    stream: u64,
    node: &str,
    step: &str,
    nonce: &str,
    subscribe: &[&str],
) -> Value {
    let verdict = if step == "subscribe" { "initial" } else { step };
    json!({"t": T, "stream": stream, "seq": 2, "node": node, "kind": "request", "dir": "in",
        "type": "cds", "step": step, "verdict": verdict, "subscribe": subscribe,
        "unsubscribe": [], "nonce": nonce, "has_node": true})
}

fn body(ty: &str, name: &str) -> Value {
    match ty {
        "eds" => json!({"@type": ENDPOINT, "cluster_name": name}),
        _ => json!({"@type": CLUSTER, "name": name}),
    }
}

/// A SotW response with each resource's body.
pub(crate) fn response(
    stream: u64,
    node: &str,
    ty: &str,
    version: &str,
    nonce: &str,
    names: &[&str],
) -> Value {
    let resources: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "version": format!("{n}-hash"), "body": body(ty, n)}))
        .collect();
    json!({"t": T, "stream": stream, "seq": 3, "node": node, "kind": "response", "dir": "out",
        "type": ty, "step": "push", "version": version, "nonce": nonce, "resources": resources})
}

/// A Delta CDS response with each resource's body.
pub(crate) fn delta_response(stream: u64, node: &str, nonce: &str, names: &[&str]) -> Value {
    let mut line = response(stream, node, "cds", "", nonce, names);
    let object = line.as_object_mut().unwrap();
    object.remove("version");
    object.insert("system_version".into(), json!("sv1"));
    object.insert("removed".into(), json!(["gone"]));
    line
}

/// One ADS SotW stream (s3) of `edge-1`: CDS pushed and ACKed, EDS pushed and NACKed.
pub(crate) fn sotw_lines() -> Vec<Value> {
    let n = "edge-1";
    vec![
        header("server", true),
        open(3, "ads-sotw"),
        request(3, n, "cds", "subscribe", "", "", &[]),
        response(3, n, "cds", "v1", "3-1", &["a", "b"]),
        request(3, n, "eds", "subscribe", "", "", &["a", "b"]),
        response(3, n, "eds", "e1", "3-2", &["a", "b"]),
        request(3, n, "cds", "ack", "v1", "3-1", &[]),
        request(3, n, "eds", "nack", "", "3-2", &["a", "b"]),
    ]
}

pub(crate) fn text(lines: &[Value]) -> String {
    let lines: Vec<String> = lines.iter().map(Value::to_string).collect();
    lines.join("\n") + "\n"
}

/// The script of `lines`, read as `rec.jsonl`.
pub(crate) fn script(lines: &[Value]) -> Result<Script, Error> {
    let read = xdsloop_transcript::read::read("rec.jsonl", text(lines).as_bytes());
    let transcript = read.map_err(|e| Error::Replay(e.to_string()))?;
    from_transcript(&transcript, &Codec::envoy())
}
