//! What a list of names means: no names on a fresh type is the wildcard, the same as `*`
//! (resource-hints.7); once names were given, an empty list is no interest at all
//! (resource-hints.8); `[a]` after `[*, a]` drops the wildcard (resource-hints.11); and LDS/CDS
//! answers hold every resource asked for (grouping.2).

use std::collections::BTreeSet;

use xdsloop_proto::Variant;
use xdsloop_proto::discovery::WILDCARD;

use super::{Ctx, Sent, Step, fail, judged, setup, short, skip};
use crate::check::conversation::{Conv, Seen};
use crate::check::report::Outcome;

pub(super) async fn legacy_is_star(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let kind = short(url);
    conv.want(url, &[]).await.sent("no names")?;
    let what = format!("{kind} with no names (a fresh type) was not answered");
    let legacy = judged(conv.next(url, ctx.timeout).await, what)?;
    let mut star = ctx.conv(conv.case());
    star.want(url, &[WILDCARD]).await.sent("[*]")?;
    let explicit = judged(
        star.next(url, ctx.timeout).await,
        format!("{kind} [*] was not answered"),
    );
    star.finish(ctx.quiet).await;
    let explicit = explicit?;
    let names = |s: &crate::check::conversation::Seen| -> BTreeSet<String> {
        s.names().into_iter().map(str::to_string).collect()
    };
    if names(&legacy) != names(&explicit) {
        return Err(fail(format!(
            "{kind} with no names gave {}; {kind} [*] on another stream gave {}",
            legacy.shown, explicit.shown
        )));
    }
    if names(&legacy).is_empty() {
        return Err(skip(format!(
            "inconclusive: the server serves no {kind} resources to this node ({})",
            legacy.shown
        )));
    }
    let mut evidence = format!(
        "{kind} with no names and {kind} [*] both gave {} resources",
        names(&legacy).len()
    );
    if conv.case().variant == Variant::Delta {
        // The wildcard continues and a name is added (resource-hints.14): nothing the wildcard
        // brought is removed. Whether the name is sent again is resource-hints.4's to judge.
        let a = legacy.names()[0].to_string();
        let others: Vec<String> = legacy
            .names()
            .iter()
            .skip(1)
            .map(|n| n.to_string())
            .collect();
        conv.change(url, &[&a], &[]).await.sent("+[a]")?;
        let what = format!("{kind} (wildcard) then +[{a}]: {a} was not sent (resource-hints.4)");
        let added = setup(conv.until(url, ctx.timeout, |s| s.has(&a)).await, what)?;
        let quiet = conv.quiet(ctx.quiet).await;
        let after = std::iter::once(&added).chain(quiet.got.iter());
        let mut after = after.filter(|s| s.type_url == url);
        if let Some((seen, n)) =
            after.find_map(|s| others.iter().find(|n| s.removes(n)).map(|n| (s, n)))
        {
            return Err(fail(format!(
                "{kind} (wildcard) then +[{a}]: {n} was removed, as if the wildcard had ended: {}",
                seen.shown
            )));
        }
        evidence += &format!("; then +[{a}]: {}, nothing removed", added.shown);
    }
    Ok(Outcome::Pass(evidence))
}

pub(super) async fn empty_unsubscribes(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let a = ctx.names(conv.case(), 1)?[0];
    let kind = short(url);
    ctx.ask_for(conv, url, &[a]).await?;
    conv.want(url, &[]).await.sent("unsubscribing")?;
    let quiet = conv.quiet(ctx.quiet).await;
    let step = match conv.case().variant {
        Variant::Sotw => format!("{kind} [{a}] then []"),
        Variant::Delta => format!("{kind} +[{a}] then -[{a}]"),
    };
    // The first response may have been sent before the server read the unsubscription (it
    // crosses it on the wire), and then holds the old interest at most; a later one with
    // resources, or one holding another name, was sent knowing the request.
    let of_type: Vec<_> = quiet.got.iter().filter(|s| s.type_url == url).collect();
    let crossed = |i: usize, s: &Seen| i == 0 && s.names().iter().all(|n| *n == a);
    let late = of_type
        .iter()
        .enumerate()
        .find(|(i, s)| !s.names().is_empty() && !crossed(*i, s))
        .map(|(_, s)| s);
    if let Some(seen) = late {
        return Err(fail(format!(
            "{step} (no interest left), the server sent {}",
            seen.shown
        )));
    }
    if let Some(gone) = quiet.ended {
        return Err(skip(format!("not judged: after {step}: {gone}")));
    }
    Ok(Outcome::Pass(format!(
        "{step}: nothing of the type sent in {}",
        humantime::format_duration(ctx.quiet)
    )))
}

pub(super) async fn star_dropped(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let kind = short(url);
    let names = ctx.names(conv.case(), 3).map_err(|e| match e {
        crate::check::report::Outcome::Skip(why) => {
            skip(format!("{why}: [a, b] must differ from the wildcard's set"))
        }
        other => other,
    })?;
    let (a, b, c) = (names[0], names[1], names[2]);
    ctx.ask_for(conv, url, &[]).await?;
    // Adding a name beside the wildcard is answered (resource-hints.4); wait for it, so that
    // the answer awaited below is the one to [a, b].
    ctx.ask_for(conv, url, &[WILDCARD, a]).await?;
    conv.want(url, &[a]).await.sent("[a]")?;
    conv.want(url, &[a, b]).await.sent("[a, b]")?;
    // Pushes of the wildcard's set may cross the two requests; the answer is the first
    // response with b and without c, and a server keeping the wildcard never sends one.
    let what = format!("{kind} [], [*, {a}], [{a}], [{a}, {b}]: {b} was not sent");
    let answer = match conv
        .until(url, ctx.timeout, |s| s.has(b) && !s.has(c))
        .await
    {
        Ok(answer) => answer,
        Err(miss) => match miss.before.iter().rev().find(|s| s.has(b) && s.has(c)) {
            Some(kept) => {
                return Err(fail(format!(
                    "{kind} [], [*, {a}], [{a}], then [{a}, {b}]: the answer still holds {c}, as if the wildcard had stayed: {}",
                    kept.shown
                )));
            }
            None => return setup(Err(miss), what),
        },
    };
    Ok(Outcome::Pass(format!(
        "{kind} [], [*, {a}], [{a}], [{a}, {b}]: {} (no {c}: the wildcard is gone)",
        answer.shown
    )))
}

pub(super) async fn full_state(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let kind = short(url);
    let names = ctx.names(conv.case(), 2)?;
    let (a, b) = (names[0], names[1]);
    ctx.ask_for(conv, url, &[a]).await?;
    conv.want(url, &[a, b]).await.sent("[a, b]")?;
    let what = format!("{kind} [{a}] then [{a}, {b}]: {b} was not sent");
    let answer = setup(conv.until(url, ctx.timeout, |s| s.has(b)).await, what)?;
    if !answer.has(a) {
        return Err(fail(format!(
            "{kind} [{a}] then [{a}, {b}]: the answer lacks {a}, which the client still asks for (it must hold the full state): {}",
            answer.shown
        )));
    }
    Ok(Outcome::Pass(format!(
        "{kind} [{a}] then [{a}, {b}]: {}",
        answer.shown
    )))
}
