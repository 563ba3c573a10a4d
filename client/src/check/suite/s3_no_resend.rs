//! S3: after an ACK nothing is resent until something changes; a NACKed version is not resent.

use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER};

use super::{Ctx, Step, fail};
use crate::check::report::Outcome;

pub(super) async fn no_resend_after_ack(ctx: &mut Ctx) -> Step<Outcome> {
    let mut p = ctx.sotw();
    let eds: Vec<&str> = ctx
        .inv
        .endpoints
        .iter()
        .take(2)
        .map(String::as_str)
        .collect();
    let mut asked = vec![(CLUSTER, vec![])];
    if !ctx.inv.listeners.is_empty() {
        asked.push((LISTENER, vec![]));
    }
    if !eds.is_empty() {
        asked.push((ENDPOINT, eds));
    }
    let mut acked = Vec::new();
    for (url, names) in &asked {
        let response = ctx.ask(&mut p, url, names).await?;
        acked.push(ctx.show(&response));
    }
    let quiet = p.quiet(ctx.quiet).await;
    if let Some(gone) = quiet.ended {
        return Err(fail(format!("after ACKing {}: {gone}", acked.join(", "))));
    }
    if !quiet.got.is_empty() {
        return Err(fail(format!(
            "after ACKing {}, nothing changed but the server sent: {}",
            acked.join(", "),
            ctx.show_all(&quiet.got)
        )));
    }
    Ok(Outcome::Pass(format!(
        "ACKed {}; nothing sent in {}",
        acked.join(", "),
        humantime::format_duration(ctx.quiet)
    )))
}

pub(super) async fn no_resend_after_nack(ctx: &mut Ctx) -> Step<Outcome> {
    let mut p = ctx.sotw();
    p.subscribe(CLUSTER, &[])
        .await
        .map_err(|g| fail(format!("cds []: {g}")))?;
    let rejected = p.recv(ctx.timeout).await;
    let rejected = rejected.map_err(|g| fail(format!("cds []: {g}")))?;
    p.nack(&rejected, "")
        .await
        .map_err(|g| fail(format!("NACK: {g}")))?;
    let quiet = p.quiet(ctx.quiet).await;
    let again: Vec<_> = quiet
        .got
        .iter()
        .filter(|r| r.type_url == rejected.type_url && r.version_info == rejected.version_info)
        .cloned()
        .collect();
    let nacked = ctx.show(&rejected);
    if !again.is_empty() {
        return Err(fail(format!(
            "NACKed {nacked}; the rejected version was sent again: {}",
            ctx.show_all(&again)
        )));
    }
    if let Some(gone) = quiet.ended {
        return Err(fail(format!("after the NACK of {nacked}: {gone}")));
    }
    Ok(Outcome::Pass(format!(
        "NACKed {nacked}; version {:?} not sent again in {}",
        rejected.version_info,
        humantime::format_duration(ctx.quiet)
    )))
}
