//! S11: ADS make-before-break. One file adds cluster x and its endpoints x (a
//! DiscoveryResponse-shaped file holding both types, so the server sees one update): the
//! cluster must arrive before its endpoints.
//!
//! Deleting the file is pushed too, and its order is shown, not judged: the spec has no
//! order for removals ("Stale CDS clusters and related EDS endpoints ... can then be
//! removed"), and in SotW an EDS response without x removes nothing (Envoy's EDS cluster
//! keeps its hosts on an empty update).

use tokio::time::Instant;
use xdsloop_proto::discovery::DiscoveryResponse;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::edit::{own, remove, write};
use super::resources::{body, cluster, endpoints};
use super::{Ctx, OrFail, Step, fail};
use crate::check::probe::{Probe, Sotw};
use crate::check::report::Outcome;

/// Responses (each ACKed) until `done` holds for all of them, within `--push-timeout`.
async fn collect(
    ctx: &Ctx,
    p: &mut Probe<Sotw>,
    done: impl Fn(&[DiscoveryResponse]) -> bool,
) -> Result<Vec<DiscoveryResponse>, String> {
    let deadline = Instant::now() + ctx.push_timeout;
    let mut seen = Vec::new();
    while !done(&seen) {
        let left = deadline.saturating_duration_since(Instant::now());
        match p.recv(left).await {
            Ok(r) => {
                p.ack(&r).await.map_err(|g| g.to_string())?;
                seen.push(r);
            }
            Err(gone) if seen.is_empty() => return Err(gone.to_string()),
            Err(gone) => return Err(format!("{gone}; sent meanwhile: {}", ctx.show_all(&seen))),
        }
    }
    Ok(seen)
}

/// Index of the first response of `url` for which `holds` says whether it holds x.
fn first(
    seen: &[DiscoveryResponse],
    url: &str,
    holds: impl Fn(&DiscoveryResponse) -> bool,
) -> Option<usize> {
    seen.iter().position(|r| r.type_url == url && holds(r))
}

pub(super) async fn make_before_break(ctx: &mut Ctx) -> Step<Outcome> {
    let x = own(ctx, "mbb");
    let mut p = ctx.sotw();
    ctx.ask(&mut p, CLUSTER, &[]).await?;
    p.subscribe(ENDPOINT, &[&x]).await.or_fail("eds [x]")?;
    // A server may or may not answer a name that does not exist yet; either is fine.
    for r in p.quiet(ctx.quiet).await.got {
        p.ack(&r).await.or_fail("ACK")?;
    }
    write(ctx, "mbb", &[cluster(&x, 1), endpoints(&x, 10003)])?;
    let has = |r: &DiscoveryResponse| body(&ctx.codec, r, &x).is_some();
    let added = collect(ctx, &mut p, |seen| {
        first(seen, CLUSTER, has).is_some() && first(seen, ENDPOINT, has).is_some()
    });
    let added = added.await.map_err(|e| {
        fail(format!(
            "cluster {x} and endpoints {x} (one new file) were not both pushed: {e}"
        ))
    })?;
    let (c, e) = (first(&added, CLUSTER, has), first(&added, ENDPOINT, has));
    if e < c {
        return Err(fail(format!(
            "endpoints {x} arrived before cluster {x}: {}",
            ctx.show_all(&added)
        )));
    }
    remove(ctx, "mbb")?;
    let removal = removal_order(ctx, &mut p, &x).await;
    Ok(Outcome::Pass(format!(
        "added: {}; {removal}",
        ctx.show_all(&added)
    )))
}

/// What the deletion of x's file pushed, in order, as information (INFO: no verdict).
async fn removal_order(ctx: &Ctx, p: &mut Probe<Sotw>, x: &str) -> String {
    let lacks = |r: &DiscoveryResponse| body(&ctx.codec, r, x).is_none();
    let removal = collect(ctx, p, |seen| first(seen, CLUSTER, lacks).is_some()).await;
    let mut removal = match removal {
        Ok(seen) => seen,
        Err(e) => return format!("removal (INFO): cds without {x} not seen: {e}"),
    };
    let late = p.quiet(ctx.quiet).await.got;
    for r in &late {
        let _ = p.ack(r).await;
    }
    removal.extend(late);
    let (c, e) = (
        first(&removal, CLUSTER, lacks),
        first(&removal, ENDPOINT, lacks),
    );
    let order = match (c, e) {
        (_, None) => "no eds response without it",
        (Some(c), Some(e)) if e < c => "eds without it first, then cds",
        _ => "cds without it first, then eds",
    };
    format!(
        "removal (INFO, either order is fine): {order}: {}",
        ctx.show_all(&removal)
    )
}
