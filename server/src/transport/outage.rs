//! Server-wide faults carried out ([`crate::faults::server`] decides): one task per
//! server follows the scenario in force and fires its timed `outage`s (at the installation or
//! `when.after` later); streams report each request while some rule waits for one
//! (`when.requested`), and the request that sets an outage off gets no answer.
//!
//! A firing is logged (`WARN ... fault injected`), counted (`counters.faults`, the rule's
//! `fired` and `last`), put on the bus as a stream-0 `fault` event (so `--record` marks it)
//! and started on the scenario's [`Outages`], which the accept loop follows: it closes the
//! listener and every connection, so every stream ends, and listens again when it is over.

use std::{
    sync::{
        Arc, RwLock,
        atomic::{AtomicBool, AtomicU32, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use tokio::{sync::watch, task::JoinSet};
use tracing::warn;
use xdsloop_proto::type_url;

use crate::faults::server::{Asked, ServerRules, Trigger, is_wildcard};
use crate::tap::{FaultFacts, What, WireEvent};
use crate::{
    admin::registry::{Registry, stats::Tally},
    faults::scenario::{
        Installed, Scenarios,
        model::Action,
        outage::{Outage, Outages},
    },
    protocol::{
        facts::{Capture, Names, TapRequest, TypeName},
        fetch::FETCH_STREAM_ID,
        kind::StreamKind,
        wire::FaultMark,
    },
};

/// An outage due at the installation begins this much after it, so the answer to the
/// `PUT /scenario` that installed it (on the xDS port, by default) leaves first.
pub(crate) const ANSWER_FIRST: Duration = Duration::from_millis(100);

/// What one request asked for, as the server-wide rules read it.
#[derive(Debug)]
pub(crate) struct Asking {
    at: SystemTime,
    node: Option<String>,
    type_url: String,
    names: Vec<Box<str>>,
    /// SotW, or Delta's first request of the type (an empty one is then a wildcard).
    first: bool,
    /// The names of the type the client already holds from this stream.
    sent: Vec<String>,
}

/// The server's server-wide rules and what carries them out. Cheap to clone; the default is
/// detached (no rules, nothing happens): for streams run outside a server.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerFaults {
    inner: Option<Arc<Inner>>,
}

#[derive(Debug)]
struct Inner {
    rules: RwLock<Arc<ServerRules>>,
    /// Some rule of the installation in force waits for a request.
    wants_requests: AtomicBool,
    outages: Outages,
    registry: Registry,
    /// Event positions of the server-wide lines on stream 0.
    seq: AtomicU32,
}

impl ServerFaults {
    /// Follows `scenarios` until `stopped` turns true or nobody can change them any more.
    pub(crate) fn start(
        scenarios: &Scenarios,
        registry: Registry,
        stopped: watch::Receiver<bool>,
    ) -> Self {
        let mut follow = scenarios.subscribe();
        let installed = follow.borrow_and_update().clone();
        let rules = Arc::new(ServerRules::of(installed));
        let inner = Arc::new(Inner {
            wants_requests: AtomicBool::new(rules.wants_requests()),
            rules: RwLock::new(rules.clone()),
            outages: scenarios.outages().clone(),
            registry,
            seq: AtomicU32::new(0),
        });
        tokio::spawn(follow_scenarios(inner.clone(), follow, stopped, rules));
        Self { inner: Some(inner) }
    }

    /// Some rule waits for a request: [`Self::asked`] is worth calling (one atomic load).
    pub(crate) fn wants_requests(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|i| i.wants_requests.load(Ordering::Relaxed))
    }

    /// What `request` asks for, and what the stream has `sent` of its type before it, kept
    /// for [`Self::asked`] (the request itself goes to the machine first); `None` while no
    /// rule waits for a request.
    pub(crate) fn note<R: TapRequest>(
        &self,
        node: Option<&str>,
        request: &R,
        sent: impl FnOnce(&str) -> Vec<String>,
    ) -> Option<Asking> {
        if !self.wants_requests() {
            return None;
        }
        let view = request.view();
        let facts = request.facts(Capture::Full);
        let (names, first): (Vec<Box<str>>, bool) = match facts.names {
            Names::Sotw(names) => (names.items.into_vec(), true),
            Names::Delta { subscribe, .. } => (subscribe.items.into_vec(), view.nonce.is_empty()),
        };
        Some(Asking {
            at: SystemTime::now(),
            node: view.node_id.or(node).map(str::to_string),
            type_url: view.type_url.to_string(),
            names,
            first,
            sent: sent(view.type_url),
        })
    }

    /// A stream's request asked for `asking`; `true` when that set off an outage: the stream
    /// must send nothing in answer (the listener and its connection are going away).
    pub(crate) fn asked(&self, stream: u64, kind: StreamKind, asking: Asking) -> bool {
        let Some(inner) = &self.inner else {
            return false;
        };
        let names: Vec<&str> = asking.names.iter().map(|n| &**n).collect();
        let sent: Vec<&str> = asking.sent.iter().map(String::as_str).collect();
        let asked = Asked {
            stream,
            kind,
            node: asking.node.as_deref(),
            type_url: &asking.type_url,
            wildcard: is_wildcard(&asking.type_url, &names, asking.first),
            names: &names,
            sent: &sent,
        };
        let rules = inner.current();
        let mut began = false;
        for (index, trigger) in rules.on_request(&asked) {
            began |= inner.fire(&rules, index, trigger, asking.at);
        }
        began
    }

    /// An outage is in progress: streams ending now end by it.
    pub(crate) fn in_outage(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.outages.is_active())
    }
}

impl Inner {
    fn current(&self) -> Arc<ServerRules> {
        self.rules.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn install(&self, rules: Arc<ServerRules>) {
        self.wants_requests
            .store(rules.wants_requests(), Ordering::Relaxed);
        *self.rules.write().unwrap_or_else(|e| e.into_inner()) = rules;
    }

    /// Rule `index` fired at `at` (its one chance already taken); `true` if an outage began.
    /// One that cannot begin (another lasts) is counted as skipped, not fired.
    fn fire(&self, rules: &ServerRules, index: usize, trigger: Trigger, at: SystemTime) -> bool {
        let rule = rules.rule(index);
        let Action::Outage { duration } = rule.action else {
            return false;
        };
        let described = trigger.describe();
        let counters = &rules.installed().counters[index];
        let outage = Outage {
            rule: rule.id.clone(),
            generation: rules.installed().generation,
            trigger: described.clone(),
            started_at: SystemTime::now(),
            duration,
            until: Instant::now() + duration,
            connections_closed: 0,
            ended_at: None,
            rebind: None,
        };
        let length = humantime::format_duration(duration);
        if !self.outages.begin(outage) {
            counters.not_started();
            warn!(rule = %rule.id, trigger = %described,
                "outage not started: another one is in progress");
            return false;
        }
        counters.record(trigger.firing(at));
        let (node, asked_type) = match &trigger {
            Trigger::Requested { node, type_url, .. } => (node.as_deref(), Some(type_url.as_str())),
            _ => (None, None),
        };
        warn!(stream = FETCH_STREAM_ID, node, r#type = asked_type.map(type_url::short_name),
            rule = %rule.id, action = "outage", detail = %format!("for {length}: {described}"),
            "fault injected: every stream ends and the xDS listener closes for {length}");
        self.registry.count(Tally {
            faults: 1,
            ..Tally::default()
        });
        if self.registry.bus().capture().is_some() {
            let facts = FaultFacts {
                mark: FaultMark {
                    rule: Arc::from(rule.id.as_str()),
                    action: "outage",
                },
                type_url: asked_type.map(TypeName::of),
                nonce: None,
                detail: Some(
                    format!(
                        "outage for {length} ({described}): every stream ends, the xDS \
                         listener refuses connections"
                    )
                    .into(),
                ),
            };
            let event = WireEvent {
                at: SystemTime::now(),
                stream: FETCH_STREAM_ID,
                seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
                node: node.map(Arc::from),
                what: What::Fault(Box::new(facts)),
            };
            self.registry.bus().send(Arc::new(event));
        }
        true
    }
}

/// Each installation's timed rules, each on a timer of its own; a new installation drops the
/// old one's timers.
async fn follow_scenarios(
    inner: Arc<Inner>,
    mut follow: watch::Receiver<Arc<Installed>>,
    mut stopped: watch::Receiver<bool>,
    first: Arc<ServerRules>,
) {
    let mut rules = first;
    loop {
        let mut timers = JoinSet::new();
        for (index, after) in rules.timed() {
            let (inner, rules) = (inner.clone(), rules.clone());
            timers.spawn(async move {
                tokio::time::sleep(after.max(ANSWER_FIRST)).await;
                fire_timed(&inner, &rules, index, after);
            });
        }
        // A resync sends the same installation again: its timers keep running.
        let installed = loop {
            tokio::select! {
                changed = follow.changed() => {
                    if changed.is_err() {
                        // Nobody can change the scenario any more: the timers run out as set.
                        timers.detach_all();
                        return;
                    }
                }
                _ = stopped.wait_for(|stop| *stop) => return,
            }
            let installed = follow.borrow_and_update().clone();
            if !Arc::ptr_eq(rules.installed(), &installed) {
                break installed;
            }
        };
        rules = Arc::new(ServerRules::of(installed));
        inner.install(rules.clone());
        // Dropping the set aborts the old installation's timers that have not fired.
        drop(timers);
    }
}

fn fire_timed(inner: &Inner, rules: &ServerRules, index: usize, after: Duration) {
    if !rules.take(index) {
        return;
    }
    let trigger = match after.is_zero() {
        true => Trigger::Installed,
        false => Trigger::After(after),
    };
    inner.fire(rules, index, trigger, SystemTime::now());
}
