//! The conformance judge: checks, as a stream runs, the client rules of `docs/protocol.md`
//! that can be seen on the wire, and names each violation after its rule.
//!
//! One [`Judge`] per stream runs inline in the stream loop (a strict server must be able to
//! close the stream on the request that broke a rule). It reads the machine's own ledger
//! *before* the machine handles a request, so it keeps no copy of the protocol state, and it
//! allocates nothing per message while a client behaves (a little per type, once). One module
//! per rule family, each check named after its rule:
//! - `C1.node` in [`c1_node`];
//! - `C4.unknown-nonce`, `C4.ack-version` (and `C11.old-stream-nonce`) in [`c4_answer`];
//! - `C5.nack-fields`, `C5.nack-version` in [`c5_nack`];
//! - `C10.backoff` in [`c10_backoff`], across streams through the [`nodes`] book;
//! - `C11.types`, `C11.version`, `C11.versions` in [`c11_resubscribe`], across streams;
//! - `C12.coalesce`, `C12.before-ack` in [`c12_coalesce`];
//! - `C20.storm` in [`c20_storm`].

pub(crate) mod c10_backoff;
pub(crate) mod c11_resubscribe;
pub(crate) mod c12_coalesce;
pub(crate) mod c1_node;
pub(crate) mod c20_storm;
pub(crate) mod c4_answer;
pub(crate) mod c5_nack;
pub(crate) mod nodes;
pub(crate) mod rules;

use std::{
    sync::{Arc, Mutex, MutexGuard},
    time::Instant,
};

use crate::protocol::{
    facts::RequestView,
    held::Held,
    kind::{StreamKind, Variant},
    subscription::{Change, Exchange, Ledger, Verdict},
};
use c11_resubscribe::Resubscribe;
use c12_coalesce::Coalesce;
use c20_storm::Storm;
use nodes::{NodeBook, Peer};

/// A client behaviour a rule forbids, with the evidence in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The rule family (`C5`).
    pub rule: &'static str,
    /// The rule within it (`C5.nack-version`).
    pub check: &'static str,
    /// The spec sentences the rule enforces (`ack-nack.5`); empty for xdsloop's own rules.
    pub sentences: &'static [&'static str],
    /// The type the offending request or response was about, if one.
    pub type_url: Option<Arc<str>>,
    /// The judge's sentence: what was seen, against what was expected (nonces, versions).
    pub message: Box<str>,
}

impl Violation {
    /// `check` is `<rule>.<name>`.
    pub(crate) fn new(check: &'static str, type_url: Option<&str>, message: String) -> Self {
        let rule = check.split_once('.').map_or(check, |(rule, _)| rule);
        let found = rules::rule_of(check);
        debug_assert!(found.is_some(), "{check} is not in the judge's rule list");
        Self {
            rule,
            check,
            sentences: found.map_or(&[], |r| r.sentences),
            type_url: type_url.map(Arc::from),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Violation {
    /// `C5.nack-version (ack-nack.5): …`; an xdsloop rule without a sentence, `(xdsloop)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let spec = match self.sentences {
            [] => "xdsloop".to_string(),
            ids => ids.join(", "),
        };
        write!(f, "{} ({spec}): {}", self.check, self.message)
    }
}

/// What the judge does with what it finds (`--conformance`, `--strict`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// No judge (`--conformance off`).
    Off,
    /// Log, count and show violations.
    #[default]
    Report,
    /// As `Report`, and the first violation ends the stream (FAILED_PRECONDITION).
    Strict,
}

/// The server's judging: its mode and the node book every stream shares. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Conformance {
    pub mode: Mode,
    book: Arc<Mutex<NodeBook>>,
}

impl Conformance {
    pub(crate) fn new(mode: Mode) -> Self {
        Self {
            mode,
            book: Arc::default(),
        }
    }

    /// A judge for a new stream.
    pub(crate) fn judge(&self, stream: u64, kind: StreamKind, peer: Option<Peer>) -> Judge {
        Judge {
            mode: self.mode,
            stream,
            kind,
            peer,
            book: self.book.clone(),
            node: None,
            first: c1_node::FirstRequest::default(),
            types: Vec::new(),
            current: None,
            ack: None,
            answers_latest: false,
            coalesce: Coalesce::default(),
            known: 0,
            resubscribe: None,
            responses: 0,
            foreign_nonces: false,
            found: Vec::new(),
            failed: None,
        }
    }
}

/// What the judge keeps per type of its stream.
#[derive(Debug)]
struct TypeJudge {
    url: Box<str>,
    /// SotW: the version the client's latest request without an error said it accepted
    /// (C5; replaced only when it changes, so an ACK of a known version allocates nothing).
    accepted: Option<Box<str>>,
    storm: Storm,
    /// `n` of the latest and of the highest `<stream>-<n>` nonce sent on the wire for the type
    /// (pushes, resends, heartbeats; 0: none yet).
    latest: u64,
    highest: u64,
    /// Delta: `n` of the responses of the type not answered yet, oldest first.
    unanswered: Vec<u64>,
}

impl TypeJudge {
    fn new(url: &str) -> Self {
        Self {
            url: url.into(),
            accepted: None,
            storm: Storm::default(),
            latest: 0,
            highest: 0,
            unanswered: Vec::new(),
        }
    }
}

/// One stream's judge.
#[derive(Debug)]
pub(crate) struct Judge {
    mode: Mode,
    stream: u64,
    kind: StreamKind,
    peer: Option<Peer>,
    book: Arc<Mutex<NodeBook>>,
    node: Option<String>,
    first: c1_node::FirstRequest,
    types: Vec<TypeJudge>,
    /// The type of the request being handled.
    current: Option<usize>,
    /// A C4.ack-version finding, reported if the machine confirms a plain ACK.
    ack: Option<Violation>,
    /// The request being handled answers the latest response of its type.
    answers_latest: bool,
    coalesce: Coalesce,
    /// The highest `n` of a `<stream>-<n>` nonce the client has echoed on this stream: it had
    /// every response up to that one when it sent its latest request (C12 judges by it).
    known: u64,
    resubscribe: Option<Resubscribe>,
    responses: u64,
    /// A response went out with a nonce not of this stream's own `<stream>-<n>` form (a
    /// replayed transcript's): request nonces can no longer be judged by their form.
    foreign_nonces: bool,
    found: Vec<Violation>,
    /// The violation a strict judge ends the stream for.
    failed: Option<Violation>,
}

impl Judge {
    #[cfg(test)]
    /// A judge that checks nothing (`--conformance off`, tests of other parts).
    pub(crate) fn off() -> Self {
        Conformance::new(Mode::Off).judge(0, StreamKind::ADS_SOTW, None)
    }

    fn on(&self) -> bool {
        self.mode != Mode::Off
    }

    /// The stream's first request named `node` at `now` (C10, C11 look at its earlier
    /// streams).
    fn identified(&mut self, node: &str, now: Instant) {
        self.node = Some(node.to_string());
        let Some(peer) = self.peer.clone() else {
            return;
        };
        let service = self.kind.service;
        let mut book = lock(&self.book);
        let backoff = c10_backoff::opened(&mut book, (node.into(), peer.ip, service), now);
        let last = book.last.take(&(node.into(), peer.addr, service));
        drop(book);
        self.resubscribe = last.map(|last| Resubscribe::new(last, now));
        self.report(backoff);
    }

    /// Before the machine handles `request`: `ledger` is the type's wire history so far and
    /// `issued` how many nonces the stream has handed out.
    pub(crate) fn before(
        &mut self,
        request: &RequestView<'_>,
        ledger: Option<&Ledger>,
        issued: u64,
        now: Instant,
    ) {
        if !self.on() {
            return;
        }
        let url = request.type_url;
        let sotw = self.kind.variant == Variant::Sotw;
        let c1 = self.first.on_request(url, request.has_node);
        self.report(c1);
        if let (Some(before), Some(node)) = (&self.node, request.node_id) {
            let same = c1_node::same(before, node, url);
            self.report(same);
        }
        if let (None, Some(node)) = (&self.node, request.node_id) {
            self.identified(node, now);
        }
        if url.is_empty() && self.kind.service == "ads" {
            self.report(Some(Violation::new(
                "C2.type-url",
                None,
                "a request on an aggregated stream carries no type_url: the server cannot tell \
                 which type it is about"
                    .to_string(),
            )));
        }
        let seen_before = self.types.iter().any(|t| &*t.url == url);
        let declared = request.initial_versions.is_some_and(|v| !v.is_empty());
        if seen_before && declared {
            self.report(Some(Violation::new(
                "C11.late-initial-versions",
                Some(url),
                format!(
                    "a request for {url} that is not the stream's first for the type declares \
                     initial_resource_versions: the server already tracks what the client holds"
                ),
            )));
        }
        self.deadline(now, false);
        let index = self.type_index(request);
        self.current = Some(index);
        let storm = self.types[index].storm.on_request(url, now);
        self.report(storm);
        let (stream, highest) = (self.stream, self.types[index].highest);
        if !self.foreign_nonces {
            let nonce = c4_answer::nonce(stream, url, request.nonce, highest, issued);
            self.report(nonce);
        }
        let latest = (stream, self.types[index].latest);
        let echoed = c4_answer::parse(request.nonce);
        if !sotw && let Some((_, n)) = echoed.filter(|(from, _)| *from == stream) {
            let skipped = c4_answer::unanswered(url, stream, &mut self.types[index].unanswered, n);
            self.report(skipped);
        }
        self.answers_latest = echoed == Some(latest);
        if let Some((from, n)) = echoed
            && from == stream
            && n <= issued
        {
            self.known = self.known.max(n);
        }
        self.report(c5_nack::fields(request));
        if !sotw {
            return;
        }
        let t = &mut self.types[index];
        if request.error.is_some() {
            let c5 = c5_nack::version(request, ledger, t.accepted.as_deref());
            self.report(c5);
            return;
        }
        if t.accepted.as_deref() != Some(request.version) {
            t.accepted = Some(request.version.into());
        }
        self.ack = c4_answer::ack_version(url, request.version, request.nonce, ledger);
    }

    /// The index of the request's type, judging its first request on first sight.
    fn type_index(&mut self, request: &RequestView<'_>) -> usize {
        let url = request.type_url;
        if let Some(i) = self.types.iter().position(|t| &*t.url == url) {
            return i;
        }
        let version = request.version;
        self.types.push(TypeJudge::new(url));
        if let Some(resubscribe) = &mut self.resubscribe {
            let found = resubscribe.first_request(url, version, request.initial_versions);
            self.report(found);
        }
        self.types.len() - 1
    }

    /// After the machine handled the request, with what it decided.
    pub(crate) fn after(&mut self, exchange: Exchange) {
        let ack = self.ack.take();
        let Some(index) = self.current.take() else {
            return;
        };
        if exchange.verdict == Verdict::Ack && exchange.change == Change::None {
            self.report(ack);
        }
        if self.kind.service == "ads" {
            let url = &self.types[index].url;
            let answered = std::mem::take(&mut self.answers_latest);
            let first = exchange.first_for_type;
            let c12 = self
                .coalesce
                .on_request(url, exchange.change, answered, first, self.known);
            self.report(c12);
        }
    }

    /// A response went on the wire with `nonce`; `faulted`: a scenario rule changed it.
    pub(crate) fn on_response(&mut self, type_url: &str, nonce: &str, faulted: bool, now: Instant) {
        if !self.on() {
            return;
        }
        self.responses += 1;
        let index = match self.types.iter().position(|t| &*t.url == type_url) {
            Some(i) => i,
            None => {
                self.types.push(TypeJudge::new(type_url));
                self.types.len() - 1
            }
        };
        let t = &mut self.types[index];
        t.storm.on_response();
        let n = match c4_answer::parse(nonce) {
            Some((stream, n)) if stream == self.stream => {
                t.latest = n;
                t.highest = t.highest.max(n);
                if self.kind.variant == Variant::Delta {
                    t.unanswered.push(n);
                }
                Some(n)
            }
            _ => {
                self.foreign_nonces = true;
                None
            }
        };
        self.coalesce.on_response(type_url, n, faulted);
        self.deadline(now, false);
    }

    /// Whether [`Self::closed`] needs what the client held (building it moves the machine's
    /// maps, so the loop asks first).
    pub(crate) fn wants_held(&self) -> bool {
        self.on() && self.node.is_some()
    }

    /// The stream ended at `now` with the client holding `held`: left for the node's next
    /// stream on this connection. `cut`: the server ended it (a scenario fault, a strict
    /// judge), so its reconnect is not counted against the client's backoff.
    pub(crate) fn closed(&mut self, held: Held, cut: bool, now: Instant) {
        self.deadline(now, true);
        let (Some(node), Some(peer)) = (self.node.clone(), self.peer.clone()) else {
            return;
        };
        let service = self.kind.service;
        let last = c11_resubscribe::last_stream(self.stream, held);
        let mut book = lock(&self.book);
        // A stream the server cut counts as served: the client's reconnect is not its loop.
        let served = self.responses + u64::from(cut);
        c10_backoff::closed(&mut book, (node.clone(), peer.ip, service), served, now);
        *book.last.touch((node, peer.addr, service), now) = last;
    }

    /// The violations found since the last call, oldest first.
    pub(crate) fn take_violations(&mut self) -> Vec<Violation> {
        std::mem::take(&mut self.found)
    }

    /// Strict: the violation the stream must end for.
    pub(crate) fn failure(&self) -> Option<&Violation> {
        self.failed.as_ref()
    }

    fn deadline(&mut self, now: Instant, closing: bool) {
        let found = self
            .resubscribe
            .as_mut()
            .and_then(|r| r.check(now, closing));
        self.report(found);
    }

    fn report(&mut self, found: Option<Violation>) {
        let Some(violation) = found else {
            return;
        };
        if self.mode == Mode::Strict && self.failed.is_none() {
            self.failed = Some(violation.clone());
        }
        self.found.push(violation);
    }
}

fn lock(book: &Mutex<NodeBook>) -> MutexGuard<'_, NodeBook> {
    // A panic while holding it leaves plain data behind; keep judging with it.
    book.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
