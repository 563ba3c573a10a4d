//! S9: a Delta stream that declares held versions (`initial_resource_versions`, as after a
//! reconnect) is not sent what it already holds, except names it subscribes explicitly.

use std::collections::BTreeMap;

use xdsloop_proto::discovery::DeltaDiscoveryResponse;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::describe;
use crate::check::report::Outcome;

/// `name → version` of what a response sent.
fn versions(response: &DeltaDiscoveryResponse) -> BTreeMap<String, String> {
    let sent = response.resources.iter().filter(|r| r.resource.is_some());
    sent.map(|r| (r.name.clone(), r.version.clone())).collect()
}

pub async fn initial_versions(ctx: &mut Ctx) -> Step<Outcome> {
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

pub async fn named_answered(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(1).map_err(skip)?;
    let a = names[0].to_string();
    let mut first = ctx.delta();
    first
        .change(ENDPOINT, &[&a], &[])
        .await
        .or_fail("delta eds")?;
    let got = first
        .recv(ctx.timeout)
        .await
        .or_fail(format!("delta eds +[{a}]"))?;
    first.ack(&got).await.or_fail("ACK")?;
    let Some(version) = versions(&got).remove(&a) else {
        return Err(fail(format!(
            "delta eds +[{a}] was answered without {a}: {}",
            describe::delta(&got)
        )));
    };
    drop(first);
    let mut again = ctx.delta();
    let held = BTreeMap::from([(a.clone(), version.clone())]);
    again
        .resume(ENDPOINT, &[&a], held)
        .await
        .or_fail("delta eds")?;
    let what = format!("a new stream subscribing {a} and declaring {a}@{version}");
    let answer = again.recv(ctx.timeout).await.or_fail(&what)?;
    let (sent, removed) = describe::delta_names(&answer);
    if !sent.contains(&a) && !removed.contains(&a) {
        return Err(fail(format!(
            "{what} was not sent {a}: {}",
            describe::delta(&answer)
        )));
    }
    Ok(Outcome::Pass(format!(
        "{what} got {}",
        describe::delta(&answer)
    )))
}
