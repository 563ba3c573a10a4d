//! FX.delta-changes (S8 under edits): on a Delta wildcard CDS stream, editing one of the
//! suite's two clusters sends that one alone, and deleting their file removes both.

use std::collections::BTreeSet;

use xdsloop_proto::discovery::DeltaDiscoveryResponse;
use xdsloop_proto::type_url::CLUSTER;

use super::edit::{own, remove, write};
use super::resources::cluster;
use super::{Ctx, OrFail, Step, fail};
use crate::check::describe;
use crate::check::probe::{Delta, Probe};
use crate::check::report::Outcome;

/// Responses until every name in `names` was sent (or, with `removed`, removed), the last
/// one ACKed; all of them returned.
pub(super) async fn wait_delta(
    ctx: &Ctx,
    p: &mut Probe<Delta>,
    names: &[&str],
    removed: bool,
) -> Result<Vec<DeltaDiscoveryResponse>, String> {
    let mut seen = BTreeSet::new();
    let mut all_seen = |r: &DeltaDiscoveryResponse| {
        let (sent, gone) = describe::delta_names(r);
        seen.extend(if removed { gone } else { sent });
        names.iter().all(|n| seen.contains(*n))
    };
    match p.until(ctx.push_timeout, &mut all_seen).await {
        Ok((last, mut before)) => {
            p.ack(&last).await.map_err(|g| g.to_string())?;
            before.push(last);
            Ok(before)
        }
        Err((gone, before)) if before.is_empty() => Err(gone.to_string()),
        Err((gone, before)) => Err(format!(
            "{gone}; sent meanwhile: {}",
            describe::delta_all(&before)
        )),
    }
}

pub(super) async fn delta_changes(ctx: &mut Ctx) -> Step<Outcome> {
    let (x, y) = (own(ctx, "delta-x"), own(ctx, "delta-y"));
    let mut p = ctx.delta();
    p.change(CLUSTER, &[], &[]).await.or_fail("delta cds")?;
    let start = p.recv(ctx.timeout).await.or_fail("delta cds (wildcard)")?;
    p.ack(&start).await.or_fail("ACK")?;
    write(ctx, "delta", &[cluster(&x, 1), cluster(&y, 1)])?;
    let added = wait_delta(ctx, &mut p, &[&x, &y], false).await;
    added.map_err(|e| {
        fail(format!(
            "a new file with clusters {x} and {y} was not pushed: {e}"
        ))
    })?;
    write(ctx, "delta", &[cluster(&x, 2), cluster(&y, 1)])?;
    let edited = wait_delta(ctx, &mut p, &[&x], false).await;
    let mut edited =
        edited.map_err(|e| fail(format!("the edit of cluster {x} was not pushed: {e}")))?;
    edited.extend(p.quiet(ctx.quiet).await.got);
    let extra = edited
        .iter()
        .find(|r| describe::delta_names(r).0.iter().any(|n| *n != x));
    if let Some(r) = extra {
        return Err(fail(format!(
            "only {x} changed, but the server sent {}",
            describe::delta(r)
        )));
    }
    remove(ctx, "delta")?;
    let removed = wait_delta(ctx, &mut p, &[&x, &y], true).await;
    let removed = removed.map_err(|e| {
        fail(format!(
            "deleting the file of {x} and {y} was not pushed as their removal: {e}"
        ))
    })?;
    Ok(Outcome::Pass(format!(
        "editing {x} sent it alone ({}); deleting the file removed both ({})",
        describe::delta_all(&edited),
        describe::delta_all(&removed)
    )))
}
