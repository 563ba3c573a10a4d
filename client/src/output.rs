//! The CLI's output: one line per update (text or JSON), connection news for stderr, and the
//! `--dump` of applied resources. The JSON field names are a stable interface (README).

use std::time::SystemTime;

use serde_json::{Value, json};
use xdsloop_proto::{Codec, type_url};

use crate::event::{ConnectionReport, Report, UpdateReport, Verdict};
use crate::request::Mode;
use crate::store::{Applied, Store, TypeStore};

/// How updates and dumps are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

fn time(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// The stdout line for a report, if it has one (updates and not-found).
pub fn line(report: &Report, format: Format) -> Option<String> {
    match (report, format) {
        (Report::Update(update), Format::Text) => Some(update_text(update)),
        (Report::Update(update), Format::Json) => Some(update_json(update).to_string()),
        (
            Report::NotFound {
                at,
                type_url,
                names,
            },
            Format::Text,
        ) => Some(format!(
            "{} {} NOT-FOUND [{}]",
            time(*at),
            type_url::short_name(type_url),
            names.join(",")
        )),
        (
            Report::NotFound {
                at,
                type_url,
                names,
            },
            Format::Json,
        ) => Some(
            json!({
                "event": "not_found",
                "time": time(*at),
                "type": type_url::short_name(type_url),
                "type_url": type_url,
                "names": names,
            })
            .to_string(),
        ),
        _ => None,
    }
}

fn update_text(u: &UpdateReport) -> String {
    let verdict = match &u.verdict {
        Verdict::Ack => "ACK".to_string(),
        Verdict::Nack(reason) => format!("NACK ({reason})"),
    };
    format!(
        "{} {} version={} nonce={} {} added=[{}] updated=[{}] removed=[{}]",
        time(u.at),
        type_url::short_name(&u.type_url),
        u.version,
        u.nonce,
        verdict,
        u.diff.added.join(","),
        u.diff.updated.join(","),
        u.diff.removed.join(","),
    )
}

/// The JSON object for one update (fields documented in the README).
pub fn update_json(u: &UpdateReport) -> Value {
    let (status, error) = match &u.verdict {
        Verdict::Ack => ("ACK", Value::Null),
        Verdict::Nack(reason) => ("NACK", Value::String(reason.clone())),
    };
    json!({
        "event": "update",
        "time": time(u.at),
        "mode": match u.mode { Mode::Sotw => "sotw", Mode::Delta => "delta" },
        "type": type_url::short_name(&u.type_url),
        "type_url": u.type_url,
        "version": u.version,
        "nonce": u.nonce,
        "status": status,
        "error": error,
        "added": u.diff.added,
        "updated": u.diff.updated,
        "removed": u.diff.removed,
    })
}

/// The stderr line for connection news.
pub fn connection_line(report: &ConnectionReport) -> String {
    match report {
        ConnectionReport::Connecting { server, attempt } => {
            format!("connecting to {server} (attempt {attempt})")
        }
        ConnectionReport::Connected { server } => format!("connected to {server}"),
        ConnectionReport::ConnectFailed { server, reason } => {
            format!("cannot connect to {server}: {reason}")
        }
        ConnectionReport::StreamClosed { reason } => format!("stream closed: {reason}"),
        ConnectionReport::BackingOff { delay, attempt } => {
            format!(
                "retrying in {:.1}s (attempt {attempt})",
                delay.as_secs_f64()
            )
        }
    }
}

/// The applied resources as one document: `{"types": [...]}` (fields in the README).
pub fn dump(store: &Store, codec: &Codec) -> Value {
    let mut types: Vec<(&str, &TypeStore)> = store.types().collect();
    types.sort_by_key(|(url, _)| (type_url::order(url), url.to_string()));
    let types: Vec<Value> = types
        .into_iter()
        .map(|(url, held)| {
            let resources: Vec<Value> = held
                .resources
                .values()
                .map(|r| dump_resource(url, r, codec))
                .collect();
            json!({
                "type": type_url::short_name(url),
                "type_url": url,
                "version": held.version,
                "nonce": held.nonce,
                "updated_at": held.updated_at.map(time),
                "resources": resources,
            })
        })
        .collect();
    json!({ "types": types })
}

fn dump_resource(type_url: &str, applied: &Applied, codec: &Codec) -> Value {
    let resource = codec
        .to_json(type_url, &applied.bytes)
        .unwrap_or_else(|e| json!({ "error": e.to_string() }));
    json!({
        "name": applied.name,
        "version": applied.version,
        "nonce": applied.nonce,
        "applied_at": time(applied.applied_at),
        "resource": resource,
    })
}

/// Renders a dump in the chosen format (text means YAML).
pub fn render_dump(value: &Value, format: Format) -> Result<String, crate::ClientError> {
    match format {
        Format::Json => serde_json::to_string_pretty(value)
            .map_err(|e| crate::ClientError::Output(e.to_string())),
        Format::Text => {
            serde_yaml_ng::to_string(value).map_err(|e| crate::ClientError::Output(e.to_string()))
        }
    }
}
