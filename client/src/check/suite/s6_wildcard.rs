//! S6: wildcard is a fresh type with no names or with `*`; after names, [] unsubscribes.

use xdsloop_proto::discovery::WILDCARD;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::describe;
use crate::check::report::Outcome;

pub(super) async fn wildcard(ctx: &mut Ctx) -> Step<Outcome> {
    ctx.inv.need_clusters().map_err(skip)?;
    let mut legacy = ctx.sotw();
    let mut star = ctx.sotw();
    let plain = ctx.ask(&mut legacy, CLUSTER, &[]).await?;
    let explicit = ctx.ask(&mut star, CLUSTER, &[WILDCARD]).await?;
    let mut a = ctx.names(&plain);
    let mut b = ctx.names(&explicit);
    a.sort();
    b.sort();
    if a.is_empty() || a != b {
        return Err(fail(format!(
            "cds with no names gave {}; cds [*] on another stream gave {}",
            describe::list(&a),
            describe::list(&b)
        )));
    }
    Ok(Outcome::Pass(format!(
        "cds with no names and cds [*] both gave the same {} clusters",
        a.len()
    )))
}

pub(super) async fn empty_unsubscribes(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(1).map_err(skip)?;
    let a = names[0].to_string();
    let mut p = ctx.sotw();
    let first = ctx.ask(&mut p, ENDPOINT, &[&a]).await?;
    p.request(ENDPOINT, &[], &first.version_info, &first.nonce)
        .await
        .or_fail("eds []")?;
    let quiet = p.quiet(ctx.quiet).await;
    let with_resources: Vec<_> = quiet
        .got
        .into_iter()
        .filter(|r| !r.resources.is_empty())
        .collect();
    if !with_resources.is_empty() {
        return Err(fail(format!(
            "after eds [{a}] then [] (unsubscribe), the server sent: {}",
            ctx.show_all(&with_resources)
        )));
    }
    if let Some(gone) = quiet.ended {
        return Err(fail(format!("after eds []: {gone}")));
    }
    Ok(Outcome::Pass(format!(
        "eds [{a}] then []: no resources sent in {}",
        humantime::format_duration(ctx.quiet)
    )))
}
