//! Scenario rules on REST polls (docs/scenarios.md, "REST polling"). A poll has no stream, so
//! each node gets a [`FaultStage`] of its own, as if its polls were one stream of kind
//! [`StreamKind::REST`] (stream id 0): `nth` and `every` count the node's responses of a type,
//! `per_stream` counts per node, and `after` is the time since the node's first poll under
//! the scenario in force. A new scenario starts every node's counts again.
//!
//! Every firing is logged, counted in `/status` (`counters.faults` and the rule's own
//! counters) and, while someone listens (`--record`, tests), put on the bus as a stream-0
//! event: the changed response, or a `fault` when no response carries it.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::{Instant, SystemTime},
};

use tracing::warn;
use xdsloop_proto::type_url;

use crate::faults::stage::{FaultStage, Plan, StreamCtx, Target, WireStep};
use crate::tap::{FaultFacts, What, WireEvent};
use crate::{
    admin::registry::{Registry, stats::Tally},
    faults::scenario::{Installed, Scenarios},
    protocol::{
        facts::{TapResponse, TypeName},
        fetch::FETCH_STREAM_ID,
        kind::StreamKind,
        response::SotwResponse,
        wire::FaultMark,
    },
};

/// Nodes whose poll counts are kept; past it they all start again (a bound on what a stream
/// of made-up node ids can cost).
const MAX_NODES: usize = 65_536;

/// What the rules do to one poll.
#[derive(Debug)]
pub(crate) enum Planned {
    /// No rule applies: the answer as it is (`None`: 304 Not Modified).
    AsIs(Option<SotwResponse>),
    /// Carry these out in order; without a `Send` the answer is 304.
    Steps(Vec<WireStep<SotwResponse>>),
}

/// The fault stages of REST polls, one per node, and where their firings are shown.
#[derive(Debug, Clone)]
pub(crate) struct RestFaults {
    scenarios: Scenarios,
    registry: Registry,
    nodes: Arc<Mutex<Nodes>>,
    /// Event positions on stream 0.
    seq: Arc<AtomicU32>,
}

#[derive(Debug, Default)]
struct Nodes {
    /// The scenario the stages follow.
    generation: u64,
    stages: HashMap<String, NodeStage>,
}

#[derive(Debug)]
struct NodeStage {
    stage: FaultStage,
    since: Instant,
}

impl RestFaults {
    pub(crate) fn new(scenarios: Scenarios, registry: Registry) -> Self {
        Self {
            scenarios,
            registry,
            nodes: Arc::default(),
            seq: Arc::default(),
        }
    }

    /// Plans one poll of `node` (empty: the request named none) answered with `response`.
    /// Timed rules (`close` or `hang` with only `after`) that are due fire on it, even on a
    /// 304.
    pub(crate) fn plan(&self, node: &str, response: Option<SotwResponse>) -> Planned {
        let installed = self.scenarios.current();
        if installed.is_empty() {
            return Planned::AsIs(response);
        }
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        if nodes.generation != installed.generation || nodes.stages.len() >= MAX_NODES {
            nodes.generation = installed.generation;
            nodes.stages.clear();
        }
        let known = (!node.is_empty()).then_some(node);
        let entry = nodes
            .stages
            .entry(node.to_string())
            .or_insert_with(|| NodeStage::new(installed, known));
        if entry.stage.is_idle() {
            return Planned::AsIs(response);
        }
        let ctx = StreamCtx {
            stream: FETCH_STREAM_ID,
            node: known,
            age: entry.since.elapsed(),
            now: crate::transport::stream::now(),
        };
        let mut steps = entry.stage.on_timer(&ctx);
        let ended = steps.iter().any(|s| matches!(s, WireStep::End { .. }));
        if let Some(response) = response.filter(|_| !ended) {
            match entry.stage.plan(&ctx, vec![response]) {
                Plan::AsIs(out) => steps.extend(out.into_iter().map(|response| WireStep::Send {
                    response,
                    mark: None,
                    fate: None,
                })),
                Plan::Steps(planned) => steps.extend(planned),
            }
        }
        Planned::Steps(steps)
    }

    /// A rule changed `response` on its way out (`detail` says how).
    pub(crate) fn changed(
        &self,
        node: &str,
        response: &SotwResponse,
        mark: &FaultMark,
        detail: &str,
    ) {
        let at = (response.type_url(), response.nonce());
        log(node, mark, Some(at), detail);
        self.count();
        if let Some(capture) = self.registry.bus().capture() {
            let mut facts = response.facts(capture);
            facts.fault = Some(mark.clone());
            self.emit(node, What::Response(Box::new(facts)));
        }
    }

    /// A rule fired with no response to carry it (a hang, an HTTP error instead of one).
    pub(crate) fn fired(
        &self,
        node: &str,
        mark: FaultMark,
        target: Option<&Target>,
        detail: String,
    ) {
        let at = target.map(|t| (t.type_url.as_str(), t.nonce.as_str()));
        log(node, &mark, at, &detail);
        self.count();
        if self.registry.bus().capture().is_some() {
            let facts = FaultFacts {
                mark,
                type_url: target.map(|t| TypeName::of(&t.type_url)),
                nonce: target.map(|t| Box::from(t.nonce.as_str())),
                detail: Some(detail.into()),
            };
            self.emit(node, What::Fault(Box::new(facts)));
        }
    }

    fn count(&self) {
        self.registry.count(Tally {
            faults: 1,
            ..Tally::default()
        });
    }

    fn emit(&self, node: &str, what: What) {
        let event = WireEvent {
            at: SystemTime::now(),
            stream: FETCH_STREAM_ID,
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            node: (!node.is_empty()).then(|| Arc::from(node)),
            what,
        };
        self.registry.bus().send(Arc::new(event));
    }
}

impl NodeStage {
    fn new(installed: Arc<Installed>, node: Option<&str>) -> Self {
        let mut stage = FaultStage::new();
        stage.load(installed, StreamKind::REST, node);
        Self {
            stage,
            since: Instant::now(),
        }
    }
}

/// Every firing is in the log, whatever observes the server.
fn log(node: &str, mark: &FaultMark, at: Option<(&str, &str)>, detail: &str) {
    let (url, nonce) = at.unwrap_or_default();
    warn!(stream = FETCH_STREAM_ID, transport = "rest", node, r#type = %type_url::short_name(url),
        rule = %mark.rule, action = mark.action, nonce, detail, "fault injected");
}
