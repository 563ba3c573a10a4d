//! S7: types on one ADS stream are independent: an ACK of one never pushes another.

use xdsloop_proto::type_url::{CLUSTER, LISTENER};

use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::report::Outcome;

pub(super) async fn types_independent(ctx: &mut Ctx) -> Step<Outcome> {
    ctx.inv.need_clusters().map_err(skip)?;
    if ctx.inv.listeners.is_empty() {
        return Err(skip("needs listeners: wildcard LDS gave none"));
    }
    let mut p = ctx.sotw();
    p.subscribe(CLUSTER, &[]).await.or_fail("cds []")?;
    let cds = p.recv(ctx.timeout).await.or_fail("cds []")?;
    p.subscribe(LISTENER, &[]).await.or_fail("lds []")?;
    let lds = p.recv(ctx.timeout).await.or_fail("lds []")?;
    p.ack(&cds).await.or_fail("ACK of cds")?;
    let quiet = p.quiet(ctx.quiet).await;
    let (acked, held) = (ctx.show(&cds), ctx.show(&lds));
    if !quiet.got.is_empty() {
        return Err(fail(format!(
            "the ACK of {acked} was followed by {} (lds held {held})",
            ctx.show_all(&quiet.got)
        )));
    }
    if let Some(gone) = quiet.ended {
        return Err(fail(format!("after the ACK of {acked}: {gone}")));
    }
    Ok(Outcome::Pass(format!(
        "ACK of {acked} with lds pending: nothing sent in {}",
        humantime::format_duration(ctx.quiet)
    )))
}
