//! S12: an unknown type URL or a malformed request never affects other types or streams.
//!
//! After the disturbance the stream must still serve EDS: it narrows to [] and asks for `a`
//! again, which any server must answer (a re-added name is resent, S5).

use xdsloop_proto::discovery::DiscoveryResponse;
use xdsloop_proto::type_url::ENDPOINT;

use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::garbage;
use crate::check::probe::{Gone, Probe, Sotw};
use crate::check::report::Outcome;

/// A type URL no server knows.
pub const UNKNOWN_TYPE: &str = "type.googleapis.com/xdsloop.check.Unknown";

pub async fn unknown_type(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(1).map_err(skip)?;
    let a = names[0].to_string();
    let mut p = ctx.sotw();
    let first = ctx.ask(&mut p, ENDPOINT, &[&a]).await?;
    p.subscribe(UNKNOWN_TYPE, &[]).await.or_fail(UNKNOWN_TYPE)?;
    let quiet = p.quiet(ctx.quiet).await;
    if let Some(gone) = quiet.ended {
        return Err(fail(format!("after a request for {UNKNOWN_TYPE}: {gone}")));
    }
    let answers = quiet.got.len();
    still_serving(ctx, &mut p, &first, &a, "after the unknown type").await?;
    Ok(Outcome::Pass(format!(
        "{UNKNOWN_TYPE} got {answers} response(s); eds on the same stream still answered"
    )))
}

pub async fn malformed_isolated(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(1).map_err(skip)?;
    let a = names[0].to_string();
    let mut p = ctx.sotw();
    let first = ctx.ask(&mut p, ENDPOINT, &[&a]).await?;
    let garbage = match garbage::send_malformed(&ctx.target, ctx.timeout).await {
        Gone::Silent(_) => "stayed open".to_string(),
        ended => ended.to_string(),
    };
    let context = format!("after a malformed request on another connection ({garbage})");
    still_serving(ctx, &mut p, &first, &a, &context).await?;
    Ok(Outcome::Pass(format!(
        "the malformed stream: {garbage}; this stream still answered eds"
    )))
}

/// Narrows EDS to [] and asks for `a` again: the answer must come and hold `a`.
async fn still_serving(
    ctx: &Ctx,
    p: &mut Probe<Sotw>,
    last: &DiscoveryResponse,
    a: &str,
    context: &str,
) -> Step<()> {
    let (version, nonce) = (&last.version_info, &last.nonce);
    p.request(ENDPOINT, &[], version, nonce)
        .await
        .or_fail(context)?;
    p.request(ENDPOINT, &[a], version, nonce)
        .await
        .or_fail(context)?;
    let answer = p
        .recv(ctx.timeout)
        .await
        .or_fail(format!("{context}, eds [{a}] asked again"))?;
    if !ctx.names(&answer).iter().any(|n| n == a) {
        return Err(fail(format!(
            "{context}, eds [{a}] asked again was answered without it: {}",
            ctx.show(&answer)
        )));
    }
    Ok(())
}
