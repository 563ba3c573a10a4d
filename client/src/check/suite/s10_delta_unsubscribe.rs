//! S10: a Delta name no longer subscribed is no longer pushed.
//!
//! The suite's file holds endpoints x and y; the stream subscribes both, unsubscribes y, then
//! one write changes both. The push of x shows the server took the edit; y must not follow.

use xdsloop_proto::type_url::ENDPOINT;

use super::edit::{own, remove, write};
use super::edit_delta::wait_delta;
use super::resources::endpoints;
use super::{Ctx, OrFail, Step, fail};
use crate::check::describe;
use crate::check::report::Outcome;

pub(super) async fn delta_unsubscribe(ctx: &mut Ctx) -> Step<Outcome> {
    let (x, y) = (own(ctx, "unsub-x"), own(ctx, "unsub-y"));
    write(ctx, "unsub", &[endpoints(&x, 10001), endpoints(&y, 10002)])?;
    let mut p = ctx.delta();
    p.change(ENDPOINT, &[&x, &y], &[])
        .await
        .or_fail("delta eds")?;
    let both = wait_delta(ctx, &mut p, &[&x, &y], false).await;
    both.map_err(|e| {
        fail(format!(
            "subscribing {x} and {y} (in a new file) did not send both: {e}"
        ))
    })?;
    p.change(ENDPOINT, &[], &[&y])
        .await
        .or_fail("delta eds -[y]")?;
    write(ctx, "unsub", &[endpoints(&x, 20001), endpoints(&y, 20002)])?;
    let pushed = wait_delta(ctx, &mut p, &[&x], false).await;
    let mut pushed = pushed.map_err(|e| {
        fail(format!(
            "the edit of {x} (still subscribed) was not pushed: {e}"
        ))
    })?;
    pushed.extend(p.quiet(ctx.quiet).await.got);
    let outcome = match pushed
        .iter()
        .find(|r| describe::delta_names(r).0.contains(&y))
    {
        Some(r) => Err(fail(format!(
            "{y} was unsubscribed, yet its edit was pushed: {}",
            describe::delta(r)
        ))),
        None => Ok(Outcome::Pass(format!(
            "after unsubscribing {y}, one edit of both pushed {x} alone ({})",
            describe::delta_all(&pushed)
        ))),
    };
    remove(ctx, "unsub")?;
    let _ = wait_delta(ctx, &mut p, &[&x], true).await;
    outcome
}
