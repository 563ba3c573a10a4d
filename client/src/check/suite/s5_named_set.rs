//! S5: a name added to an EDS request is sent, also a name sent before and asked for again.
//!
//! In SotW, EDS may come a resource per response, as in Delta ("Grouping Resources into
//! Responses"): the answer to a widened request must hold the added name; the names held
//! before may come again or not.

use xdsloop_proto::discovery::DiscoveryResponse;
use xdsloop_proto::type_url::ENDPOINT;

use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::describe;
use crate::check::probe::{Probe, Sotw};
use crate::check::report::Outcome;

pub(super) async fn named_set(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(2).map_err(skip)?;
    let (a, b) = (names[0].to_string(), names[1].to_string());
    let mut p = ctx.sotw();
    let first = ctx.ask(&mut p, ENDPOINT, &[&a]).await?;
    if !ctx.names(&first).contains(&a) {
        return Err(fail(format!(
            "eds [{a}] was answered without {a}: {}",
            ctx.show(&first)
        )));
    }
    let (version, nonce) = (&first.version_info, &first.nonce);
    p.request(ENDPOINT, &[&a, &b], version, nonce)
        .await
        .or_fail("eds [a, b]")?;
    let holds_b = |r: &DiscoveryResponse| ctx.names(r).contains(&b);
    let (second, before) = p.until(ctx.timeout, holds_b).await.map_err(|(gone, seen)| {
        let seen = if seen.is_empty() {
            String::new()
        } else {
            format!("; sent instead: {}", ctx.show_all(&seen))
        };
        fail(format!(
            "eds [{a}] then [{a}, {b}] (nonce {nonce:?}, the newest): {b} was not sent: {gone}{seen}"
        ))
    })?;
    let mut all = before;
    all.push(second);
    let a_again = all.iter().any(|r| ctx.names(r).contains(&a));
    let how = if a_again {
        format!("{a} and {b}")
    } else {
        format!("{b} alone ({a} unchanged, not resent: EDS may come a resource per response)")
    };
    Ok(Outcome::Pass(format!(
        "eds [{a}] then [{a}, {b}]: sent {how}: {}",
        ctx.show_all(&all)
    )))
}

/// On `p`, which holds EDS [`a`] from `first` (ACKed): narrows to [] (an empty response to
/// that is as correct as none; it is ACKed), then asks for `a` again with the newest nonce
/// received. Returns the answer holding `a` (ACKed) and the nonce the re-add carried.
pub(super) async fn re_add(
    ctx: &Ctx,
    p: &mut Probe<Sotw>,
    first: &DiscoveryResponse,
    a: &str,
) -> Step<(DiscoveryResponse, String)> {
    let (mut version, mut nonce) = (first.version_info.clone(), first.nonce.clone());
    p.request(ENDPOINT, &[], &version, &nonce)
        .await
        .or_fail("eds []")?;
    let quiet = p.quiet(ctx.quiet).await;
    if let Some(gone) = quiet.ended {
        return Err(fail(format!("after eds [] (unsubscribing {a}): {gone}")));
    }
    for r in quiet.got.iter().filter(|r| r.type_url == ENDPOINT) {
        p.ack(r).await.or_fail("ACK of the answer to eds []")?;
        (version, nonce) = (r.version_info.clone(), r.nonce.clone());
    }
    let holds_a = |r: &DiscoveryResponse| ctx.names(r).iter().any(|n| n == a);
    let mut seen = Vec::new();
    // A second try only when an answer to [] came after the quiet window: the re-add then
    // carried a nonce that had become stale, and was rightly ignored.
    for _ in 0..2 {
        p.request(ENDPOINT, &[a], &version, &nonce)
            .await
            .or_fail("eds [a]")?;
        match p.until(ctx.timeout, holds_a).await {
            Ok((again, _)) => {
                p.ack(&again).await.or_fail("ACK")?;
                return Ok((again, nonce));
            }
            Err((gone, late)) => {
                let Some(last) = late.iter().rev().find(|r| r.type_url == ENDPOINT) else {
                    seen.extend(late);
                    return Err(not_again(ctx, a, &nonce, &gone.to_string(), &seen));
                };
                // The next request, [a] with this nonce, is also its ACK.
                (version, nonce) = (last.version_info.clone(), last.nonce.clone());
                seen.extend(late);
            }
        }
    }
    Err(not_again(ctx, a, &nonce, "not answered", &seen))
}

fn not_again(ctx: &Ctx, a: &str, nonce: &str, gone: &str, seen: &[DiscoveryResponse]) -> Outcome {
    let seen = if seen.is_empty() {
        String::new()
    } else {
        format!("; sent instead: {}", ctx.show_all(seen))
    };
    fail(format!(
        "eds [{a}], then [], then [{a}] again (nonce {nonce:?}, the newest): {a} was not sent again: {gone}{seen}"
    ))
}

pub(super) async fn re_added_sent(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(1).map_err(skip)?;
    let a = names[0].to_string();
    let mut p = ctx.sotw();
    let first = ctx.ask(&mut p, ENDPOINT, &[&a]).await?;
    let (again, nonce) = re_add(ctx, &mut p, &first, &a).await?;
    Ok(Outcome::Pass(format!(
        "eds [{a}] ({}), then [], then [{a}] with nonce {nonce:?}: sent again as {}",
        describe::sotw(&ctx.codec, &first),
        ctx.show(&again)
    )))
}
