//! S12: an unknown type URL or a malformed request never affects other types or streams.
//!
//! After the disturbance the stream must still serve: it asks for wildcard CDS, a type it has
//! not asked for before, which any server serving clusters must answer (no nonce to get
//! wrong, no earlier answer to mistake for this one).

use xdsloop_proto::discovery::DiscoveryResponse;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::garbage;
use crate::check::probe::{Gone, Probe, Sotw};
use crate::check::report::Outcome;

/// A type URL no server knows.
pub(super) const UNKNOWN_TYPE: &str = "type.googleapis.com/xdsloop.check.Unknown";

pub(super) async fn unknown_type(ctx: &mut Ctx) -> Step<Outcome> {
    ctx.inv.need_clusters().map_err(skip)?;
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
    let cds = still_serving(ctx, &mut p, "after the unknown type").await?;
    Ok(Outcome::Pass(format!(
        "eds [{a}] held ({}); {UNKNOWN_TYPE} got {answers} response(s); cds asked next on the same stream was answered: {cds}",
        ctx.show(&first)
    )))
}

pub(super) async fn malformed_isolated(ctx: &mut Ctx) -> Step<Outcome> {
    ctx.inv.need_clusters().map_err(skip)?;
    let names = ctx.inv.endpoints(1).map_err(skip)?;
    let a = names[0].to_string();
    let mut p = ctx.sotw();
    ctx.ask(&mut p, ENDPOINT, &[&a]).await?;
    let garbage = match garbage::send_malformed(&ctx.target, ctx.timeout).await {
        Gone::Silent(_) => "stayed open".to_string(),
        ended => ended.to_string(),
    };
    let context = format!("after a malformed request on another connection ({garbage})");
    let cds = still_serving(ctx, &mut p, &context).await?;
    Ok(Outcome::Pass(format!(
        "the malformed stream: {garbage}; this stream (holding eds [{a}]) then answered cds: {cds}"
    )))
}

/// Asks for wildcard CDS, new on this stream: the answer must come (responses of other
/// types before it are passed over).
async fn still_serving(ctx: &Ctx, p: &mut Probe<Sotw>, context: &str) -> Step<String> {
    p.subscribe(CLUSTER, &[]).await.or_fail(context)?;
    let is_cds = |r: &DiscoveryResponse| r.type_url == CLUSTER;
    match p.until(ctx.timeout, is_cds).await {
        Ok((cds, _)) => {
            p.ack(&cds).await.or_fail(context)?;
            Ok(ctx.show(&cds))
        }
        Err((gone, _)) => Err(fail(format!(
            "{context}, wildcard cds (a type new on this stream) was not answered: {gone}"
        ))),
    }
}
