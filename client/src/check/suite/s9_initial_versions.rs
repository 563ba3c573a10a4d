//! S9: a Delta stream that declares held versions (`initial_resource_versions`, as after a
//! reconnect) need not be sent what it holds at those versions, but is sent what it holds at
//! another version; a name subscribed again on a live stream is sent again.
//!
//! Not checked: a new stream that declares `a@<current>` and subscribes `a` may be sent
//! nothing. Envoy's reconnect puts every held name in both fields, and trusting the versions
//! is what they are for; "must still provide" is said of a live stream.

use std::collections::BTreeMap;

use xdsloop_proto::discovery::DeltaDiscoveryResponse;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::describe;
use crate::check::fixtures::PREFIX;
use crate::check::probe::{Delta, Probe};
use crate::check::report::Outcome;

/// `name → version` of what a response sent.
fn versions(response: &DeltaDiscoveryResponse) -> BTreeMap<String, String> {
    let sent = response.resources.iter().filter(|r| r.resource.is_some());
    sent.map(|r| (r.name.clone(), r.version.clone())).collect()
}

pub(super) async fn initial_versions(ctx: &mut Ctx) -> Step<Outcome> {
    let mut first = ctx.delta();
    first.change(CLUSTER, &[], &[]).await.or_fail("delta cds")?;
    let held_from = first
        .recv(ctx.timeout)
        .await
        .or_fail("delta cds (wildcard)")?;
    first.ack(&held_from).await.or_fail("ACK")?;
    let held = versions(&held_from);
    if held.is_empty() {
        return Err(skip("needs clusters: Delta wildcard CDS sent none"));
    }
    drop(first);
    let mut again = ctx.delta();
    again
        .resume(CLUSTER, &[], held.clone())
        .await
        .or_fail("delta cds")?;
    let quiet = again.quiet(ctx.quiet).await;
    for r in &quiet.got {
        let resent: Vec<String> = versions(r)
            .into_iter()
            .filter(|(n, v)| held.get(n) == Some(v))
            .map(|(n, v)| format!("{n}@{v}"))
            .collect();
        if !resent.is_empty() {
            return Err(fail(format!(
                "a new stream declaring {} held clusters was resent unchanged {}: {}",
                held.len(),
                describe::list(&resent),
                describe::delta(r)
            )));
        }
    }
    if let Some(gone) = quiet.ended {
        return Err(fail(format!("the stream declaring held versions: {gone}")));
    }
    Ok(Outcome::Pass(format!(
        "a new wildcard stream declaring {} held clusters got none of them again ({} response(s))",
        held.len(),
        quiet.got.len()
    )))
}

/// Subscribes `a` on a Delta EDS stream and waits for it; returns its version.
async fn hold(ctx: &Ctx, p: &mut Probe<Delta>, a: &str) -> Step<String> {
    p.change(ENDPOINT, &[a], &[]).await.or_fail("delta eds")?;
    let got = p
        .recv(ctx.timeout)
        .await
        .or_fail(format!("delta eds +[{a}]"))?;
    p.ack(&got).await.or_fail("ACK")?;
    versions(&got).remove(a).ok_or_else(|| {
        fail(format!(
            "delta eds +[{a}] was answered without {a}: {}",
            describe::delta(&got)
        ))
    })
}

/// Waits for a response that sends `a` or reports it removed.
async fn answered(
    ctx: &Ctx,
    p: &mut Probe<Delta>,
    a: &str,
    what: &str,
) -> Step<DeltaDiscoveryResponse> {
    let names_a = |r: &DeltaDiscoveryResponse| {
        let (sent, removed) = describe::delta_names(r);
        sent.iter().chain(&removed).any(|n| n == a)
    };
    match p.until(ctx.timeout, names_a).await {
        Ok((answer, _)) => Ok(answer),
        Err((gone, seen)) if seen.is_empty() => {
            Err(fail(format!("{what}: {a} was not sent: {gone}")))
        }
        Err((gone, seen)) => Err(fail(format!(
            "{what}: {a} was not sent ({gone}); sent instead: {}",
            describe::delta_all(&seen)
        ))),
    }
}

pub(super) async fn resubscribe_answered(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(1).map_err(skip)?;
    let a = names[0].to_string();
    let mut p = ctx.delta();
    let version = hold(ctx, &mut p, &a).await?;
    p.change(ENDPOINT, &[&a], &[])
        .await
        .or_fail("delta eds +[a] again")?;
    let what = format!("holding {a}@{version}, the same stream subscribed {a} again");
    let answer = answered(ctx, &mut p, &a, &what).await?;
    Ok(Outcome::Pass(format!(
        "{what}: answered {}",
        describe::delta(&answer)
    )))
}

pub(super) async fn stale_version_sent(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(1).map_err(skip)?;
    let a = names[0].to_string();
    let stale = format!("{PREFIX}{}-stale", ctx.run);
    let mut p = ctx.delta();
    let held = BTreeMap::from([(a.clone(), stale.clone())]);
    p.resume(ENDPOINT, &[&a], held).await.or_fail("delta eds")?;
    let what =
        format!("a new stream subscribing {a} and declaring {a}@{stale} (a version it never had)");
    let answer = answered(ctx, &mut p, &a, &what).await?;
    Ok(Outcome::Pass(format!(
        "{what} got {}",
        describe::delta(&answer)
    )))
}
