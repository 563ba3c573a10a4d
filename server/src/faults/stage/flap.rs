//! `flap`: a rule's resources are there for a `period`, gone for one, back for one, and so on,
//! for as long as the rule is in force. The stage keeps each rule's cycle by the stream's age
//! and has the machine hide the names while they are gone
//! ([`crate::protocol::machine::MachineHooks::mask`]): the machine's own responses say it, so
//! versions, nonces and the ledger stay exact (SotW: the cut set under a version of its own;
//! Delta: `removed_resources`, then the resources again).
//!
//! One firing is one removal the client was told of; the return that follows is marked with
//! the rule but not counted. A removal that would tell the client nothing (the type or the
//! names are not subscribed on this stream) is not made, and waits for the next period. Once
//! a budget (`times`, `per_stream`) is spent the resources come back and stay.

use std::time::Duration;

use super::{FaultStage, StreamCtx, Target};
use crate::{
    faults::scenario::model::Action,
    protocol::{facts::TapResponse, machine::MachineHooks, now::Now, wire::FaultMark},
};

/// Where one `flap` rule is in its cycle on one stream.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Cycle {
    /// The stream age of the next turn; `None` until the stage first sees the rule in force
    /// (the first turn is a period after that, or after `when.after`).
    next: Option<Duration>,
    /// The resources are hidden now.
    gone: bool,
    /// A budget ran out: no more removals on this stream.
    done: bool,
}

impl FaultStage {
    /// When each waiting `flap` turns next (a rule not yet scheduled: at once, to be).
    pub(super) fn flap_deadlines(&self) -> impl Iterator<Item = Duration> + '_ {
        self.active.iter().filter_map(|a| {
            let (rule, counters) = self.rule(a.index);
            let flaps = matches!(rule.action, Action::Flap { .. });
            let spent = counters.is_spent(rule.times) && !a.flap.gone;
            (flaps && !a.flap.done && !spent).then_some(a.flap.next.unwrap_or_default())
        })
    }

    /// The stream is `ctx.age` old: the `flap` rules due turn, and the types whose hidden
    /// names changed (a rule turned, or was removed with the scenario) are served again;
    /// returns the responses that tell the client, each marked with its rule.
    pub(crate) fn on_flap<M: MachineHooks>(
        &mut self,
        ctx: &StreamCtx<'_>,
        machine: &mut M,
    ) -> Vec<M::Response> {
        let mut out = Vec::new();
        for a in 0..self.active.len() {
            let (rule, _) = self.rule(self.active[a].index);
            let Action::Flap { period, .. } = rule.action else {
                continue;
            };
            let after = rule.when.after.unwrap_or_default();
            let cycle = &mut self.active[a].flap;
            let Some(next) = cycle.next else {
                cycle.next = Some(ctx.age.max(after) + period);
                continue;
            };
            if cycle.done || ctx.age < next {
                continue;
            }
            // A stream held up (a hang, a slow client) turns once, not once per missed period.
            let following = next + period;
            cycle.next = Some(match following > ctx.age {
                true => following,
                false => ctx.age + period,
            });
            if cycle.gone {
                cycle.gone = false;
                out.extend(self.show(a, machine, ctx.now));
            } else {
                out.extend(self.remove(ctx, a, machine));
            }
        }
        // What a removed rule hid comes back at once, unmarked: no rule is at work any more.
        let masked: Vec<String> = self.masked.iter().cloned().collect();
        for type_url in masked {
            out.extend(self.mask_type(&type_url, machine, ctx.now));
        }
        out
    }

    /// Hides the names of the active rule `a`, if that tells the client something and a
    /// budget allows: one firing.
    fn remove<M: MachineHooks>(
        &mut self,
        ctx: &StreamCtx<'_>,
        a: usize,
        machine: &mut M,
    ) -> Vec<M::Response> {
        let type_url = self.type_of(a);
        if machine.ledger(&type_url).is_none() {
            // The stream never asked for the type (a per-type stream of another one).
            return Vec::new();
        }
        if !self.reserve(a) {
            self.active[a].flap.done = true;
            return Vec::new();
        }
        self.active[a].flap.gone = true;
        let out = self.mask_type(&type_url, machine, ctx.now);
        let Some(first) = out.first() else {
            // Nothing to tell this stream: no removal, no firing.
            self.rule(self.active[a].index).1.give_back();
            self.active[a].flap.gone = false;
            self.mask_type(&type_url, machine, ctx.now);
            return Vec::new();
        };
        let target = Target {
            type_url,
            nonce: first.nonce().to_string(),
        };
        let mark = self.fire(a, ctx, Some(&target));
        self.mark_all(&out, mark);
        out
    }

    /// Shows the names of the active rule `a` again (its mark on the responses, no firing).
    fn show<M: MachineHooks>(&mut self, a: usize, machine: &mut M, now: Now) -> Vec<M::Response> {
        let out = self.mask_type(&self.type_of(a), machine, now);
        let (rule, _) = self.rule(self.active[a].index);
        let mark = FaultMark {
            rule: std::sync::Arc::from(rule.id.as_str()),
            action: rule.action.name(),
        };
        self.mark_all(&out, mark);
        out
    }

    /// Tells the machine every name of `type_url` the active rules hide now.
    fn mask_type<M: MachineHooks>(
        &mut self,
        type_url: &str,
        machine: &mut M,
        now: Now,
    ) -> Vec<M::Response> {
        let mut globs = Vec::new();
        for a in self.active.iter().filter(|a| a.flap.gone) {
            let (rule, _) = self.rule(a.index);
            if let Action::Flap { names, .. } = &rule.action
                && rule.selector.type_url.as_deref() == Some(type_url)
            {
                globs.extend(names.iter().cloned());
            }
        }
        if globs.is_empty() {
            self.masked.remove(type_url);
        } else {
            self.masked.insert(type_url.to_string());
        }
        machine.mask(type_url, globs, now)
    }

    fn type_of(&self, a: usize) -> String {
        let (rule, _) = self.rule(self.active[a].index);
        let url = rule.selector.type_url.as_deref();
        url.expect("`flap` needs `match.type` (Rule::check)")
            .to_string()
    }

    /// The plan marks `out` with `mark` (see [`FaultStage::plan`]).
    fn mark_all<R: TapResponse>(&mut self, out: &[R], mark: FaultMark) {
        for response in out {
            self.marks
                .push((response.nonce().to_string(), mark.clone()));
        }
    }
}

#[cfg(test)]
mod tests;
