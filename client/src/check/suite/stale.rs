//! Nonces and stale requests: SotW, a request whose nonce a newer response superseded gets no
//! response (resource-updates.3); Delta, its subscription changes count all the same (delta.6).
//!
//! To have two responses of one subscription without changing it, a case narrows to nothing
//! and asks for `a` again (what resource-hints.4 requires an answer to), always with the
//! newest nonce received. The stale request then adds `b`: an answer holding `b` can only be
//! the stale request's, since the client's own ACKs keep asking for `a` alone.

use xdsloop_proto::Variant;
use xdsloop_proto::discovery::DeltaDiscoveryRequest;

use super::answers::all_sent;
use super::{Ctx, Sent, Step, fail, judged, setup, short, skip};
use crate::check::conversation::Conv;
use crate::check::report::Outcome;

/// On `conv`, holding nothing of `url` yet: two answers for `a`; returns their nonces and the
/// first one's version.
async fn two_nonces(
    ctx: &Ctx,
    conv: &mut Conv,
    url: &str,
    a: &str,
) -> Step<(String, String, String)> {
    ctx.ask_for(conv, url, &[a]).await?;
    let first = conv.last(url).cloned().expect("answered");
    conv.want(url, &[]).await.sent("narrowing")?;
    conv.want(url, &[a]).await.sent("asking again")?;
    setup(
        all_sent(ctx, conv, url, &[a]).await,
        format!("{} [{a}] asked again", short(url)),
    )?;
    let second = conv.last(url).cloned().expect("answered");
    if second.nonce == first.nonce {
        return Err(skip(format!(
            "not judged: the server sent nonce {:?} twice ({}; {}): basic-protocol.4 judges that",
            first.nonce, first.shown, second.shown
        )));
    }
    Ok((first.nonce, second.nonce, first.version))
}

pub(super) async fn stale_ignored(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    let url = conv.case().type_url;
    let names = ctx.names(conv.case(), 2)?;
    let (a, b) = (names[0], names[1]);
    let kind = short(url);
    let (n1, n2, v1) = two_nonces(ctx, conv, url, a).await?;
    conv.raw(url, &[a, b], &v1, &n1)
        .await
        .sent("the stale request")?;
    let quiet = conv.quiet(ctx.quiet).await;
    if let Some(answer) = quiet.got.iter().find(|s| s.type_url == url && s.has(b)) {
        return Err(fail(format!(
            "request {kind} [{a}, {b}] with stale nonce {n1:?} (latest {n2:?}) was answered: {}",
            answer.shown
        )));
    }
    if let Some(gone) = quiet.ended {
        return Err(skip(format!("not judged: after the stale request: {gone}")));
    }
    conv.want(url, &[a, b]).await.sent("the control request")?;
    let control = all_sent(ctx, conv, url, &[b]).await.map_err(|miss| {
        skip(format!(
            "inconclusive: {kind} [{a}, {b}] with the latest nonce was not answered either ({miss}): resource-hints.4 judges that"
        ))
    })?;
    Ok(Outcome::Pass(format!(
        "{kind} [{a}, {b}] with stale nonce {n1:?} got no response; with the latest it got {}",
        control.join("; ")
    )))
}

pub(super) async fn delta_stale_honoured(ctx: &Ctx, conv: &mut Conv) -> Step<Outcome> {
    debug_assert_eq!(conv.case().variant, Variant::Delta);
    let url = conv.case().type_url;
    let names = ctx.names(conv.case(), 2)?;
    let (a, b) = (names[0], names[1]);
    let kind = short(url);
    let (n1, n2, _) = two_nonces(ctx, conv, url, a).await?;
    let stale = DeltaDiscoveryRequest {
        type_url: url.to_string(),
        resource_names_subscribe: vec![b.to_string()],
        response_nonce: n1.clone(),
        ..Default::default()
    };
    conv.raw_delta(stale).await.sent("the stale request")?;
    let what = format!(
        "{kind} +[{b}] with stale nonce {n1:?} (latest {n2:?}): the subscription was not honoured, {b} was not sent"
    );
    let sent = judged(all_sent(ctx, conv, url, &[b]).await, what)?;
    Ok(Outcome::Pass(format!(
        "{kind} +[{b}] with stale nonce {n1:?} (latest {n2:?}) was honoured: {}",
        sent.join("; ")
    )))
}
