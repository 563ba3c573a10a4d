//! The checks themselves: each scripts, for one case of its matrix, the wire exchange its row
//! in [`super::catalog::CHECKS`] describes, and returns an [`Outcome`] with its evidence.
//!
//! Conventions, so that one fault fails the one check whose sentence it breaks:
//! - every case has a stream ([`Conv`]) and a connection of its own, and ends with a quiet
//!   window in which whatever else the server sends is judged (by the wire-wide checks);
//! - a step this check's sentence requires, left undone, is a FAIL ([`judged`]); a step only
//!   needed to set the case up, left undone, is a SKIP naming the check that judges it
//!   ([`setup`]); a wait another fault disturbed (a response under another type URL) is a
//!   SKIP saying so;
//! - a missing prerequisite (too few resources, no `--fixtures`) is a SKIP saying what is
//!   needed.

mod answers;
mod delta;
mod edit;
mod edit_delta;
mod large;
mod order;
mod resources;
mod stale;
mod wildcard;
pub(super) mod wire;

use std::fmt::Display;
use std::time::Duration;

use xdsloop_proto::Codec;
use xdsloop_proto::Variant;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use super::case::Case;
use super::catalog::Check;
use super::conversation::{Conv, Findings, Miss};
use super::fixtures::{Fixtures, PREFIX};
use super::inventory::Inventory;
use super::probe::{Gone, Service, Target};
use super::report::Outcome;

/// Everything a check may use.
pub(super) struct Ctx {
    pub target: Target,
    pub codec: Codec,
    pub inv: Inventory,
    /// How long to wait for a response any conforming server sends at once.
    pub timeout: Duration,
    /// How long to watch for something that must not arrive.
    pub quiet: Duration,
    /// How long to wait for a fixture edit to be pushed.
    pub push_timeout: Duration,
    /// This run's id, part of every name the suite makes up.
    pub run: String,
    /// `None` when the directory is not given, or is set aside as not the server's.
    pub fixtures: Option<Fixtures>,
    /// Why the server does not serve Delta (the Delta cases SKIP), or `None`.
    pub no_delta: Option<String>,
    /// Why the server does not serve the per-type services (those cases SKIP), or `None`.
    pub no_services: Option<String>,
    /// `--fixtures` names a directory the server does not serve (said once, as a NOTE).
    pub fixtures_unserved: bool,
    /// What every response of the run broke, for the wire-wide checks.
    pub findings: Findings,
    /// The check running now (findings name it).
    pub check: &'static str,
}

impl Ctx {
    /// A resource name that exists nowhere: `xdsloop-check-<run>-missing-<what>`.
    pub(super) fn missing(&self, what: &str) -> String {
        format!("{PREFIX}{}-missing-{what}", self.run)
    }

    /// A stream for `case`, on a connection of its own.
    pub(super) fn conv(&self, case: Case) -> Conv {
        Conv::open(&self.target, &self.codec, case, self.check, &self.findings)
    }

    /// The first `n` names of `case`'s type that the server serves, or a SKIP saying so.
    pub(super) fn names(&self, case: Case, n: usize) -> Step<Vec<&str>> {
        self.inv.names(case.type_url, n).map_err(skip)
    }

    /// A cap on one case's run, far above what its own bounded waits add up to.
    fn cap(&self) -> Duration {
        self.push_timeout * 6 + (self.timeout + self.quiet) * 12
    }
}

/// A check's steps: `Err` ends the case early with that outcome.
pub(super) type Step<T> = Result<T, Outcome>;

pub(super) fn fail(text: impl Into<String>) -> Outcome {
    Outcome::Fail(text.into())
}

pub(super) fn skip(text: impl Into<String>) -> Outcome {
    Outcome::Skip(text.into())
}

/// The stream ended while sending: nothing was judged.
fn gone(what: &str, gone: &Gone) -> Outcome {
    skip(format!("set-up: {what}: {gone}"))
}

/// A step this case's sentence requires: not done is a FAIL, unless something another check
/// judges disturbed the wait (then a SKIP saying what).
pub(super) fn judged<T>(result: Result<T, Miss>, what: impl Display) -> Step<T> {
    result.map_err(|miss| match &miss.disturbed {
        Some(why) => skip(format!("{what}: not judged: {why}")),
        None => fail(format!("{what}: {miss}")),
    })
}

/// A step that only sets the case up: not done is a SKIP (the check whose sentence requires
/// the step judges it).
pub(super) fn setup<T>(result: Result<T, Miss>, what: impl Display) -> Step<T> {
    result.map_err(|miss| {
        let why = miss.disturbed.clone().unwrap_or_else(|| miss.to_string());
        skip(format!("set-up: {what}: {why}"))
    })
}

/// A send that failed because the stream ended: a set-up failure.
pub(super) trait Sent {
    fn sent(self, what: &str) -> Step<()>;
}

impl Sent for Result<(), Gone> {
    fn sent(self, what: &str) -> Step<()> {
        self.map_err(|g| gone(what, &g))
    }
}

pub(super) fn short(url: &str) -> &str {
    super::describe::short(url)
}

pub(super) fn list<S: AsRef<str>>(names: &[S]) -> String {
    super::describe::list(names)
}

/// Runs every case of `check` and returns each case's outcome, in matrix order. Cases run
/// at once, each on its own connection, unless the check is [`Check::serial`] (an edit is
/// seen by every stream, a malformed request may take every stream down).
pub(super) async fn run(check: &Check, ctx: &mut Ctx) -> Vec<(Case, Outcome)> {
    ctx.check = check.id;
    let cases = check.matrix.cases();
    if check.edits {
        if let Some(why) = edits_unavailable(ctx) {
            return cases.into_iter().map(|c| (c, skip(why))).collect();
        }
        let mut out = Vec::new();
        for case in cases {
            let outcome = match unserved(ctx, case) {
                Some(why) => skip(why),
                None => capped(ctx.cap(), edit_case(check.id, ctx, case)).await,
            };
            out.push((case, outcome));
        }
        return out;
    }
    let ctx = &*ctx;
    if check.serial {
        let mut out = Vec::new();
        for case in cases {
            let outcome = match unserved(ctx, case) {
                Some(why) => skip(why),
                None => capped(ctx.cap(), dispatch(check.id, ctx, case)).await,
            };
            out.push((case, outcome));
        }
        return out;
    }
    let each = cases.iter().map(|&case| async move {
        let outcome = match unserved(ctx, case) {
            Some(why) => skip(why),
            None => capped(ctx.cap(), dispatch(check.id, ctx, case)).await,
        };
        (case, outcome)
    });
    futures::future::join_all(each).await
}

fn edits_unavailable(ctx: &Ctx) -> Option<&'static str> {
    if ctx.fixtures_unserved {
        return Some("--fixtures is probably not the directory the server serves (see the NOTE)");
    }
    ctx.fixtures.is_none().then_some(
        "needs --fixtures DIR (the directory the server serves): it proves the rule on fixture edits",
    )
}

/// Why `case` cannot run against this server, if it cannot.
fn unserved(ctx: &Ctx, case: Case) -> Option<String> {
    if case.variant == Variant::Delta && ctx.no_delta.is_some() {
        return Some("Delta not served (see the NOTE)".to_string());
    }
    if case.service != Service::Ads && ctx.no_services.is_some() {
        return Some("the per-type services are not served (see the NOTE)".to_string());
    }
    None
}

async fn capped(cap: Duration, script: impl Future<Output = Step<Outcome>>) -> Outcome {
    match tokio::time::timeout(cap, script).await {
        Ok(Ok(outcome) | Err(outcome)) => outcome,
        Err(_) => fail(format!(
            "the case did not finish within {}",
            humantime::format_duration(cap)
        )),
    }
}

/// One case of a check that edits fixtures, its streams finished with a quiet window, its
/// file removed.
async fn edit_case(id: &str, ctx: &mut Ctx, case: Case) -> Step<Outcome> {
    let stem = format!(
        "{}-{}",
        id.replace(['.', '/'], "-"),
        case.to_string().replace(' ', "-")
    );
    let outcome = match id {
        "ack-nack.1" => edit::edit_versioned(ctx, case, &stem).await,
        "resource-not-existed.3" => edit::created_pushed(ctx, case, &stem).await,
        "grouping.3" => edit::full_state_pushed(ctx, case, &stem).await,
        "proto.delta-request.4" => edit_delta::delta_changes(ctx, case, &stem).await,
        "eventual-consistency.2" => order::make_before_break(ctx, case, &stem).await,
        "xdsloop.large-responses" => large::large(ctx, case, &stem).await,
        "xdsloop.bad-edit-keeps-last-good" => edit::keeps_last_good(ctx, case, &stem).await,
        other => unreachable!("{other} is in the catalog but has no implementation"),
    };
    edit::clean_up(ctx, &stem).await;
    outcome
}

/// One case of a wire-only check, its stream finished with a quiet window.
async fn dispatch(id: &str, ctx: &Ctx, case: Case) -> Step<Outcome> {
    let mut conv = ctx.conv(case);
    let c = &mut conv;
    let outcome = match id {
        "basic-protocol.1" => answers::first_answered(ctx, c).await,
        "resource-hints.2" => answers::named_supplied(ctx, c).await,
        "resource-hints.4" => answers::widening_answered(ctx, c).await,
        "resource-hints.4/re-added" => answers::re_added_sent(ctx, c).await,
        "ack-nack.3" => answers::reconnect_answered(ctx, c).await,
        "proto.delta-request.5" => answers::stale_declared_sent(ctx, c).await,
        "resource-warming.1" => answers::warming_answered(ctx, c).await,
        "resource-hints.7" => wildcard::legacy_is_star(ctx, c).await,
        "resource-hints.8" => wildcard::empty_unsubscribes(ctx, c).await,
        "resource-hints.11" => wildcard::star_dropped(ctx, c).await,
        "grouping.2" => wildcard::full_state(ctx, c).await,
        "resource-updates.3" => stale::stale_ignored(ctx, c).await,
        "delta.6" => stale::delta_stale_honoured(ctx, c).await,
        "delta-unsubscribe.4" => delta::phantom_unsubscribe(ctx, c).await,
        "delta-unsubscribe.6" => delta::wildcard_unsubscribe(ctx, c).await,
        "delta-resource-not-existed.1" => delta::missing_removed(ctx, c).await,
        "rpc-services.1" => wire::separate_types(ctx, c).await,
        "resource-update.1" => wire::nothing_resent(ctx, c).await,
        "basic-protocol.4"
        | "proto.discovery-response.1"
        | "duplicate-names.1"
        | "resource-names.1" => wire::session(ctx, c).await,
        other => unreachable!("{other} is in the catalog but has no implementation"),
    };
    conv.finish(ctx.quiet).await;
    outcome
}

/// The existing names of `url` the inventory holds, for the scripts that need the type's
/// names by URL rather than by case.
pub(super) fn type_names(ctx: &Ctx, url: &str) -> Vec<String> {
    match url {
        CLUSTER => ctx.inv.clusters.clone(),
        LISTENER => ctx.inv.listeners.clone(),
        ENDPOINT => ctx.inv.endpoints.clone(),
        ROUTE => ctx.inv.routes.clone(),
        _ => Vec::new(),
    }
}

/// The sentences whose findings, from every stream of the run, check `id` takes in.
pub(super) fn collects(id: &str) -> &'static [&'static str] {
    wire::collects(id)
}
