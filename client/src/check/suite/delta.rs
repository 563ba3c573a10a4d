//! Delta subscriptions: a phantom unsubscription is harmless (delta-unsubscribe.4); giving up
//! a name named beside the wildcard is answered (delta-unsubscribe.6); a name that does not
//! exist is reported removed (delta-resource-not-existed.1).

use xdsloop_proto::discovery::WILDCARD;

use super::answers::all_sent;
use super::{Ctx, Sent, Step, judged, setup, short};
use crate::check::conversation::Conv;
use crate::check::report::Outcome;

pub(super) async fn phantom_unsubscribe(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let names = ctx.names(conv.case(), 2)?;
    let (a, b) = (names[0], names[1]);
    let kind = short(url);
    let phantom = ctx.missing("phantom");
    ctx.ask_for(conv, url, &[a]).await?;
    conv.change(url, &[], &[&phantom])
        .await
        .sent("the phantom unsubscription")?;
    conv.change(url, &[b], &[]).await.sent("subscribing b")?;
    let what = format!(
        "{kind} holding {a}, -[{phantom}] (never subscribed), then +[{b}]: {b} was not sent"
    );
    let sent = judged(all_sent(ctx, conv, url, &[b]).await, what)?;
    Ok(Outcome::Pass(format!(
        "{kind} -[{phantom}] (never subscribed) changed nothing: +[{b}] then got {}",
        sent.join("; ")
    )))
}

pub(super) async fn wildcard_unsubscribe(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let a = ctx.names(conv.case(), 1)?[0];
    let kind = short(url);
    let ghost = ctx.missing("ghost");
    conv.change(url, &[WILDCARD, a, &ghost], &[])
        .await
        .sent("[*, a, ghost]")?;
    let what = format!("{kind} +[*, {a}, {ghost}]");
    setup(conv.until(url, ctx.timeout, |s| s.has(a)).await, &what)?;
    conv.change(url, &[], &[a]).await.sent("-[a]")?;
    let what = format!(
        "{kind} *, {a} and {ghost} subscribed, then -[{a}]: {a} (covered by the wildcard) was not sent again"
    );
    let kept = judged(conv.until(url, ctx.timeout, |s| s.has(a)).await, what)?;
    conv.change(url, &[], &[&ghost]).await.sent("-[ghost]")?;
    let what =
        format!("then -[{ghost}] (which does not exist): it was not reported in removed_resources");
    let removed = judged(
        conv.until(url, ctx.timeout, |s| s.removes(&ghost)).await,
        what,
    )?;
    Ok(Outcome::Pass(format!(
        "-[{a}] under the wildcard: {}; -[{ghost}]: {}",
        kept.shown, removed.shown
    )))
}

pub(super) async fn missing_removed(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let kind = short(url);
    let missing = ctx.missing("absent");
    conv.want(url, &[&missing]).await.sent("+[missing]")?;
    let what = format!(
        "{kind} +[{missing}] (a name that does not exist) was not answered with it in removed_resources"
    );
    let seen = judged(
        conv.until(url, ctx.timeout, |s| s.removes(&missing)).await,
        what,
    )?;
    Ok(Outcome::Pass(format!(
        "{kind} +[{missing}]: {}",
        seen.shown
    )))
}
