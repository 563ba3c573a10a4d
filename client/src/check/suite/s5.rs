//! S5: an EDS response holds every requested name that exists, including names sent before.

use xdsloop_proto::type_url::ENDPOINT;

use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::describe;
use crate::check::report::Outcome;

pub async fn named_set(ctx: &mut Ctx) -> Step<Outcome> {
    let names = ctx.inv.endpoints(2).map_err(skip)?;
    let (a, b) = (names[0].to_string(), names[1].to_string());
    let mut p = ctx.sotw();
    let first = ctx.ask(&mut p, ENDPOINT, &[&a]).await?;
    let held = ctx.names(&first);
    if !held.contains(&a) {
        return Err(fail(format!(
            "eds [{a}] was answered without {a}: {}",
            ctx.show(&first)
        )));
    }
    let (version, nonce) = (&first.version_info, &first.nonce);
    p.request(ENDPOINT, &[&a, &b], version, nonce)
        .await
        .or_fail("eds [a, b]")?;
    let second = p
        .recv(ctx.timeout)
        .await
        .or_fail(format!("eds [{a}, {b}]"))?;
    let got = ctx.names(&second);
    let missing: Vec<&String> = [&a, &b].into_iter().filter(|n| !got.contains(n)).collect();
    if !missing.is_empty() {
        return Err(fail(format!(
            "eds [{a}, {b}] was answered with {} (missing {})",
            describe::list(&got),
            describe::list(&missing)
        )));
    }
    Ok(Outcome::Pass(format!(
        "eds [{a}] then [{a}, {b}]: the second response holds both ({})",
        ctx.show(&second)
    )))
}
