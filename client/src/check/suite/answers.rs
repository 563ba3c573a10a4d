//! Requests that must be answered with what they ask for: a type's first request
//! (basic-protocol.1), named resources that exist (resource-hints.2), names added to a
//! subscription or added again (resource-hints.4, delta-subscribe.3), a new stream that
//! declares what it held (ack-nack.3, proto.delta-request.5), and a parent's children during
//! warming (resource-warming.1).

use std::collections::{BTreeMap, BTreeSet};

use xdsloop_proto::Variant;
use xdsloop_proto::discovery::WILDCARD;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use super::{Ctx, Sent, Step, judged, list, setup, short, skip, type_names};
use crate::check::case::ROOT_TYPES;
use crate::check::conversation::{Conv, Seen};
use crate::check::report::Outcome;

/// Waits until every name of `names` was sent on `conv` (over one response or several: EDS
/// and RDS may come a resource per response); returns what came, shown.
pub(super) async fn all_sent(
    ctx: &Ctx,
    conv: &mut Conv,
    url: &str,
    names: &[&str],
) -> Result<Vec<String>, crate::check::conversation::Miss> {
    let mut missing: BTreeSet<&str> = names.iter().copied().collect();
    let mut shown = Vec::new();
    conv.until(url, ctx.timeout, |seen: &Seen| {
        missing.retain(|n| !seen.has(n));
        shown.push(seen.shown.clone());
        missing.is_empty()
    })
    .await?;
    Ok(shown)
}

pub(super) async fn first_answered(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let names: Vec<&str> = match ROOT_TYPES.contains(&url) {
        true => Vec::new(),
        false => ctx.names(conv.case(), 1)?,
    };
    let what = format!("the first {} request {}", short(url), list(&names));
    conv.want(url, &names).await.sent(&what)?;
    let seen = judged(
        conv.next(url, ctx.timeout).await,
        format!("{what} was not answered"),
    )?;
    Ok(Outcome::Pass(format!(
        "{what} was answered: {}",
        seen.shown
    )))
}

pub(super) async fn named_supplied(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let names = match ctx.names(conv.case(), 2) {
        Ok(two) => two,
        Err(_) => ctx.names(conv.case(), 1)?,
    };
    let what = format!("{} {}", short(url), list(&names));
    conv.want(url, &names).await.sent(&what)?;
    let sent = all_sent(ctx, conv, url, &names).await;
    let sent = judged(sent, format!("{what}: not every named resource was sent"))?;
    Ok(Outcome::Pass(format!("{what}: sent {}", sent.join("; "))))
}

pub(super) async fn widening_answered(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let names = ctx.names(conv.case(), 2)?;
    let (a, b) = (names[0], names[1]);
    let kind = short(url);
    ctx.ask_for(conv, url, &[a]).await?;
    conv.want(url, &[a, b]).await.sent("widening")?;
    let what = match conv.case().variant {
        Variant::Sotw => format!("{kind} [{a}] then [{a}, {b}]: {b} was not sent"),
        Variant::Delta => format!("{kind} +[{a}] then +[{b}]: {b} was not sent"),
    };
    let sent = judged(all_sent(ctx, conv, url, &[b]).await, what)?;
    Ok(Outcome::Pass(format!(
        "{kind} [{a}] then [{a}, {b}]: sent {}",
        sent.join("; ")
    )))
}

pub(super) async fn re_added_sent(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let a = ctx.names(conv.case(), 1)?[0];
    let kind = short(url);
    ctx.ask_for(conv, url, &[a]).await?;
    let mut evidence = Vec::new();
    if conv.case().variant == Variant::Delta {
        // Subscribed and held: subscribing again must still be answered (delta-subscribe.3).
        conv.change(url, &[a], &[])
            .await
            .sent("subscribing again")?;
        let what = format!("{kind} holding {a}, +[{a}] again on the same stream: {a} was not sent");
        let sent = judged(all_sent(ctx, conv, url, &[a]).await, what)?;
        evidence.push(format!("+[{a}] again: {}", sent.join("; ")));
    }
    conv.want(url, &[]).await.sent("narrowing to nothing")?;
    conv.want(url, &[a]).await.sent("adding it again")?;
    let what = format!("{kind} [{a}], then [], then [{a}] again: {a} was not sent again");
    let sent = judged(all_sent(ctx, conv, url, &[a]).await, what)?;
    evidence.push(format!("[{a}], [], [{a}]: {}", sent.join("; ")));
    Ok(Outcome::Pass(evidence.join("; ")))
}

pub(super) async fn reconnect_answered(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let a = ctx.names(conv.case(), 1)?[0];
    let kind = short(url);
    ctx.ask_for(conv, url, &[a]).await?;
    let version = conv
        .last(url)
        .map(|l| l.version.clone())
        .unwrap_or_default();
    let mut fresh = ctx.conv(conv.case());
    fresh
        .resume_sotw(url, &[a], &version)
        .await
        .sent("the new stream's first request")?;
    let what = format!(
        "a new stream asking {kind} [{a}] at version {version:?} (the current one) was not answered"
    );
    let sent = judged(all_sent(ctx, &mut fresh, url, &[a]).await, what);
    fresh.finish(ctx.quiet).await;
    Ok(Outcome::Pass(format!(
        "a new stream asking {kind} [{a}] at version {version:?} got {}",
        sent?.join("; ")
    )))
}

pub(super) async fn stale_declared_sent(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let a = ctx.names(conv.case(), 1)?[0];
    let stale = format!("{}-stale", ctx.missing("version"));
    let held = BTreeMap::from([(a.to_string(), stale.clone())]);
    conv.resume(url, &[a], held)
        .await
        .sent("the first request")?;
    let what = format!(
        "a new stream subscribing {a} and declaring {a}@{stale} (a version it never had): {a} was not sent"
    );
    let sent = judged(all_sent(ctx, conv, url, &[a]).await, what)?;
    Ok(Outcome::Pass(format!(
        "a new stream subscribing {a} and declaring {a}@{stale} got {}",
        sent.join("; ")
    )))
}

pub(super) async fn warming_answered(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let parent = conv.case().type_url;
    let child = if parent == CLUSTER { ENDPOINT } else { ROUTE };
    let children = type_names(ctx, child);
    let children: Vec<&str> = children.iter().take(2).map(String::as_str).collect();
    if children.is_empty() {
        return Err(skip(format!(
            "needs {} names that exist (the server's {} name none that exist)",
            short(child),
            short(parent)
        )));
    }
    let held = ctx.ask_for(conv, parent, &[]).await?;
    conv.want(child, &children).await.sent("the children")?;
    let what = format!(
        "after {held}, {} {} was not answered",
        short(child),
        list(&children)
    );
    let sent = judged(all_sent(ctx, conv, child, &children).await, what)?;
    let _ = LISTENER;
    Ok(Outcome::Pass(format!("after {held}: {}", sent.join("; "))))
}

impl Ctx {
    /// Asks for `names` of `url` and waits until they came (all of them; for no names, any
    /// answer of the type): a set-up step. Returns the answer shown.
    pub(super) async fn ask_for(&self, conv: &mut Conv, url: &str, names: &[&str]) -> Step<String> {
        let what = format!("{} {}", short(url), list(names));
        conv.want(url, names).await.sent(&what)?;
        let named: Vec<&str> = names.iter().copied().filter(|n| *n != WILDCARD).collect();
        let sent = match named.is_empty() {
            true => conv.next(url, self.timeout).await.map(|s| vec![s.shown]),
            false => all_sent(self, conv, url, &named).await,
        };
        Ok(setup(sent, &what)?.join("; "))
    }
}
