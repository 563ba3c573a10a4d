//! `--explain`: the loop narrated as it happens, one line per step, each labelled with the step
//! and the Envoy client call that takes it (the transcript crate's step table, the one
//! vocabulary xdsloop names the loop with):
//!
//! ```text
//! 09:30:00.012 s1  cds  ← push                        v"c-3e1f" n1-1 [api, web] — Envoy: onDiscoveryResponse
//! ```
//!
//! time (UTC), the client's stream, the type (`ads` for an event of the whole ADS stream),
//! direction (`→` sent, `←` received, `·` an event), the step, what the message says (versions
//! quoted, nonces after `n`, names in brackets, as `transcript print` writes them), and the
//! Envoy call. Lines that are not steps (connecting, backing off, not found) have no Envoy
//! call.

use std::collections::HashMap;
use std::time::SystemTime;

use xdsloop_proto::type_url;
use xdsloop_transcript::fields::clock;
use xdsloop_transcript::print::{list, nonce};

use crate::cli::output::connection_line;
use crate::config::Mode;
use crate::core::event::{
    ConnectionReport, ReceivedReport, Report, SentReport, Step, UpdateReport,
};
use crate::core::request::Outgoing;
use crate::core::store::Diff;
use crate::core::stream::{StreamInfo, StreamKey};

/// The widest step title ("resubscribe after reconnect").
const TITLE_WIDTH: usize = 27;

/// Turns reports into narration lines. It keeps what one report says for the line of another:
/// an update is applied before its ACK goes out, and the ACK's line says what was applied.
#[derive(Debug)]
pub struct Explainer {
    mode: Mode,
    /// Per type: the update whose ACK or NACK is still to be sent.
    handled: HashMap<String, UpdateReport>,
    /// Per type: the version last accepted, the one a NACK keeps.
    accepted: HashMap<String, String>,
    /// Per type: the names a heartbeat refreshed, told on its ACK's line.
    refreshed: HashMap<String, Vec<String>>,
    /// Why the last stream closed: the connection news that repeats it is left out.
    closed: Option<String>,
}

impl Explainer {
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            handled: HashMap::new(),
            accepted: HashMap::new(),
            refreshed: HashMap::new(),
            closed: None,
        }
    }

    /// The narration line of `report`, seen at `at`, if it has one.
    pub fn line(&mut self, report: &Report, at: SystemTime) -> Option<String> {
        let clock = clock(at);
        match report {
            Report::StreamOpened(info) => {
                let details = self.opened(info);
                Some(step_line(&clock, info, "·", Step::Established, &details))
            }
            Report::StreamClosed { stream, end } => {
                self.closed = Some(end.reason.clone());
                Some(step_line(&clock, stream, "·", Step::Closed, &end.reason))
            }
            Report::Sent(sent) => Some(self.sent(&clock, sent)),
            Report::Received(received) => Some(pushed(&clock, received)),
            Report::Update(update) => {
                self.handled.insert(update.type_url.clone(), update.clone());
                None
            }
            Report::NotFound {
                type_url, names, ..
            } => {
                let message = format!(
                    "not found: {} (nothing arrived within the not-found timeout)",
                    list(names.iter().cloned())
                );
                Some(note_line(&clock, type_url::short_name(type_url), &message))
            }
            Report::Expired {
                type_url, names, ..
            } => {
                let message = format!(
                    "expired: {} (the TTL lapsed without a heartbeat: removed)",
                    list(names.iter().cloned())
                );
                Some(note_line(&clock, type_url::short_name(type_url), &message))
            }
            Report::Heartbeat {
                type_url, names, ..
            } => {
                self.refreshed.insert(type_url.clone(), names.clone());
                None
            }
            Report::Connection(ConnectionReport::StreamClosed { reason })
                if self.closed.take().as_ref() == Some(reason) =>
            {
                None
            }
            Report::Connection(news) => Some(note_line(&clock, "", &connection_line(news))),
            Report::Synced => None,
        }
    }

    fn opened(&self, info: &StreamInfo) -> String {
        format!("{} #{}", info.key.transport(self.mode), info.ordinal)
    }

    fn sent(&mut self, clock: &str, sent: &SentReport) -> String {
        let type_url = sent.request.type_url();
        let mut details = request_details(sent);
        let handled = self
            .handled
            .remove(type_url)
            .filter(|u| u.nonce == sent.request.response_nonce());
        // Delta versions are system versions (`sv`), as on push lines.
        let v = match self.mode {
            Mode::Sotw => "v",
            Mode::Delta => "sv",
        };
        match (sent.step, handled) {
            (Step::Ack, Some(update)) => {
                let version = match self.mode {
                    Mode::Sotw => String::new(),
                    Mode::Delta => format!(" {v}{:?}", update.version),
                };
                details += &format!("; applied{version}: {}", applied(&update.diff));
                self.accepted.insert(update.type_url, update.version);
            }
            (Step::Nack, Some(update)) => {
                let kept = self.accepted.get(type_url).map_or("", String::as_str);
                let rejected = &update.version;
                details += &format!("; rejected {v}{rejected:?}, kept {v}{kept:?}");
            }
            (Step::Ack, None) => {
                if let Some(names) = self.refreshed.remove(type_url) {
                    details += &format!(
                        "; TTL refreshed: {}, nothing applied",
                        list(names.into_iter())
                    );
                }
            }
            _ => {}
        }
        let arrow = "→";
        let kind = type_url::short_name(type_url);
        line(clock, sent.stream, kind, arrow, sent.step, &details)
    }
}

/// `s1  cds  → subscribe …`: a step, with its Envoy call.
fn line(clock: &str, stream: u64, kind: &str, arrow: &str, step: Step, details: &str) -> String {
    let stream = format!("s{stream}");
    format!(
        "{clock} {stream:<3} {kind:<4} {arrow} {:<TITLE_WIDTH$} {details} — Envoy: {}",
        step.title(),
        step.envoy_call()
    )
}

fn step_line(clock: &str, info: &StreamInfo, arrow: &str, step: Step, details: &str) -> String {
    let kind = match &info.key {
        StreamKey::Aggregated => "ads",
        StreamKey::Type(type_url) => type_url::short_name(type_url),
    };
    line(clock, info.id, kind, arrow, step, details)
}

/// A line that is not a step of the loop: no stream, no Envoy call.
fn note_line(clock: &str, kind: &str, message: &str) -> String {
    format!("{clock} {:<3} {kind:<4} · {message}", "")
}

fn pushed(clock: &str, received: &ReceivedReport) -> String {
    let kind = type_url::short_name(&received.type_url);
    let nonce = nonce(&received.nonce);
    let mut details = match received.mode {
        Mode::Sotw => {
            let names = received.resources.iter().map(|r| r.name.clone());
            format!("v{:?} {nonce} {}", received.version, list(names))
        }
        Mode::Delta => {
            let resources = received.resources.iter().map(|r| match &r.version {
                Some(v) => format!("{}@{v}", r.name),
                None => r.name.clone(),
            });
            format!("sv{:?} {nonce} {}", received.version, list(resources))
        }
    };
    if !received.removed.is_empty() {
        details += &format!(" removed {}", list(received.removed.iter().cloned()));
    }
    if received.undecodable > 0 {
        details += &format!(" undecodable {}", received.undecodable);
    }
    let step = match received.is_heartbeat() {
        true => Step::Heartbeat,
        false => Step::Push,
    };
    line(clock, received.stream, kind, "←", step, &details)
}

/// What a request says: SotW the version it holds, the nonce it answers and the names; Delta
/// the nonce and the changes to its subscription (and on a new stream the versions it holds).
/// An ACK or NACK leaves out the names it merely repeats.
fn request_details(sent: &SentReport) -> String {
    let first = matches!(sent.step, Step::Subscribe | Step::Resubscribe);
    let reply = matches!(sent.step, Step::Ack | Step::Nack);
    let wildcard = |empty: bool| if first && empty { " (wildcard)" } else { "" };
    let (mut details, error) = match &sent.request {
        Outgoing::Sotw(r) => {
            let mut s = format!("v{:?} {}", r.version_info, nonce(&r.response_nonce));
            if !reply {
                let names = list(r.resource_names.iter().cloned());
                s += &format!(" {names}{}", wildcard(r.resource_names.is_empty()));
            }
            (s, r.error_detail.as_ref())
        }
        Outgoing::Delta(r) => {
            let mut s = nonce(&r.response_nonce);
            let subscribe = &r.resource_names_subscribe;
            if !reply || !subscribe.is_empty() {
                let names = list(subscribe.iter().cloned());
                s += &format!(" +{names}{}", wildcard(subscribe.is_empty()));
            }
            if !r.resource_names_unsubscribe.is_empty() {
                s += &format!(" -{}", list(r.resource_names_unsubscribe.iter().cloned()));
            }
            if !r.initial_resource_versions.is_empty() {
                let mut held: Vec<_> = r.initial_resource_versions.iter().collect();
                held.sort();
                let held = held.into_iter().map(|(n, v)| format!("{n}@{v}"));
                s += &format!(" initial {}", list(held));
            }
            (s, r.error_detail.as_ref())
        }
    };
    if let Some(error) = error {
        details += &format!(" error {} {:?}", error.code, error.message);
    }
    details
}

/// `added [a] updated [b]`, only the non-empty lists; `nothing new` when all are.
fn applied(diff: &Diff) -> String {
    let parts: Vec<String> = [
        ("added", &diff.added),
        ("updated", &diff.updated),
        ("removed", &diff.removed),
    ]
    .into_iter()
    .filter(|(_, names)| !names.is_empty())
    .map(|(what, names)| format!("{what} {}", list(names.iter().cloned())))
    .collect();
    if parts.is_empty() {
        "nothing new".to_string()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests;
