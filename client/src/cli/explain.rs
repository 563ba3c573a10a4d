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
//!
//! `--lang zh` tells the same loop in the words and order of the course lesson xdsloop grew
//! from (the transcript crate's term table): 建流, 订阅, 下发, then 应用 on a line of its own
//! (the lesson's step 4, `onConfigUpdate`), then 确认 (ACK) or 拒绝 (NACK, 保留旧配置); a
//! broken stream is 断线, the next stream 重连 · 建流, and its first requests 重连 · 重新订阅.

use std::collections::HashMap;
use std::time::SystemTime;

use xdsloop_proto::type_url;
use xdsloop_transcript::fields::clock;
use xdsloop_transcript::print::{list, nonce};
use xdsloop_transcript::terms::{Lang, Term};

use crate::cli::output::connection_line;
use crate::config::Variant;
use crate::core::event::{
    ConnectionReport, ReceivedReport, Report, SentReport, Step, UpdateReport, Verdict,
};
use crate::core::request::Outgoing;
use crate::core::store::Diff;
use crate::core::stream::{StreamInfo, StreamKey};

/// The widest step title ("resubscribe after reconnect"), in terminal columns.
const TITLE_WIDTH: usize = 27;

/// Turns reports into narration lines. It keeps what one report says for the line of another:
/// an update is applied before its ACK goes out, and the ACK's line says what was applied.
#[derive(Debug)]
pub struct Explainer {
    mode: Variant,
    lang: Lang,
    /// Per type: the update whose ACK or NACK is still to be sent.
    handled: HashMap<String, UpdateReport>,
    /// Per type: the version last accepted, the one a NACK keeps.
    accepted: HashMap<String, String>,
    /// Per type: the names a heartbeat refreshed, told on its ACK's line.
    refreshed: HashMap<String, Vec<String>>,
    /// Why the last stream closed: the connection news that repeats it is left out.
    closed: Option<String>,
    /// Per type: the stream its last response came in on (for the `应用` line).
    pushed_on: HashMap<String, u64>,
}

impl Explainer {
    /// The English narration.
    pub fn new(mode: Variant) -> Self {
        Self::in_lang(mode, Lang::En)
    }

    /// A narrator for a session of `mode`, in `lang` (English or the lesson's Chinese).
    pub fn in_lang(mode: Variant, lang: Lang) -> Self {
        Self {
            mode,
            lang,
            handled: HashMap::new(),
            accepted: HashMap::new(),
            refreshed: HashMap::new(),
            closed: None,
            pushed_on: HashMap::new(),
        }
    }

    /// The narration line of `report`, seen at `at`, if it has one.
    pub fn line(&mut self, report: &Report, at: SystemTime) -> Option<String> {
        let clock = clock(at);
        let lang = self.lang;
        match report {
            Report::StreamOpened(info) => {
                let details = self.opened(info);
                let mut title = lang.title(Step::Established).to_string();
                if lang == Lang::Zh && info.ordinal > 1 {
                    title = format!("{} · {title}", lang.term(Term::Reconnect));
                }
                let envoy = lang.envoy_call(Step::Established, self.mode);
                Some(stream_line(&clock, info, "·", &title, &details, envoy))
            }
            Report::StreamClosed { stream, end } => {
                self.closed = Some(end.reason.clone());
                let (title, envoy) = (
                    lang.title(Step::Closed),
                    lang.envoy_call(Step::Closed, self.mode),
                );
                Some(stream_line(&clock, stream, "·", title, &end.reason, envoy))
            }
            Report::Sent(sent) => Some(self.sent(&clock, sent)),
            Report::Received(received) => Some(self.pushed(&clock, received)),
            Report::Update(update) => {
                self.handled.insert(update.type_url.clone(), update.clone());
                // The lesson's step 4 has a line of its own; the English tells it on the ACK's.
                (lang == Lang::Zh).then(|| self.applied_line(&clock, update))
            }
            Report::NotFound {
                type_url, names, ..
            } => {
                let names = list(names.iter().cloned());
                let message = match lang {
                    Lang::En => {
                        format!("not found: {names} (nothing arrived within the not-found timeout)")
                    }
                    Lang::Zh => format!("不存在：{names}（超时内没有下发）"),
                };
                Some(note_line(&clock, type_url::short_name(type_url), &message))
            }
            Report::Expired {
                type_url, names, ..
            } => {
                let names = list(names.iter().cloned());
                let message = match lang {
                    Lang::En => {
                        format!("expired: {names} (the TTL lapsed without a heartbeat: removed)")
                    }
                    Lang::Zh => format!("过期：{names}（TTL 到期且没有心跳：已删除）"),
                };
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
            Report::Connection(news) => {
                let message = match lang {
                    Lang::En => connection_line(news),
                    Lang::Zh => connection_line_zh(news),
                };
                Some(note_line(&clock, "", &message))
            }
            Report::Synced => None,
        }
    }

    /// `--lang zh`: the lesson's step 4, `onConfigUpdate`, before the ACK or NACK goes out.
    fn applied_line(&self, clock: &str, update: &UpdateReport) -> String {
        let lang = self.lang;
        let v = self.version_prefix();
        let head = format!("{v}{:?} {}", update.version, nonce(&update.nonce));
        let (details, envoy) = match &update.verdict {
            Verdict::Ack => (
                format!("{head}：{}", applied(&update.diff, lang)),
                lang.term(Term::ApplyEnvoy),
            ),
            Verdict::Nack(reason) => (
                format!("{head} {}：{reason}", lang.term(Term::Failed)),
                lang.term(Term::ApplyFailedEnvoy),
            ),
        };
        let kind = type_url::short_name(&update.type_url);
        let stream = self.stream_of(update);
        line(
            clock,
            stream,
            kind,
            "·",
            lang.term(Term::Apply),
            &details,
            envoy,
        )
    }
    fn opened(&self, info: &StreamInfo) -> String {
        format!("{} #{}", info.key.transport(self.mode), info.ordinal)
    }

    /// Delta versions are system versions (`sv`), as on push lines.
    fn version_prefix(&self) -> &'static str {
        match self.mode {
            Variant::Sotw => "v",
            Variant::Delta => "sv",
        }
    }

    /// The stream the update's response came in on.
    fn stream_of(&self, update: &UpdateReport) -> u64 {
        self.pushed_on.get(&update.type_url).copied().unwrap_or(0)
    }

    fn pushed(&mut self, clock: &str, received: &ReceivedReport) -> String {
        self.pushed_on
            .insert(received.type_url.clone(), received.stream);
        pushed(clock, received, self.lang)
    }

    fn sent(&mut self, clock: &str, sent: &SentReport) -> String {
        let lang = self.lang;
        let type_url = sent.request.type_url();
        let mut details = request_details(sent, lang);
        let handled = self
            .handled
            .remove(type_url)
            .filter(|u| u.nonce == sent.request.response_nonce());
        let v = self.version_prefix();
        match (sent.step, handled) {
            (Step::Ack, Some(update)) => {
                // In Chinese the applied line said what was applied.
                if lang == Lang::En {
                    let version = match self.mode {
                        Variant::Sotw => String::new(),
                        Variant::Delta => format!(" {v}{:?}", update.version),
                    };
                    details += &format!("; applied{version}: {}", applied(&update.diff, lang));
                }
                self.accepted.insert(update.type_url, update.version);
            }
            (Step::Nack, Some(update)) => {
                let kept = self.accepted.get(type_url).map_or("", String::as_str);
                let rejected = &update.version;
                let (no, keep) = (
                    lang.term(Term::RejectedVersion),
                    lang.term(Term::KeptVersion),
                );
                details += &match lang {
                    Lang::En => format!("; {no} {v}{rejected:?}, {keep} {v}{kept:?}"),
                    Lang::Zh => format!("；{no} {v}{rejected:?}，{keep} {v}{kept:?}"),
                };
            }
            (Step::Ack, None) => {
                if let Some(names) = self.refreshed.remove(type_url) {
                    let names = list(names.into_iter());
                    let refreshed = lang.term(Term::TtlRefreshed);
                    details += &match lang {
                        Lang::En => format!("; {refreshed}: {names}, nothing applied"),
                        Lang::Zh => format!("；{refreshed}：{names}，没有应用新配置"),
                    };
                }
            }
            _ => {}
        }
        let kind = type_url::short_name(type_url);
        let (title, envoy) = (lang.title(sent.step), lang.envoy_call(sent.step, self.mode));
        line(clock, sent.stream, kind, "→", title, &details, envoy)
    }
}

/// `s1  cds  → subscribe …`: a step, with its Envoy call.
fn line(
    clock: &str,
    stream: u64,
    kind: &str,
    arrow: &str,
    title: &str,
    details: &str,
    envoy: &str,
) -> String {
    let stream = format!("s{stream}");
    let pad = " ".repeat(TITLE_WIDTH.saturating_sub(columns(title)));
    format!("{clock} {stream:<3} {kind:<4} {arrow} {title}{pad} {details} — Envoy: {envoy}")
}

/// How many terminal columns `text` takes: CJK characters take two.
fn columns(text: &str) -> usize {
    text.chars()
        .map(|c| match c as u32 {
            0x1100..=0x115F | 0x2E80..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF => 2,
            0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 => 2,
            _ => 1,
        })
        .sum()
}

fn stream_line(
    clock: &str,
    info: &StreamInfo,
    arrow: &str,
    title: &str,
    details: &str,
    envoy: &str,
) -> String {
    let kind = match &info.key {
        StreamKey::Aggregated => "ads",
        StreamKey::Type(type_url) => type_url::short_name(type_url),
    };
    line(clock, info.id, kind, arrow, title, details, envoy)
}

/// A line that is not a step of the loop: no stream, no Envoy call.
fn note_line(clock: &str, kind: &str, message: &str) -> String {
    format!("{clock} {:<3} {kind:<4} · {message}", "")
}

/// Connection news in the lesson's words: a broken stream is 断线, what follows 重连.
fn connection_line_zh(report: &ConnectionReport) -> String {
    let (down, again) = (
        Lang::Zh.term(Term::Disconnected),
        Lang::Zh.term(Term::Reconnect),
    );
    match report {
        ConnectionReport::Connecting { server, attempt } => {
            format!("连接 {server}（第 {attempt} 次）")
        }
        ConnectionReport::Connected { server } => format!("已连上 {server}"),
        ConnectionReport::ConnectFailed { server, reason } => {
            format!("连不上 {server}：{reason}")
        }
        ConnectionReport::StreamClosed { reason } => format!("{down}：{reason}"),
        ConnectionReport::Watching { path } => format!("监视 {path}（文件来源：没有 ACK 通道）"),
        ConnectionReport::BackingOff { delay, attempt } => format!(
            "{down} → {again}：{:.1}s 后重试（第 {attempt} 次）",
            delay.as_secs_f64()
        ),
    }
}

fn pushed(clock: &str, received: &ReceivedReport, lang: Lang) -> String {
    let kind = type_url::short_name(&received.type_url);
    let nonce = nonce(&received.nonce);
    let mut details = match received.mode {
        Variant::Sotw => {
            let names = received.resources.iter().map(|r| r.name.clone());
            format!("v{:?} {nonce} {}", received.version, list(names))
        }
        Variant::Delta => {
            let resources = received.resources.iter().map(|r| match &r.version {
                Some(v) => format!("{}@{v}", r.name),
                None => r.name.clone(),
            });
            format!("sv{:?} {nonce} {}", received.version, list(resources))
        }
    };
    if !received.removed.is_empty() {
        let removed = lang.term(Term::Removed);
        details += &format!(" {removed} {}", list(received.removed.iter().cloned()));
    }
    if received.undecodable > 0 {
        details += &format!(" undecodable {}", received.undecodable);
    }
    let step = match received.is_heartbeat() {
        true => Step::Heartbeat,
        false => Step::Push,
    };
    let (title, envoy) = (lang.title(step), lang.envoy_call(step, received.mode));
    line(clock, received.stream, kind, "←", title, &details, envoy)
}

/// What a request says: SotW the version it holds, the nonce it answers and the names; Delta
/// the nonce and the changes to its subscription (and on a new stream the versions it holds).
/// An ACK or NACK leaves out the names it merely repeats.
fn request_details(sent: &SentReport, lang: Lang) -> String {
    let first = matches!(sent.step, Step::Subscribe | Step::Resubscribe);
    let reply = matches!(sent.step, Step::Ack | Step::Nack);
    let wildcard = |empty: bool| match first && empty {
        true => format!(" ({})", lang.term(Term::Wildcard)),
        false => String::new(),
    };
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
fn applied(diff: &Diff, lang: Lang) -> String {
    let parts: Vec<String> = [
        (Term::Added, &diff.added),
        (Term::Updated, &diff.updated),
        (Term::Removed, &diff.removed),
    ]
    .into_iter()
    .filter(|(_, names)| !names.is_empty())
    .map(|(what, names)| format!("{} {}", lang.term(what), list(names.iter().cloned())))
    .collect();
    if parts.is_empty() {
        lang.term(Term::NothingNew).to_string()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests;
