//! The checks judged on every response of the run: a nonce (basic-protocol.4), `Any`s of the
//! response's type (proto.discovery-response.1), no name twice (duplicate-names.1), Delta
//! resource names (resource-names.1), nothing resent that the client holds
//! (resource-update.1), and each type a stream of its own (rpc-services.1).
//!
//! Every [`Conv`] judges each response it reads and files a finding against the sentence it
//! breaks; these checks add their own exchange, and their verdict takes in every finding of the
//! run (they run last for that).

use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER};

use super::{Ctx, Sent, Step, fail, judged, short};
use crate::check::case::ROOT_TYPES;
use crate::check::conversation::{Conv, sentence};
use crate::check::garbage;
use crate::check::probe::Gone;
use crate::check::report::Outcome;

/// A type URL no server knows.
pub(super) const UNKNOWN_TYPE: &str = "type.googleapis.com/xdsloop.check.Unknown";

/// The sentences whose findings check `id` takes in.
pub(crate) fn collects(id: &str) -> &'static [&'static str] {
    match id {
        "basic-protocol.4" => &[sentence::NONCE, sentence::DELTA_NONCE],
        "proto.discovery-response.1" => &[sentence::ANY_TYPE, sentence::DELTA_ANY_TYPE],
        "duplicate-names.1" => &[sentence::DUPLICATE],
        "resource-names.1" => &[sentence::DELTA_NAME],
        "resource-update.1" => &[sentence::NEEDLESS],
        "rpc-services.1" => &[sentence::SEPARATE],
        _ => &[],
    }
}

/// The names a case asks for: the wildcard for LDS/CDS, else up to two that exist.
fn interest<'c>(ctx: &'c Ctx, conv: &Conv) -> Step<Vec<&'c str>> {
    let case = conv.case();
    if ROOT_TYPES.contains(&case.type_url) {
        return Ok(Vec::new());
    }
    ctx.names(case, 2).or_else(|_| ctx.names(case, 1))
}

/// A plain exchange, for the responses it brings: the type's resources, then a name that
/// does not exist added (a second response where the server answers it).
pub(super) async fn session(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let names = interest(ctx, conv)?;
    let held = ctx.ask_for(conv, url, &names).await?;
    let missing = ctx.missing("session");
    let mut more = names.clone();
    more.push(&missing);
    conv.want(url, &more).await.sent("a name more")?;
    let quiet = conv.quiet(ctx.quiet).await;
    Ok(Outcome::Pass(format!(
        "{held}, then {} response(s) after asking a name more",
        quiet.got.len()
    )))
}

pub(super) async fn nothing_resent(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let names = interest(ctx, conv)?;
    // CDS answers are NACKed (the client keeps the last good config): a NACKed version is no
    // more to be resent than an ACKed one.
    let nack = url == CLUSTER;
    if nack {
        conv.nack_next(url);
    }
    let held = ctx.ask_for(conv, url, &names).await?;
    let answer = conv.last(url).cloned();
    let quiet = conv.quiet(ctx.quiet).await;
    // The rejected response sent again as it was: judged here, as a change of interest just
    // before may excuse one repeat in the judgement of every response.
    let again = quiet
        .got
        .iter()
        .find(|s| answer.as_ref().is_some_and(|a| a.same_content(s)));
    if let (true, Some(again)) = (nack, again) {
        return Err(fail(format!(
            "NACKed {held}, the server sent it again: {} (it repeats what the client rejected, with no change asked for)",
            again.shown
        )));
    }
    let answered = if nack { "NACKed" } else { "ACKed" };
    Ok(Outcome::Pass(format!(
        "{answered} {held}; {} more response(s) in {} (each judged)",
        quiet.got.len(),
        humantime::format_duration(ctx.quiet)
    )))
}

pub(super) async fn separate_types(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let eds = ctx.inv.endpoints.first().cloned();
    let held = match &eds {
        Some(a) => ctx.ask_for(conv, ENDPOINT, &[a]).await?,
        None => "nothing".to_string(),
    };
    conv.want(UNKNOWN_TYPE, &[])
        .await
        .sent("the unknown type")?;
    let quiet = conv.quiet(ctx.quiet).await;
    if let Some(gone) = quiet.ended {
        return Err(fail(format!(
            "holding {held}, a request for {UNKNOWN_TYPE} ended the stream: {gone}"
        )));
    }
    conv.want(CLUSTER, &[]).await.sent("cds")?;
    let what = format!(
        "after {UNKNOWN_TYPE}, {} (a type new on this stream) was not answered",
        short(CLUSTER)
    );
    let after_unknown = judged(conv.next(CLUSTER, ctx.timeout).await, what)?;
    let malformed = match garbage::send_malformed(&ctx.target, ctx.timeout).await {
        Gone::Silent(_) => "stayed open".to_string(),
        ended => ended.to_string(),
    };
    if let Err(gone) = conv.want(LISTENER, &[]).await {
        return Err(fail(format!(
            "after a malformed request on another connection ({malformed}), this stream could not ask for lds: {gone}"
        )));
    }
    let what = format!(
        "after a malformed request on another connection ({malformed}), lds (new on this stream) was not answered"
    );
    let after_garbage = judged(conv.next(LISTENER, ctx.timeout).await, what)?;
    Ok(Outcome::Pass(format!(
        "holding {held}: {UNKNOWN_TYPE} got {} response(s), then {}; a malformed request on another connection ({malformed}), then {}",
        quiet.got.len(),
        after_unknown.shown,
        after_garbage.shown
    )))
}
