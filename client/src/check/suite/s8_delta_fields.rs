//! S8: Delta resources carry name and version, only changes are sent, and subscribed names
//! that do not exist are reported.

use xdsloop_proto::discovery::DeltaDiscoveryResponse;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::describe;
use crate::check::report::Outcome;

pub(super) async fn delta_fields(ctx: &mut Ctx) -> Step<Outcome> {
    let mut p = ctx.delta();
    let mut seen: Vec<DeltaDiscoveryResponse> = Vec::new();
    p.change(CLUSTER, &[], &[]).await.or_fail("delta cds")?;
    seen.push(p.recv(ctx.timeout).await.or_fail("delta cds (wildcard)")?);
    let eds: Vec<&str> = ctx
        .inv
        .endpoints
        .iter()
        .take(2)
        .map(String::as_str)
        .collect();
    if !eds.is_empty() {
        p.change(ENDPOINT, &eds, &[]).await.or_fail("delta eds")?;
        let what = format!("delta eds +{}", describe::list(&eds));
        seen.push(p.recv(ctx.timeout).await.or_fail(what)?);
    }
    let mut count = 0;
    for r in &seen {
        for (i, resource) in r.resources.iter().enumerate() {
            if resource.resource.is_none() {
                continue;
            }
            count += 1;
            if resource.name.is_empty() || resource.version.is_empty() {
                return Err(fail(format!(
                    "resource #{} (name {:?}, version {:?}) lacks its {}: {}",
                    i + 1,
                    resource.name,
                    resource.version,
                    if resource.name.is_empty() {
                        "name"
                    } else {
                        "version"
                    },
                    describe::delta(r)
                )));
            }
        }
    }
    if count == 0 {
        return Err(skip(
            "needs resources: Delta wildcard CDS and EDS sent none",
        ));
    }
    Ok(Outcome::Pass(format!(
        "{count} resources in {} responses, each with name and version",
        seen.len()
    )))
}

pub(super) async fn delta_only_new(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(2).map_err(skip)?;
    let (a, b) = (names[0].to_string(), names[1].to_string());
    let mut p = ctx.delta();
    p.change(ENDPOINT, &[&a], &[])
        .await
        .or_fail("delta eds +[a]")?;
    let first = p
        .recv(ctx.timeout)
        .await
        .or_fail(format!("delta eds +[{a}]"))?;
    if !describe::delta_names(&first).0.contains(&a) {
        return Err(fail(format!(
            "subscribing {a} was answered without it: {}",
            describe::delta(&first)
        )));
    }
    p.ack(&first).await.or_fail("ACK")?;
    p.change(ENDPOINT, &[&b], &[])
        .await
        .or_fail("delta eds +[b]")?;
    let second = p
        .recv(ctx.timeout)
        .await
        .or_fail(format!("delta eds +[{b}]"))?;
    p.ack(&second).await.or_fail("ACK")?;
    let quiet = p.quiet(ctx.quiet).await;
    let mut all = vec![second];
    all.extend(quiet.got);
    let resent = all.iter().find(|r| describe::delta_names(r).0.contains(&a));
    if let Some(r) = resent {
        return Err(fail(format!(
            "subscribing {b} after {a} resent the unchanged {a}: {}",
            describe::delta(r)
        )));
    }
    if !describe::delta_names(&all[0]).0.contains(&b) {
        return Err(fail(format!(
            "subscribing {b} was answered without it: {}",
            describe::delta(&all[0])
        )));
    }
    Ok(Outcome::Pass(format!(
        "+[{a}] then +[{b}]: the second answer sent {b} alone ({})",
        describe::delta(&all[0])
    )))
}

pub(super) async fn delta_missing_removed(ctx: &mut Ctx) -> Step<Outcome> {
    let missing = ctx.missing("s8");
    let mut p = ctx.delta();
    p.change(ENDPOINT, &[&missing], &[])
        .await
        .or_fail("delta eds")?;
    let what = format!("delta eds +[{missing}] (a name that does not exist)");
    let response = p.recv(ctx.timeout).await.or_fail(&what)?;
    if !describe::delta_names(&response).1.contains(&missing) {
        return Err(fail(format!(
            "{what} was answered without reporting it removed: {}",
            describe::delta(&response)
        )));
    }
    Ok(Outcome::Pass(format!(
        "subscribing a name that does not exist was answered: {}",
        describe::delta(&response)
    )))
}
