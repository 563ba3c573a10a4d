//! Planning one response: every per-response rule that applies, in file order, changes it or
//! what happens around it; the first stream-ending one ends the plan.

use std::ops::ControlFlow;

use super::{FaultStage, StreamCtx, StreamEnd, Target, WireStep};
use crate::faults::select::{self, Moment};
use crate::{
    faults::scenario::model::{Action, Place, ResetScope, glob_matches},
    protocol::{
        facts::TapResponse,
        wire::{Edit, FaultMark, WireFate, WireResponse},
    },
};

/// The step a stream-level action takes.
pub(super) fn stream_step<R>(
    action: &Action,
    mark: FaultMark,
    target: Option<Target>,
) -> WireStep<R> {
    let end = match action {
        Action::Hang { duration } => {
            return WireStep::Hang {
                duration: *duration,
                mark,
            };
        }
        Action::Close { code, message } => StreamEnd::Close {
            code: *code,
            message: message.clone(),
        },
        Action::Reset {
            scope: ResetScope::Stream,
        } => StreamEnd::ResetStream,
        Action::Reset {
            scope: ResetScope::Connection,
        } => StreamEnd::ResetConnection,
        other => unreachable!("{} is not stream-level", other.name()),
    };
    WireStep::End { end, target, mark }
}

/// Plans `response` into `steps`; `Break` when the stream ends here.
pub(super) fn plan_one<R: TapResponse + WireResponse>(
    stage: &mut FaultStage,
    ctx: &StreamCtx<'_>,
    mut response: R,
    mut mark: Option<FaultMark>,
    steps: &mut Vec<WireStep<R>>,
) -> ControlFlow<()> {
    let type_url = response.type_url().to_string();
    let planned = response.nonce().to_string();
    let (n, previous) = {
        let track = stage.types.entry(type_url.clone()).or_default();
        track.0 += 1;
        (track.0, track.1.clone())
    };
    if let Some(i) = stage.marks.iter().position(|(nonce, _)| *nonce == planned) {
        mark = Some(stage.marks.swap_remove(i).1);
    }
    let mut fate = None;
    let target = Target {
        type_url: type_url.clone(),
        nonce: planned.clone(),
    };
    for a in 0..stage.active.len() {
        let (rule, _) = stage.rule(stage.active[a].index);
        let moment = Moment {
            n,
            version: response.version(),
            age: ctx.age,
            armed: stage.active[a].armed,
        };
        if !select::is_per_response(rule)
            || !select::selects_type(&rule.selector, &type_url)
            || !select::at_moment(&rule.when, moment)
        {
            continue;
        }
        let action = rule.action.clone();
        if !applicable(&action, &response, previous.as_deref()) {
            stage.skipped(a);
            continue;
        }
        let Some(fired) = stage.take(a, ctx, Some(&target)) else {
            continue;
        };
        match act(
            &action,
            &mut response,
            (previous.as_deref(), &target),
            fired.clone(),
            steps,
        ) {
            Outcome::Changed(f) => {
                if matches!(f, WireFate::Withheld { .. }) {
                    stage.withheld.insert(type_url.clone());
                }
                fate = Some(f);
            }
            Outcome::Dropped => {
                steps.push(WireStep::Drop {
                    target,
                    mark: fired,
                });
                return ControlFlow::Continue(());
            }
            Outcome::Ended => {
                steps.push(stream_step(&action, fired, Some(target)));
                return ControlFlow::Break(());
            }
            Outcome::Around => {}
        }
        mark = Some(fired);
    }
    let wire_nonce = response.nonce().to_string();
    stage.types.entry(type_url).or_default().1 = Some(wire_nonce.clone());
    let fate = match (&mark, fate) {
        (Some(_), None) => Some(WireFate::Sent { nonce: wire_nonce }),
        (_, fate) => fate,
    };
    steps.push(WireStep::Send {
        response,
        mark,
        fate: fate.map(|f| (planned, f)),
    });
    ControlFlow::Continue(())
}

/// Whether `action` has something to act on in `response`.
fn applicable<R: WireResponse>(action: &Action, response: &R, previous: Option<&str>) -> bool {
    match action {
        Action::StaleNonce => previous.is_some(),
        Action::Duplicate { resource } | Action::Corrupt { resource } => {
            response.position(resource.as_deref()).is_some()
        }
        Action::WrongTypeUrl {
            place: Place::Resource,
            ..
        } => response.position(None).is_some(),
        Action::Withhold { names } => !response.positions(&picks(names)).is_empty(),
        _ => true,
    }
}

/// Whether a resource name matches one of `globs`.
fn picks(globs: &[String]) -> impl Fn(&str) -> bool + '_ {
    move |name| globs.iter().any(|g| glob_matches(g, name))
}

enum Outcome {
    /// The response changed; the machine is told this.
    Changed(WireFate),
    Dropped,
    /// The stream ends instead.
    Ended,
    /// Something happens around the response (a hang), which still goes out.
    Around,
}

/// `at`: the previous nonce of the response's type on the stream, and the response as planned.
fn act<R: WireResponse>(
    action: &Action,
    response: &mut R,
    (previous, planned): (Option<&str>, &Target),
    mark: FaultMark,
    steps: &mut Vec<WireStep<R>>,
) -> Outcome {
    let mutated = |kind| Outcome::Changed(WireFate::Mutated { kind });
    match action {
        Action::Delay(by) => {
            steps.push(WireStep::Wait {
                by: *by,
                mark,
                target: planned.clone(),
            });
            Outcome::Changed(WireFate::Delayed { by: *by })
        }
        Action::Drop => Outcome::Dropped,
        Action::Close { .. } | Action::Reset { .. } => Outcome::Ended,
        Action::Hang { duration } => {
            steps.push(WireStep::Hang {
                duration: *duration,
                mark,
            });
            Outcome::Around
        }
        Action::StaleNonce => {
            let nonce = previous.unwrap_or_default().to_string();
            response.set_nonce(&nonce);
            Outcome::Changed(WireFate::Sent { nonce })
        }
        Action::WrongTypeUrl { place, type_url } => {
            if *place == Place::Resource {
                response.edit(Edit::ResourceTypeUrl(0, type_url));
                return mutated("wrong_type_url");
            }
            response.edit(Edit::ResponseTypeUrl(type_url));
            // The client files it under the type it carries: so does the ledger.
            Outcome::Changed(WireFate::Retyped {
                from: planned.type_url.clone(),
                to: type_url.clone(),
            })
        }
        Action::Duplicate { resource } | Action::Corrupt { resource } => {
            let i = response.position(resource.as_deref()).unwrap_or_default();
            let edit = match action {
                Action::Duplicate { .. } => Edit::Duplicate(i),
                _ => Edit::Corrupt(i),
            };
            response.edit(edit);
            mutated(action.name())
        }
        Action::Oversize { bytes } => {
            response.edit(Edit::PadTo(*bytes));
            mutated("oversize")
        }
        Action::Withhold { names } => {
            let gone = response.positions(&picks(names));
            let names = gone
                .iter()
                .filter_map(|&i| response.name_at(i))
                .map(str::to_string);
            let names = names.collect();
            response.edit(Edit::Remove(&gone));
            Outcome::Changed(WireFate::Withheld { names })
        }
        Action::Reorder | Action::IgnoreAcks { .. } | Action::Flap { .. } => Outcome::Around,
        // Never on a stream's stage (`select::acts_on`).
        Action::Outage { .. } => Outcome::Around,
    }
}
