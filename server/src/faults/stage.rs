//! The fault stage between a stream machine and the wire. Pure: it is given a batch of
//! responses and the stream's context and returns a plan; the stream loop carries it out and
//! tells the machine what happened ([`crate::protocol::machine::MachineHooks::note_wire`]).
//!
//! When no rule applies to a stream the plan is the batch itself, untouched and unmoved, so a
//! server without a scenario pays nothing here.

use std::{collections::HashMap, sync::Arc, time::Duration};

use super::select::{self, Moment};
use crate::{
    faults::scenario::{
        Installed,
        installed::{Firing, RuleCounters},
        model::{Action, Rule},
    },
    protocol::{
        facts::TapResponse,
        kind::StreamKind,
        machine::MachineHooks,
        now::Now,
        subscription::{Exchange, Verdict},
        wire::{FaultMark, WireFate, WireResponse},
    },
};

mod flap;
mod respond;
#[cfg(test)]
mod tests;

/// What the stage knows of a stream (no clock: time comes in as the stream's age).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamCtx<'a> {
    pub stream: u64,
    pub node: Option<&'a str>,
    /// Time since the stream opened.
    pub age: Duration,
    /// The moment the stage acts, for what it asks of the machine.
    pub now: Now,
}

/// How a rule ends a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// A gRPC status (`code`, `message`) in the trailers.
    Close { code: i32, message: String },
    /// RST_STREAM, no status.
    ResetStream,
    /// The whole TCP connection is reset.
    ResetConnection,
}

/// The response a stream-level step replaced or held, if one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub type_url: String,
    pub nonce: String,
}

/// One thing to do on the wire.
#[derive(Debug)]
pub(crate) enum WireStep<R> {
    /// Send `response`; `mark` names the rule that changed it, if one did, and `fate` (with
    /// the nonce it was planned with) is what the machine is told.
    Send {
        response: R,
        mark: Option<FaultMark>,
        fate: Option<(String, WireFate)>,
    },
    /// Hold `target` (the next step sends it) back this long; the stream reads nothing
    /// meanwhile.
    Wait {
        by: Duration,
        mark: FaultMark,
        target: Target,
    },
    /// `target` is never sent.
    Drop { target: Target, mark: FaultMark },
    /// Stop reading and writing, for `duration` or until the client leaves.
    Hang {
        duration: Option<Duration>,
        mark: FaultMark,
    },
    /// End the stream instead of sending `target` (and everything after it).
    End {
        end: StreamEnd,
        target: Option<Target>,
        mark: FaultMark,
    },
}

/// What to do with one batch.
#[derive(Debug)]
pub(crate) enum Plan<R> {
    /// Send every response as it is, in order.
    AsIs(Vec<R>),
    /// Carry out these steps in order.
    Steps(Vec<WireStep<R>>),
}

/// One rule that applies to this stream, with its state on the stream.
#[derive(Debug)]
struct Active {
    /// Its index in the scenario.
    index: usize,
    fired_here: u64,
    /// `after_ack`: the client ACKed that version since the rule last fired.
    armed: bool,
    /// A timed rule's moment has passed.
    timer_done: bool,
    /// `flap`: where the rule's resources are in their cycle on this stream.
    flap: flap::Cycle,
}

/// One stream's fault stage: the scenario rules that match the stream.
#[derive(Debug, Default)]
pub(crate) struct FaultStage {
    installed: Option<Arc<Installed>>,
    active: Vec<Active>,
    /// Responses of each type planned so far, and the last nonce that went on the wire.
    types: HashMap<String, (u64, Option<String>)>,
    batches: u64,
    /// Responses a rule asked the machine for, by nonce, to be marked when they are planned.
    marks: Vec<(String, FaultMark)>,
    /// Types whose resources a `flap` has had the machine hide, to be shown again once no
    /// rule hides them.
    masked: std::collections::BTreeSet<String>,
    /// Types a `withhold` left resources out of, to be served whole again once no rule
    /// withholds them ([`Self::released`]).
    withheld: std::collections::BTreeSet<String>,
}

impl FaultStage {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Follows `installed` from now on (per-stream counts of rules start again). Every
    /// `flap` cycle starts again too: [`Self::on_flap`] then shows what the old ones hid.
    pub(crate) fn load(&mut self, installed: Arc<Installed>, kind: StreamKind, node: Option<&str>) {
        self.installed = (!installed.is_empty()).then_some(installed);
        // Rules are matched by index: the new scenario's rule 0 is not the old one's.
        self.active.clear();
        self.select(kind, node);
    }

    /// Whether `installed` is the scenario this stage follows already (the empty one when it
    /// follows none): it was sent again to ask for a resync, not to change the rules.
    pub(crate) fn follows(&self, installed: &Arc<Installed>) -> bool {
        match &self.installed {
            Some(ours) => Arc::ptr_eq(ours, installed),
            None => installed.is_empty(),
        }
    }

    /// The types a `withhold` left resources out of that no rule in force withholds any
    /// more: their resources are owed to the client, as a `flap`'s are when it goes.
    pub(crate) fn released(&mut self) -> Vec<String> {
        let still = |stage: &Self, url: &str| {
            stage.active.iter().any(|a| {
                let (rule, _) = stage.rule(a.index);
                matches!(rule.action, Action::Withhold { .. })
                    && select::selects_type(&rule.selector, url)
            })
        };
        let gone: Vec<String> = self
            .withheld
            .iter()
            .filter(|url| !still(self, url))
            .cloned()
            .collect();
        for url in &gone {
            self.withheld.remove(url);
        }
        gone
    }

    /// The stream's node is known: rules with a node glob may now apply.
    pub(crate) fn identify(&mut self, kind: StreamKind, node: &str) {
        self.select(kind, Some(node));
    }

    fn select(&mut self, kind: StreamKind, node: Option<&str>) {
        let Some(installed) = &self.installed else {
            self.active.clear();
            return;
        };
        let before = std::mem::take(&mut self.active);
        self.active = installed
            .scenario
            .rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| {
                select::selects_stream(&rule.selector, kind, node) && select::acts_on(rule, kind)
            })
            .map(|(index, _)| {
                let kept = before.iter().find(|a| a.index == index);
                Active {
                    index,
                    fired_here: kept.map_or(0, |a| a.fired_here),
                    armed: kept.is_some_and(|a| a.armed),
                    timer_done: kept.is_some_and(|a| a.timer_done),
                    flap: kept.map(|a| a.flap).unwrap_or_default(),
                }
            })
            .collect();
    }

    /// No rule applies to the stream: every plan is [`Plan::AsIs`].
    pub(crate) fn is_idle(&self) -> bool {
        self.active.is_empty()
    }

    fn rule(&self, index: usize) -> (&Rule, &RuleCounters) {
        let installed = self
            .installed
            .as_ref()
            .expect("active rules have a scenario");
        (&installed.scenario.rules[index], &installed.counters[index])
    }

    /// Takes one firing of the active rule `a` (its per-stream and server-wide budgets) and
    /// records it; `None` when a budget is spent.
    fn take(&mut self, a: usize, ctx: &StreamCtx<'_>, at: Option<&Target>) -> Option<FaultMark> {
        self.reserve(a).then(|| self.fire(a, ctx, at))
    }

    /// Takes one firing of the active rule `a` from its budgets; false when one is spent.
    fn reserve(&self, a: usize) -> bool {
        let (rule, counters) = self.rule(self.active[a].index);
        let here = rule
            .per_stream
            .is_none_or(|n| self.active[a].fired_here < n);
        here && counters.try_take(rule.times)
    }

    /// Records the firing of the active rule `a` that [`Self::reserve`] took.
    fn fire(&mut self, a: usize, ctx: &StreamCtx<'_>, at: Option<&Target>) -> FaultMark {
        let (rule, counters) = self.rule(self.active[a].index);
        counters.record(Firing {
            at: ctx.now.wall,
            stream: ctx.stream,
            node: ctx.node.map(str::to_string),
            type_url: at.map(|t| t.type_url.clone()),
            nonce: at.map(|t| t.nonce.clone()),
        });
        let mark = FaultMark {
            rule: Arc::from(rule.id.as_str()),
            action: rule.action.name(),
        };
        self.active[a].fired_here += 1;
        self.active[a].armed = false;
        mark
    }

    fn skipped(&self, a: usize) {
        self.rule(self.active[a].index).1.skipped();
    }

    /// The stream age at which a timed rule (`close`/`reset`/`hang` with `when: { after }`
    /// only) fires next, or a `flap` turns, if one is waiting.
    pub(crate) fn deadline(&self) -> Option<Duration> {
        let timed = self
            .active
            .iter()
            .filter(|a| !a.timer_done)
            .filter_map(|a| {
                let (rule, counters) = self.rule(a.index);
                let waiting = select::is_timed(rule) && !counters.is_spent(rule.times);
                waiting.then_some(rule.when.after?)
            });
        timed.chain(self.flap_deadlines()).min()
    }

    /// The stream is `ctx.age` old: the timed rules due fire.
    pub(crate) fn on_timer<R>(&mut self, ctx: &StreamCtx<'_>) -> Vec<WireStep<R>> {
        let mut steps = Vec::new();
        for a in 0..self.active.len() {
            let (rule, _) = self.rule(self.active[a].index);
            let due = select::is_timed(rule)
                && !self.active[a].timer_done
                && rule.when.after.is_some_and(|after| ctx.age >= after);
            if !due {
                continue;
            }
            let action = rule.action.clone();
            self.active[a].timer_done = true;
            if let Some(mark) = self.take(a, ctx, None) {
                steps.push(respond::stream_step(&action, mark, None));
            }
        }
        steps
    }

    /// The plan for one batch, in the order the machine returned it.
    pub(crate) fn plan<R: TapResponse + WireResponse>(
        &mut self,
        ctx: &StreamCtx<'_>,
        out: Vec<R>,
    ) -> Plan<R> {
        if self.is_idle() {
            self.count(&out);
            return Plan::AsIs(out);
        }
        let mut out: Vec<(R, Option<FaultMark>)> = out.into_iter().map(|r| (r, None)).collect();
        self.reorder(ctx, &mut out);
        let mut steps = Vec::with_capacity(out.len());
        for (response, mark) in out {
            if respond::plan_one(self, ctx, response, mark, &mut steps).is_break() {
                break;
            }
        }
        Plan::Steps(steps)
    }

    /// Counts a batch that no rule looked at, as [`respond::plan_one`] and [`Self::reorder`]
    /// would: `nth`, `every` and `stale_nonce` of a scenario installed later on an open stream
    /// see its whole history ("the Nth response of the type on the stream").
    fn count<R: TapResponse>(&mut self, out: &[R]) {
        if out.len() >= 2 {
            self.batches += 1;
        }
        for response in out {
            let nonce = Some(response.nonce().to_string());
            match self.types.get_mut(response.type_url()) {
                Some(track) => *track = (track.0 + 1, nonce),
                None => {
                    let type_url = response.type_url().to_string();
                    self.types.insert(type_url, (1, nonce));
                }
            }
        }
    }

    /// `reorder`: a batch of two or more responses goes out dependents first.
    fn reorder<R: TapResponse>(&mut self, ctx: &StreamCtx<'_>, out: &mut [(R, Option<FaultMark>)]) {
        if out.len() < 2 {
            return;
        }
        self.batches += 1;
        for a in 0..self.active.len() {
            let (rule, _) = self.rule(self.active[a].index);
            let moment = Moment {
                n: self.batches,
                version: "",
                age: ctx.age,
                armed: self.active[a].armed,
            };
            let fires = matches!(rule.action, Action::Reorder)
                && out
                    .iter()
                    .any(|(r, _)| select::selects_type(&rule.selector, r.type_url()))
                && select::at_moment(
                    &rule.when,
                    Moment {
                        version: rule.when.version.as_deref().unwrap_or(""),
                        ..moment
                    },
                );
            if fires && let Some(mark) = self.take(a, ctx, None) {
                out.reverse();
                for (_, m) in out.iter_mut() {
                    *m = Some(mark.clone());
                }
            }
        }
    }

    /// After the machine handled a request of `type_url` as `exchange` says: arms the
    /// `after_ack` rules whose version the client ACKed, and returns the resends
    /// `ignore_acks` asks of `machine`.
    pub(crate) fn after_exchange<M: MachineHooks>(
        &mut self,
        ctx: &StreamCtx<'_>,
        type_url: &str,
        exchange: Exchange,
        machine: &mut M,
    ) -> Vec<M::Response> {
        let acked = match exchange.verdict {
            Verdict::Ack => machine
                .ledger(type_url)
                .and_then(|l| l.last_acked.as_ref())
                .map(|a| a.version.clone()),
            _ => None,
        };
        let mut out = Vec::new();
        for a in 0..self.active.len() {
            let (rule, _) = self.rule(self.active[a].index);
            if !select::selects_type(&rule.selector, type_url) {
                continue;
            }
            let arm = acked.is_some() && rule.when.after_ack == acked;
            let storm = match rule.action {
                Action::IgnoreAcks { nacks } => {
                    let answered = exchange.verdict == Verdict::Ack
                        || (nacks && exchange.verdict == Verdict::Nack);
                    answered && rule.when.after.is_none_or(|after| ctx.age >= after)
                }
                _ => false,
            };
            if arm {
                self.active[a].armed = true;
            }
            // The budget first: a resend the machine made is in its ledger, so one the rule
            // may not send must never be made.
            if !storm || !self.reserve(a) {
                continue;
            }
            let Some(again) = machine.repeat_last(type_url, ctx.now) else {
                self.rule(self.active[a].index).1.give_back();
                self.skipped(a);
                continue;
            };
            let target = Target {
                type_url: type_url.to_string(),
                nonce: again.nonce().to_string(),
            };
            let mark = self.fire(a, ctx, Some(&target));
            self.marks.push((target.nonce, mark));
            out.push(again);
        }
        out
    }
}
