//! S4: a SotW request whose nonce is not the latest sent for its type is stale: no response.
//!
//! To have two nonces of one EDS subscription without changing it, the suite narrows to []
//! and asks for `a` again (S5.re-added-sent), always echoing the newest nonce it received
//! (a server may answer [] with an empty response). The stale request then adds a name,
//! answered if the server honoured it. The control sends the same with the newest nonce and
//! must be answered, which shows the stale one would have been.

use xdsloop_proto::type_url::ENDPOINT;

use super::s5_named_set::re_add;
use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::report::Outcome;

pub(super) async fn stale_nonce_ignored(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(1).map_err(skip)?;
    let a = names[0].to_string();
    // With a second real name the control must be answered; a made-up one may not be.
    let b = ctx.inv.endpoints.get(1).cloned();
    let (b, b_exists) = match b {
        Some(b) => (b, true),
        None => (ctx.missing("s4"), false),
    };
    let mut p = ctx.sotw();
    let first = ctx.ask(&mut p, ENDPOINT, &[&a]).await?;
    let (v1, n1) = (first.version_info.clone(), first.nonce.clone());
    let (second, _) = re_add(ctx, &mut p, &first, &a).await?;
    let (v2, n2) = (second.version_info.clone(), second.nonce.clone());
    p.request(ENDPOINT, &[&a, &b], &v1, &n1)
        .await
        .or_fail("eds [a, b]")?;
    let quiet = p.quiet(ctx.quiet).await;
    if !quiet.got.is_empty() {
        return Err(fail(format!(
            "request eds [{a}, {b}] with stale nonce {n1:?} (latest {n2:?}) was answered: {}",
            ctx.show_all(&quiet.got)
        )));
    }
    if let Some(gone) = quiet.ended {
        return Err(fail(format!("after a request with a stale nonce: {gone}")));
    }
    p.request(ENDPOINT, &[&a, &b], &v2, &n2)
        .await
        .or_fail("eds [a, b]")?;
    match p.recv(ctx.timeout).await {
        Ok(control) => Ok(Outcome::Pass(format!(
            "eds [{a}, {b}] with stale nonce {n1:?} got no response; with the latest {n2:?} it got {}",
            ctx.show(&control)
        ))),
        Err(gone) if !b_exists => Err(skip(format!(
            "inconclusive: adding the made-up name {b} is not answered even with the latest nonce ({gone}); needs 2 EDS names (see S5.named-set)"
        ))),
        // Not this rule's failure: the silence to the stale request proves nothing then.
        Err(gone) => Err(skip(format!(
            "inconclusive: eds [{a}, {b}] with the latest nonce {n2:?} (adding {b}) was not answered either ({gone}); see S5.named-set"
        ))),
    }
}
