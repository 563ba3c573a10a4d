//! The CLI's output: one line per update (text or JSON), connection news for stderr, and the
//! `--dump` of applied resources. The JSON field names are a stable interface (README).

use std::time::SystemTime;

use serde_json::{Value, json};
use xdsloop_proto::{Codec, redact::Secrets, type_url};

use crate::config::Variant;
use crate::core::event::{ConnectionReport, Report, UpdateReport, Verdict};
use crate::core::store::{Applied, Store, TypeStore};

/// How updates and dumps are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

fn time(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// The stdout line for a report, if it has one (updates, not-found and expiry).
pub(crate) fn line(report: &Report, format: Format) -> Option<String> {
    let (word, event, at, type_url, names) = match report {
        Report::Update(update) => {
            return Some(match format {
                Format::Text => update_text(update),
                Format::Json => json_line(&UpdateLine::from(update)),
            });
        }
        Report::NotFound {
            at,
            type_url,
            names,
        } => ("NOT-FOUND", "not_found", at, type_url, names),
        Report::Expired {
            at,
            type_url,
            names,
        } => ("EXPIRED", "expired", at, type_url, names),
        _ => return None,
    };
    let r#type = type_url::short_name(type_url);
    Some(match format {
        Format::Text => format!("{} {type} {word} [{}]", time(*at), names.join(",")),
        Format::Json => json_line(&NamesLine {
            event,
            time: time(*at),
            r#type,
            type_url,
            names,
        }),
    })
}

fn json_line(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("output lines serialize")
}

/// `--output json` update line; field order as documented in the README.
#[derive(serde::Serialize)]
struct UpdateLine<'a> {
    event: &'static str,
    time: String,
    mode: &'static str,
    source: &'static str,
    r#type: &'a str,
    type_url: &'a str,
    version: &'a str,
    nonce: &'a str,
    status: &'static str,
    error: Option<&'a str>,
    added: &'a [String],
    updated: &'a [String],
    removed: &'a [String],
}

/// The status word: ACK / NACK, or ACCEPTED / REJECTED where there is no ACK channel (file).
fn status(u: &UpdateReport) -> &'static str {
    match (&u.verdict, u.source.has_ack_channel()) {
        (Verdict::Ack, true) => "ACK",
        (Verdict::Nack(_), true) => "NACK",
        (Verdict::Ack, false) => "ACCEPTED",
        (Verdict::Nack(_), false) => "REJECTED",
    }
}

impl<'a> From<&'a UpdateReport> for UpdateLine<'a> {
    fn from(u: &'a UpdateReport) -> Self {
        let error = match &u.verdict {
            Verdict::Ack => None,
            Verdict::Nack(reason) => Some(reason.as_str()),
        };
        Self {
            event: "update",
            time: time(u.at),
            mode: match u.mode {
                Variant::Sotw => "sotw",
                Variant::Delta => "delta",
            },
            source: u.source.name(),
            r#type: type_url::short_name(&u.type_url),
            type_url: &u.type_url,
            version: &u.version,
            nonce: &u.nonce,
            status: status(u),
            error,
            added: &u.diff.added,
            updated: &u.diff.updated,
            removed: &u.diff.removed,
        }
    }
}

/// `--output json` not-found and expired lines.
#[derive(serde::Serialize)]
struct NamesLine<'a> {
    event: &'static str,
    time: String,
    r#type: &'a str,
    type_url: &'a str,
    names: &'a [String],
}

fn update_text(u: &UpdateReport) -> String {
    let verdict = match &u.verdict {
        Verdict::Ack => status(u).to_string(),
        Verdict::Nack(reason) => format!("{} ({reason})", status(u)),
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

/// How much connection news matters, as a log level (for `--log-format json`).
pub(crate) fn connection_level(report: &ConnectionReport) -> tracing::Level {
    match report {
        ConnectionReport::ConnectFailed { .. } | ConnectionReport::StreamClosed { .. } => {
            tracing::Level::WARN
        }
        _ => tracing::Level::INFO,
    }
}

/// The stderr line for connection news.
pub(crate) fn connection_line(report: &ConnectionReport) -> String {
    match report {
        ConnectionReport::Connecting { server, attempt } => {
            format!("connecting to {server} (attempt {attempt})")
        }
        ConnectionReport::Connected { server } => format!("connected to {server}"),
        ConnectionReport::ConnectFailed { server, reason } => {
            format!("cannot connect to {server}: {reason}")
        }
        ConnectionReport::StreamClosed { reason } => format!("stream closed: {reason}"),
        ConnectionReport::Watching { path } => {
            format!("watching {path} (file source: no ACK channel, verdicts are ACCEPTED/REJECTED)")
        }
        ConnectionReport::BackingOff { delay, attempt } => {
            format!(
                "retrying in {:.1}s (attempt {attempt})",
                delay.as_secs_f64()
            )
        }
    }
}

/// One type in a dump; fields in the order people read them.
#[derive(serde::Serialize)]
struct DumpType {
    r#type: String,
    type_url: String,
    version: String,
    nonce: String,
    updated_at: Option<String>,
    resources: Vec<DumpResource>,
}

#[derive(serde::Serialize)]
struct DumpResource {
    name: String,
    version: String,
    nonce: String,
    applied_at: String,
    resource: Value,
}

/// The applied resources as one document: `{"types": [...]}` (fields in the README).
#[derive(serde::Serialize)]
pub(crate) struct Dump {
    types: Vec<DumpType>,
}

/// The applied resources, ready to render.
/// Secret values are hidden unless `secrets` says to show them.
pub(crate) fn dump(store: &Store, codec: &Codec, secrets: Secrets) -> Dump {
    let mut types: Vec<(&str, &TypeStore)> = store.types().collect();
    types.sort_by_key(|(url, _)| (type_url::order(url), url.to_string()));
    let types: Vec<DumpType> = types
        .into_iter()
        .map(|(url, held)| DumpType {
            r#type: type_url::short_name(url).to_string(),
            type_url: url.to_string(),
            version: held.version.clone(),
            nonce: held.nonce.clone(),
            updated_at: held.updated_at.map(time),
            resources: held
                .resources
                .values()
                .map(|r| dump_resource(url, r, codec, secrets))
                .collect(),
        })
        .collect();
    Dump { types }
}

fn dump_resource(
    type_url: &str,
    applied: &Applied,
    codec: &Codec,
    secrets: Secrets,
) -> DumpResource {
    let resource = codec
        .to_json_with(type_url, &applied.bytes, secrets)
        .unwrap_or_else(|e| json!({ "error": e.to_string() }));
    DumpResource {
        name: applied.name.clone(),
        version: applied.version.clone(),
        nonce: applied.nonce.clone(),
        applied_at: time(applied.applied_at),
        resource,
    }
}

/// Renders a dump in the chosen format (text means YAML).
pub(crate) fn render_dump(value: &Dump, format: Format) -> Result<String, crate::ClientError> {
    match format {
        Format::Json => serde_json::to_string_pretty(value)
            .map_err(|e| crate::ClientError::output_because("--dump as JSON", e)),
        Format::Text => serde_yaml_ng::to_string(value)
            .map_err(|e| crate::ClientError::output_because("--dump as YAML", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c17_expired_resources_get_a_line_of_their_own_and_heartbeats_none() {
        let (at, type_url) = (SystemTime::UNIX_EPOCH, type_url::ENDPOINT.to_string());
        let names = vec!["web".to_string(), "api".to_string()];
        let expired = Report::Expired {
            at,
            type_url: type_url.clone(),
            names: names.clone(),
        };
        let text = line(&expired, Format::Text).unwrap();
        assert_eq!(text, "1970-01-01T00:00:00.000Z eds EXPIRED [web,api]");
        let json: Value = serde_json::from_str(&line(&expired, Format::Json).unwrap()).unwrap();
        assert_eq!(
            (&json["event"], &json["names"]),
            (&json!("expired"), &json!(names))
        );
        let beat = Report::Heartbeat {
            at,
            type_url,
            names,
        };
        assert_eq!(
            line(&beat, Format::Text),
            None,
            "a heartbeat is not an update"
        );
    }
    use crate::config::SourceKind;
    use crate::core::store::Diff;

    fn update(source: SourceKind, verdict: Verdict) -> UpdateReport {
        UpdateReport {
            at: SystemTime::UNIX_EPOCH,
            mode: source.variant(),
            source,
            type_url: type_url::CLUSTER.into(),
            version: "v1".into(),
            nonce: "3".into(),
            verdict,
            diff: Diff::default(),
        }
    }

    #[test]
    fn sources_with_an_ack_channel_say_ack_and_nack_the_file_source_accepted_and_rejected() {
        let nack = || Verdict::Nack("bad".into());
        let text = |s, v| update_text(&update(s, v));
        assert!(text(SourceKind::Grpc, Verdict::Ack).contains(" ACK added="));
        assert!(text(SourceKind::Rest, nack()).contains(" NACK (bad) added="));
        assert!(text(SourceKind::File, Verdict::Ack).contains(" ACCEPTED added="));
        assert!(text(SourceKind::File, nack()).contains(" REJECTED (bad) added="));
        let json = line(
            &Report::Update(update(SourceKind::File, nack())),
            Format::Json,
        );
        let json: Value = serde_json::from_str(&json.unwrap()).unwrap();
        assert_eq!(
            (&json["status"], &json["source"]),
            (&json!("REJECTED"), &json!("file"))
        );
    }
}
