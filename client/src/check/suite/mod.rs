//! The checks themselves, one module per rule; each scripts the wire exchange of its row in
//! [`super::catalog::CHECKS`] and returns an [`Outcome`] with its evidence.
//!
//! Conventions: a silence or a stream ended where any conforming server answers is a FAIL
//! naming what was asked; a missing prerequisite (too few resources, no `--fixtures`) is a
//! SKIP saying what is needed. Every response a check receives in the normal course is
//! ACKed, as a correct client would.

mod edit;
mod edit_delta;
mod resources;
mod s10_delta_unsubscribe;
mod s11_make_before_break;
mod s12_isolation;
mod s13_large_responses;
mod s1_nonce_and_type_url;
mod s3_no_resend;
mod s4_stale_nonce;
mod s5_named_set;
mod s6_wildcard;
mod s7_types_independent;
mod s8_delta_fields;
mod s9_initial_versions;

use std::fmt::Display;
use std::time::Duration;

use xdsloop_proto::Codec;
use xdsloop_proto::discovery::DiscoveryResponse;

use super::catalog::Check;
use super::describe;
use super::fixtures::{Fixtures, PREFIX};
use super::inventory::Inventory;
use super::probe::{Delta, Gone, Probe, Sotw, Target};
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
    /// Why the server does not serve Delta (the Delta checks SKIP), or `None`.
    pub no_delta: Option<String>,
    /// `--fixtures` names a directory the server does not serve (said once, as a NOTE).
    pub fixtures_unserved: bool,
}

impl Ctx {
    /// A resource name that exists nowhere: `xdsloop-check-<run>-missing-<what>`.
    pub(super) fn missing(&self, what: &str) -> String {
        format!("{PREFIX}{}-missing-{what}", self.run)
    }

    pub(super) fn sotw(&self) -> Probe<Sotw> {
        Probe::open(&self.target)
    }

    pub(super) fn delta(&self) -> Probe<Delta> {
        Probe::open(&self.target)
    }

    pub(super) fn names(&self, response: &DiscoveryResponse) -> Vec<String> {
        describe::sotw_names(&self.codec, response)
    }

    pub(super) fn show(&self, response: &DiscoveryResponse) -> String {
        describe::sotw(&self.codec, response)
    }

    pub(super) fn show_all(&self, responses: &[DiscoveryResponse]) -> String {
        describe::sotw_all(&self.codec, responses)
    }

    /// Subscribes on `probe`, waits for the answer and ACKs it.
    pub(super) async fn ask(
        &self,
        probe: &mut Probe<Sotw>,
        type_url: &str,
        names: &[&str],
    ) -> Step<DiscoveryResponse> {
        let what = || format!("{} {}", describe::short(type_url), describe::list(names));
        probe.subscribe(type_url, names).await.or_fail(what())?;
        let response = probe.recv(self.timeout).await.or_fail(what())?;
        probe.ack(&response).await.or_fail(what())?;
        Ok(response)
    }

    /// A cap on one check's run, far above what its own bounded waits add up to.
    fn cap(&self) -> Duration {
        self.push_timeout * 6 + (self.timeout + self.quiet) * 12
    }
}

/// A check's steps: `Err` ends the check early with that outcome.
pub(super) type Step<T> = Result<T, Outcome>;

pub(super) fn fail(text: impl Into<String>) -> Outcome {
    Outcome::Fail(text.into())
}

pub(super) fn skip(text: impl Into<String>) -> Outcome {
    Outcome::Skip(text.into())
}

/// Turns a missing response into a FAIL that says what was asked.
pub(super) trait OrFail<T> {
    fn or_fail(self, what: impl Display) -> Step<T>;
}

impl<T> OrFail<T> for Result<T, Gone> {
    fn or_fail(self, what: impl Display) -> Step<T> {
        self.map_err(|gone| fail(format!("{what}: {gone}")))
    }
}

/// Runs one check; checks that edit fixtures SKIP without a `--fixtures` directory the
/// server serves, Delta checks against a server that does not serve Delta.
pub(super) async fn run(check: Check, ctx: &mut Ctx) -> Outcome {
    if check.delta && ctx.no_delta.is_some() {
        return skip("Delta not served (see the NOTE)");
    }
    if check.edits && ctx.fixtures_unserved {
        return skip("--fixtures is probably not the directory the server serves (see the NOTE)");
    }
    if check.edits && ctx.fixtures.is_none() {
        return skip(
            "needs --fixtures DIR (the directory the server serves): it proves the rule on fixture edits",
        );
    }
    let cap = ctx.cap();
    match tokio::time::timeout(cap, dispatch(check.id, ctx)).await {
        Ok(Ok(outcome) | Err(outcome)) => outcome,
        Err(_) => fail(format!(
            "the check did not finish within {}",
            humantime::format_duration(cap)
        )),
    }
}

async fn dispatch(id: &str, ctx: &mut Ctx) -> Step<Outcome> {
    match id {
        "S1.nonce-fresh" => s1_nonce_and_type_url::nonce_fresh(ctx).await,
        "S1.type-url" => s1_nonce_and_type_url::type_url(ctx).await,
        "S3.no-resend-after-ack" => s3_no_resend::no_resend_after_ack(ctx).await,
        "S3.no-resend-after-nack" => s3_no_resend::no_resend_after_nack(ctx).await,
        "S4.stale-nonce-ignored" => s4_stale_nonce::stale_nonce_ignored(ctx).await,
        "S5.named-set" => s5_named_set::named_set(ctx).await,
        "S5.re-added-sent" => s5_named_set::re_added_sent(ctx).await,
        "S6.wildcard" => s6_wildcard::wildcard(ctx).await,
        "S6.empty-unsubscribes" => s6_wildcard::empty_unsubscribes(ctx).await,
        "S7.types-independent" => s7_types_independent::types_independent(ctx).await,
        "S8.delta-fields" => s8_delta_fields::delta_fields(ctx).await,
        "S8.delta-only-new" => s8_delta_fields::delta_only_new(ctx).await,
        "S8.delta-missing-removed" => s8_delta_fields::delta_missing_removed(ctx).await,
        "S9.initial-versions" => s9_initial_versions::initial_versions(ctx).await,
        "S9.resubscribe-answered" => s9_initial_versions::resubscribe_answered(ctx).await,
        "S9.stale-version-sent" => s9_initial_versions::stale_version_sent(ctx).await,
        "S12.unknown-type" => s12_isolation::unknown_type(ctx).await,
        "S12.malformed-isolated" => s12_isolation::malformed_isolated(ctx).await,
        "S13.large" => s13_large_responses::large(ctx).await,
        "FX.push-on-edit" => edit::push_on_edit(ctx).await,
        "FX.nack-then-change" => edit::nack_then_change(ctx).await,
        "FX.bad-edit-keeps-last-good" => edit::bad_edit_keeps_last_good(ctx).await,
        "S11.make-before-break" => s11_make_before_break::make_before_break(ctx).await,
        "S10.delta-unsubscribe" => s10_delta_unsubscribe::delta_unsubscribe(ctx).await,
        "FX.delta-changes" => edit_delta::delta_changes(ctx).await,
        other => unreachable!("{other} is in the catalog but has no implementation"),
    }
}
