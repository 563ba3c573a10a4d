//! S11: ADS make-before-break. One file adds cluster x and its endpoints x (a
//! DiscoveryResponse-shaped file holding both types, so the server sees one update): the
//! cluster must arrive before its endpoints. Deleting the file: if the server sends an EDS
//! response without x at all, it must come before the CDS response without x (removals in
//! the reverse order).

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

pub async fn make_before_break(ctx: &mut Ctx) -> Step<Outcome> {
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
    let lacks = |r: &DiscoveryResponse| body(&ctx.codec, r, &x).is_none();
    let removal = collect(ctx, &mut p, |seen| first(seen, CLUSTER, lacks).is_some()).await;
    let mut removal = removal.map_err(|e| {
        fail(format!(
            "deleting the file of cluster {x} was not pushed: {e}"
        ))
    })?;
    let late = p.quiet(ctx.quiet).await.got;
    for r in &late {
        p.ack(r).await.or_fail("ACK")?;
    }
    removal.extend(late);
    let (c, e) = (
        first(&removal, CLUSTER, lacks),
        first(&removal, ENDPOINT, lacks),
    );
    if e.is_some_and(|e| Some(e) > c) {
        return Err(fail(format!(
            "the endpoints' removal came after the cluster's: {}",
            ctx.show_all(&removal)
        )));
    }
    Ok(Outcome::Pass(format!(
        "added: {}; removed: {}",
        ctx.show_all(&added),
        ctx.show_all(&removal)
    )))
}
