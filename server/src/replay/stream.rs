//! One replaying stream: bound to a recorded stream at its first request, then each request
//! checked against the next one recorded for its type and answered with the recorded
//! responses that followed it.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, VecDeque},
    marker::PhantomData,
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use xdsloop_transcript::{
    Event, Step, What,
    fields::TypeUrl,
    line::{Dir, ErrorDetail, RequestBody},
    print,
    step::{Change as StepChange, Verdict as StepVerdict},
};

use super::{Failure, Flavor, Replay};
use crate::{
    protocol::{
        facts::{StatusFacts, TapRequest},
        held::Held,
        kind::StreamKind,
        machine::{MachineHooks, StreamMachine},
        now::Now,
        subscription::{
            Change, Exchange, Ledger, Subscription, TypeStatus, Verdict, delta_subscribes_wildcard,
        },
        wire::{FaultMark, WireFate},
    },
    replay::script::{RecordedRequest, RecordedResponse, RecordedStream},
    snapshot::Snapshot,
};

/// gRPC `FAILED_PRECONDITION`: the client is not in the state the recording needs.
const FAILED_PRECONDITION: i32 = 9;

/// A stream serving a recorded stream again (see [`super`]).
pub(crate) struct ReplayStream<F: Flavor> {
    replay: Arc<Replay>,
    /// `ads-sotw`, `clusters-delta`, …: recorded streams of another transport never bind.
    transport: String,
    node: Option<String>,
    /// The recorded stream this one replays, once its first request bound it.
    bound: Option<usize>,
    /// Per type URL: how many of its recorded requests have arrived.
    next: BTreeMap<String, usize>,
    /// Per type URL: the nonce of the latest response sent (to say what a request was).
    latest: HashMap<String, String>,
    exchange: Exchange,
    /// Set when a request was not the recorded one: the stream ends with this status.
    ending: Option<StatusFacts>,
    failed: bool,
    /// `--replay-timing`: responses wait their recorded delay after their request. Those
    /// the latest request released, with their delays, until the next tick schedules them.
    released: Vec<(Duration, SentNote, F::Response)>,
    /// Scheduled responses, in the order they go out.
    scheduled: VecDeque<(Instant, SentNote, F::Response)>,
    issued: u64,
    /// Per type URL, what the client asked for and how it answered what the replay sent, for
    /// `/status` and the page (whose state of a replayed type is that answer).
    types: BTreeMap<String, Subscription>,
    /// Types whose status changed since `take_status`.
    changed: BTreeSet<String>,
    flavor: PhantomData<fn() -> F>,
}

impl<F: Flavor> ReplayStream<F> {
    pub(crate) fn new(replay: Arc<Replay>, kind: StreamKind) -> Self {
        Self {
            replay,
            transport: kind.to_string(),
            node: None,
            bound: None,
            next: BTreeMap::new(),
            latest: HashMap::new(),
            exchange: Exchange::default(),
            ending: None,
            failed: false,
            released: Vec::new(),
            scheduled: VecDeque::new(),
            issued: 0,
            types: BTreeMap::new(),
            changed: BTreeSet::new(),
            flavor: PhantomData,
        }
    }

    /// The request in the recording's terms, judged as the server would have (for the tap and
    /// for messages; a matching request takes the recorded judgement instead).
    fn observe(&mut self, request: &F::Request) -> RecordedRequest {
        let view = request.view();
        let first = !self.next.contains_key(view.type_url);
        let verdict = match (view.nonce, view.error, self.latest.get(view.type_url)) {
            ("", _, _) | (_, _, None) => StepVerdict::Initial,
            (nonce, _, Some(latest)) if nonce != latest => StepVerdict::Stale,
            (_, Some(_), _) => StepVerdict::Nack,
            (_, None, _) => StepVerdict::Ack,
        };
        self.exchange = Exchange {
            verdict: verdict_of(verdict),
            first_for_type: first,
            change: Change::None,
            wildcard: false,
        };
        RecordedRequest {
            dir: Dir::In,
            transport: None,
            type_url: TypeUrl::new(view.type_url),
            step: Step::of_request(verdict, first, false, None),
            verdict,
            change: None,
            body: F::body(request),
            nonce: view.nonce.to_string(),
            has_node: view.has_node,
            error_detail: view.error.map(|(code, message)| ErrorDetail {
                code,
                message: message.to_string(),
            }),
        }
    }

    /// The request in the stream's ledger: what it asks for, and its ACK or NACK.
    fn note_request(&mut self, got: &RecordedRequest, at: SystemTime) {
        let type_url = got.type_url.0.clone();
        let first = !self.types.contains_key(&type_url);
        let subscription = self.types.entry(type_url.clone()).or_default();
        let version = match &got.body {
            RequestBody::Sotw { version, names } => {
                self.exchange.wildcard = subscription.interest.sotw_subscribes_wildcard(names);
                subscription.interest.replace(names);
                version.clone()
            }
            RequestBody::Delta {
                subscribe,
                unsubscribe,
                ..
            } => {
                self.exchange.wildcard = delta_subscribes_wildcard(first, subscribe);
                subscription
                    .interest
                    .apply_delta(first, subscribe, unsubscribe);
                let sent = subscription.ledger.last_sent.as_ref();
                sent.map(|s| s.version.clone()).unwrap_or_default()
            }
        };
        let ledger = &mut subscription.ledger;
        match ledger.classify(&got.nonce, got.error_detail.is_some()) {
            Verdict::Ack => ledger.record_ack(&version, at),
            Verdict::Nack => {
                let message = got.error_detail.as_ref().map(|e| e.message.as_str());
                ledger.record_nack(message.unwrap_or_default(), at);
            }
            _ => {}
        }
        self.changed.insert(type_url);
    }

    /// A recorded response as it goes out at `at`, in the ledger.
    fn note_sent(&mut self, sent: &SentNote, at: SystemTime) {
        let subscription = self.types.entry(sent.type_url.clone()).or_default();
        (subscription.ledger).record_sent(&sent.version, &sent.nonce, sent.resources, at);
        self.changed.insert(sent.type_url.clone());
    }

    fn bind(&mut self) -> Result<usize, Failure> {
        if let Some(bound) = self.bound {
            return Ok(bound);
        }
        let node = self.node.as_deref().unwrap_or_default();
        let bound = self
            .replay
            .bind(node, &self.transport)
            .map_err(|message| Failure {
                line: None,
                message,
            })?;
        self.bound = Some(bound);
        Ok(bound)
    }

    /// Checks `got` against the next recorded request of its type; the responses to send.
    fn replay_one(
        &mut self,
        got: &RecordedRequest,
        wall: SystemTime,
    ) -> Result<Vec<F::Response>, Failure> {
        let replay = Arc::clone(&self.replay);
        let stream = &replay.script().streams[self.bind()?];
        let type_url = &got.type_url.0;
        let at = self.next.get(type_url).copied().unwrap_or(0);
        let Some(turn) = stream.types.get(type_url).and_then(|turns| turns.get(at)) else {
            return Err(self.none_left(stream, got));
        };
        if !same_request(&turn.request, got) {
            let file = &replay.script().file;
            return Err(Failure {
                line: Some(turn.line),
                message: format!(
                    "replay: {file}:{} expected {}, got {}",
                    turn.line,
                    show(&turn.request),
                    show(got)
                ),
            });
        }
        self.next.insert(type_url.clone(), at + 1);
        // The recording's judgement; whether it subscribed the wildcard is the request's own.
        self.exchange = Exchange {
            wildcard: self.exchange.wildcard,
            ..recorded_exchange(&turn.request)
        };
        replay.matched();
        if let Some(end) = &stream.ended
            && self.next.values().sum::<usize>() == stream.requests()
        {
            // The recorded server ended the stream after its last request: so does the replay.
            self.ending = Some(StatusFacts {
                code: end.code,
                message: Box::from(end.message.as_str()),
            });
        }
        let mut now = Vec::new();
        for recorded in &turn.responses {
            self.latest
                .insert(recorded.type_url.clone(), recorded.nonce.clone());
            self.issued += 1;
            let note = SentNote::of(recorded);
            match replay.timed() {
                true => (self.released).push((recorded.after, note, F::response(recorded))),
                false => {
                    self.note_sent(&note, wall);
                    now.push(F::response(recorded));
                }
            }
        }
        Ok(now)
    }

    /// The message for a request of a type whose recorded requests have all arrived.
    fn none_left(&self, stream: &RecordedStream, got: &RecordedRequest) -> Failure {
        let file = &self.replay.script().file;
        let recorded = stream.types.get(&got.type_url.0);
        let last = recorded
            .and_then(|turns| turns.last())
            .map(|turn| turn.line);
        let label = got.type_url.label();
        let message = match last {
            Some(line) => format!(
                "replay: {file}:{line} was the recorded stream's last {label} request \
                 (stream {} of node \"{}\"), got {}",
                stream.id,
                stream.node,
                show(got)
            ),
            None => format!(
                "replay: the recorded stream {} of node \"{}\" has no {label} request, got {}",
                stream.id,
                stream.node,
                show(got)
            ),
        };
        Failure {
            line: last,
            message,
        }
    }
}

impl<F: Flavor> StreamMachine for ReplayStream<F> {
    type Request = F::Request;
    type Response = F::Response;

    fn on_request(&mut self, request: F::Request, now: Now) -> Vec<F::Response> {
        if self.failed {
            return Vec::new();
        }
        if self.node.is_none() {
            self.node = F::node(&request).map(str::to_string);
        }
        let got = self.observe(&request);
        self.note_request(&got, now.wall);
        match self.replay_one(&got, now.wall) {
            Ok(responses) => responses,
            Err(failure) => {
                self.failed = true;
                self.ending = Some(StatusFacts {
                    code: FAILED_PRECONDITION,
                    message: Box::from(failure.message.as_str()),
                });
                self.replay.failed(failure);
                Vec::new()
            }
        }
    }

    /// A replay serves the recording, not the fixtures.
    fn on_snapshot(&mut self, _snapshot: Arc<Snapshot>, _now: Now) -> Vec<F::Response> {
        Vec::new()
    }

    /// With `--replay-timing`, the responses whose recorded delay has passed (a replay sends
    /// no heartbeats of its own).
    fn on_tick(&mut self, now: Now) -> Vec<F::Response> {
        let (wall, now) = (now.wall, now.at);
        for (after, note, response) in std::mem::take(&mut self.released) {
            // Later than every one scheduled before: recorded order is kept.
            let at = (self.scheduled.back().map(|(at, ..)| *at))
                .map_or(now + after, |last| last.max(now + after));
            self.scheduled.push_back((at, note, response));
        }
        let mut due = Vec::new();
        while self.scheduled.front().is_some_and(|(at, ..)| *at <= now) {
            if let Some((_, note, response)) = self.scheduled.pop_front() {
                self.note_sent(&note, wall);
                due.push(response);
            }
        }
        due
    }

    fn next_deadline(&self) -> Option<Instant> {
        match self.released.is_empty() {
            true => self.scheduled.front().map(|(at, ..)| *at),
            // Scheduled at the next tick, which the loop makes after every event.
            false => None,
        }
    }

    fn node_id(&self) -> Option<&str> {
        self.node.as_deref()
    }

    fn take_status(&mut self) -> Vec<TypeStatus> {
        let changed = std::mem::take(&mut self.changed);
        let statuses = changed.into_iter().filter_map(|type_url| {
            let subscription = self.types.get(&type_url)?;
            let mut status = subscription.status(&type_url, None);
            status.replayed = true;
            Some(status)
        });
        statuses.collect()
    }

    fn held(self) -> Held {
        Held::default()
    }
}

impl<F: Flavor> MachineHooks for ReplayStream<F> {
    fn exchange(&self) -> Exchange {
        self.exchange
    }

    fn ledger(&self, _type_url: &str) -> Option<&Ledger> {
        None
    }

    fn nonces_issued(&self) -> u64 {
        self.issued
    }

    /// A replay sends what was recorded, nothing more.
    fn repeat_last(&mut self, _type_url: &str, _now: Now) -> Option<F::Response> {
        None
    }

    /// A replay serves recorded responses, not a snapshot: there is nothing to hide.
    fn mask(&mut self, _type_url: &str, _globs: Vec<String>, _now: Now) -> Vec<F::Response> {
        Vec::new()
    }

    fn note_wire(&mut self, _: &str, _: &str, _: FaultMark, _: WireFate, _: Now) {}

    fn take_ending(&mut self) -> Option<StatusFacts> {
        // A recorded end waits for the responses still on their recorded delay.
        let waiting = !self.released.is_empty() || !self.scheduled.is_empty();
        if waiting && !self.failed {
            return None;
        }
        self.ending.take()
    }
}

/// What the ledger keeps of a recorded response.
struct SentNote {
    type_url: String,
    version: String,
    nonce: String,
    resources: usize,
}

impl SentNote {
    fn of(recorded: &RecordedResponse) -> Self {
        Self {
            type_url: recorded.type_url.clone(),
            version: recorded.version.clone(),
            nonce: recorded.nonce.clone(),
            resources: recorded.resources.len(),
        }
    }
}

/// Whether `got` is the request the recording has: type, nonce, ACK or NACK, SotW version and
/// names (as a set), Delta subscribe and unsubscribe (as sets). The error text, the node's
/// other fields and Delta's initial versions may differ between runs.
fn same_request(expected: &RecordedRequest, got: &RecordedRequest) -> bool {
    let set = |names: &[String]| names.iter().cloned().collect::<BTreeSet<_>>();
    let same_body = match (&expected.body, &got.body) {
        (
            RequestBody::Sotw { version, names },
            RequestBody::Sotw {
                version: got_version,
                names: got_names,
            },
        ) => version == got_version && set(names) == set(got_names),
        (
            RequestBody::Delta {
                subscribe,
                unsubscribe,
                ..
            },
            RequestBody::Delta {
                subscribe: got_subscribe,
                unsubscribe: got_unsubscribe,
                ..
            },
        ) => set(subscribe) == set(got_subscribe) && set(unsubscribe) == set(got_unsubscribe),
        _ => false,
    };
    expected.type_url == got.type_url
        && expected.nonce == got.nonce
        && expected.error_detail.is_some() == got.error_detail.is_some()
        && same_body
}

/// A request as `transcript print` shows it: `cds ACK v"7" n1-1 [web]`.
fn show(request: &RecordedRequest) -> String {
    let event = Event {
        t: SystemTime::UNIX_EPOCH,
        stream: None,
        seq: None,
        node: None,
        what: What::Request(request.clone()),
    };
    let text = print::body(&event, 0);
    // `cds ← ACK<padding> details`: without the arrow and the padding.
    let mut parts = text.splitn(4, ' ');
    let (ty, _arrow, step) = (parts.next(), parts.next(), parts.next());
    let details = parts.next().unwrap_or_default().trim_start();
    let ty = ty.filter(|t| !t.is_empty()).unwrap_or("(no type)");
    format!("{ty} {} {details}", step.unwrap_or_default())
}

/// What the recording says the server made of a request.
fn recorded_exchange(request: &RecordedRequest) -> Exchange {
    Exchange {
        verdict: verdict_of(request.verdict),
        first_for_type: matches!(request.step, Step::Subscribe | Step::Resubscribe),
        change: match request.change {
            None => Change::None,
            Some(StepChange::Widened) => Change::Widened,
            Some(StepChange::Narrowed) => Change::Narrowed,
        },
        wildcard: false,
    }
}

fn verdict_of(verdict: StepVerdict) -> Verdict {
    match verdict {
        StepVerdict::Initial => Verdict::Initial,
        StepVerdict::Ack => Verdict::Ack,
        StepVerdict::Nack => Verdict::Nack,
        StepVerdict::Stale => Verdict::Stale,
        StepVerdict::Ignored => Verdict::Ignored,
    }
}
