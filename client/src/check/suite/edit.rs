//! Checks that edit the served fixtures and watch a SotW CDS wildcard stream: an edit is
//! pushed as a new version (S3), a NACKed version is parked until the next edit (S3), and an
//! invalid file changes nothing a client holds.
//!
//! Each check removes its file at the end and waits for the server to push the removal, so
//! the next check starts from the directory as found.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use xdsloop_proto::discovery::DiscoveryResponse;
use xdsloop_proto::type_url::CLUSTER;

use super::resources::{body, cluster};
use super::{Ctx, OrFail, Step, fail, skip};
use crate::check::describe;
use crate::check::probe::{Gone, Probe, Sotw};
use crate::check::report::Outcome;

/// The name of the suite's resource `what` in this run.
pub(super) fn own(ctx: &Ctx, what: &str) -> String {
    let prefix = ctx.fixtures.as_ref().map(|f| f.names()).unwrap_or_default();
    format!("{prefix}{what}")
}

/// Writes the suite's file `stem`; a directory the suite cannot write to is a SKIP.
pub(super) fn write(ctx: &mut Ctx, stem: &str, resources: &[Value]) -> Step<()> {
    let fixtures = ctx
        .fixtures
        .as_mut()
        .ok_or_else(|| skip("needs --fixtures"))?;
    fixtures.write(stem, resources).map_err(skip)
}

pub(super) fn remove(ctx: &mut Ctx, stem: &str) -> Step<()> {
    let fixtures = ctx
        .fixtures
        .as_mut()
        .ok_or_else(|| skip("needs --fixtures"))?;
    fixtures.remove(stem).map_err(skip)
}

/// The next CDS response satisfying `wanted` within `--push-timeout`, ACKed.
pub(super) async fn wait_cds(
    ctx: &Ctx,
    p: &mut Probe<Sotw>,
    wanted: impl FnMut(&DiscoveryResponse) -> bool,
) -> Result<DiscoveryResponse, String> {
    match p.until(ctx.push_timeout, wanted).await {
        Ok((found, _)) => {
            p.ack(&found).await.map_err(|g| g.to_string())?;
            Ok(found)
        }
        Err((Gone::Silent(_), before)) if !before.is_empty() => Err(format!(
            "not within {}; sent instead: {}",
            humantime::format_duration(ctx.push_timeout),
            ctx.show_all(&before)
        )),
        Err((gone, _)) => Err(gone.to_string()),
    }
}

/// Deletes file `stem` and waits until the server serves CDS without `name`, asking on fresh
/// streams (the check's own may have ended, and with the file present a new one may fail
/// too). Best effort, within `--push-timeout`: the outcome was decided before; this only
/// keeps the next check from seeing the removal.
pub(super) async fn clean_up(ctx: &mut Ctx, stem: &str, name: &str) {
    if remove(ctx, stem).is_err() {
        return;
    }
    let deadline = Instant::now() + ctx.push_timeout;
    while Instant::now() < deadline {
        let mut p = ctx.sotw();
        match ctx.ask(&mut p, CLUSTER, &[]).await {
            Ok(now) if body(&ctx.codec, &now, name).is_none() => return,
            Ok(_) => {
                let _ = wait_cds(ctx, &mut p, |r| body(&ctx.codec, r, name).is_none()).await;
                return;
            }
            // Retrying an external server, not synchronising with it.
            Err(_) => tokio::time::sleep(RETRY).await,
        }
    }
}

/// Pause between attempts of [`clean_up`].
const RETRY: Duration = Duration::from_millis(100);

pub(super) async fn push_on_edit(ctx: &mut Ctx) -> Step<Outcome> {
    let name = own(ctx, "push");
    let mut p = ctx.sotw();
    ctx.ask(&mut p, CLUSTER, &[]).await?;
    let outcome = pushes_edits(ctx, &mut p, &name).await;
    clean_up(ctx, "push", &name).await;
    outcome
}

async fn pushes_edits(ctx: &mut Ctx, p: &mut Probe<Sotw>, name: &str) -> Step<Outcome> {
    write(ctx, "push", &[cluster(name, 1)])?;
    let added = wait_cds(ctx, p, |r| body(&ctx.codec, r, name).is_some());
    let added = added.await.map_err(|e| {
        fail(format!(
            "a new file with cluster {name} was not pushed: {e}"
        ))
    })?;
    let was = body(&ctx.codec, &added, name).unwrap_or_default().to_vec();
    write(ctx, "push", &[cluster(name, 2)])?;
    let changed = |r: &DiscoveryResponse| body(&ctx.codec, r, name).is_some_and(|b| b != was);
    let edited = wait_cds(ctx, p, changed).await;
    let edited =
        edited.map_err(|e| fail(format!("the edit of cluster {name} was not pushed: {e}")))?;
    if edited.version_info == added.version_info {
        return Err(fail(format!(
            "the edit of cluster {name} was pushed under the same version: {} then {}",
            ctx.show(&added),
            ctx.show(&edited)
        )));
    }
    Ok(Outcome::Pass(format!(
        "new file pushed as cds v{:?}, its edit as v{:?}",
        added.version_info, edited.version_info
    )))
}

pub(super) async fn nack_then_change(ctx: &mut Ctx) -> Step<Outcome> {
    let name = own(ctx, "nack");
    let mut p = ctx.sotw();
    let accepted = ctx.ask(&mut p, CLUSTER, &[]).await?;
    let outcome = parks_nacked(ctx, &mut p, &name, &accepted.version_info).await;
    clean_up(ctx, "nack", &name).await;
    outcome
}

async fn parks_nacked(
    ctx: &mut Ctx,
    p: &mut Probe<Sotw>,
    name: &str,
    accepted: &str,
) -> Step<Outcome> {
    write(ctx, "nack", &[cluster(name, 1)])?;
    let holding = |r: &DiscoveryResponse| body(&ctx.codec, r, name).is_some();
    let rejected = match p.until(ctx.push_timeout, holding).await {
        Ok((r, _)) => r,
        Err((gone, _)) => {
            return Err(fail(format!(
                "a new file with cluster {name} was not pushed: {gone}"
            )));
        }
    };
    p.nack(&rejected, accepted).await.or_fail("NACK")?;
    let quiet = p.quiet(ctx.quiet).await;
    let again = quiet
        .got
        .into_iter()
        .filter(|r| r.version_info == rejected.version_info);
    let again: Vec<DiscoveryResponse> = again.collect();
    if !again.is_empty() {
        return Err(fail(format!(
            "NACKed {}; sent again: {}",
            ctx.show(&rejected),
            ctx.show_all(&again)
        )));
    }
    write(ctx, "nack", &[cluster(name, 2)])?;
    let was = body(&ctx.codec, &rejected, name)
        .unwrap_or_default()
        .to_vec();
    let changed = |r: &DiscoveryResponse| body(&ctx.codec, r, name).is_some_and(|b| b != was);
    let next = wait_cds(ctx, p, changed).await;
    let next = next.map_err(|e| {
        fail(format!(
            "after a NACK, the next edit of {name} was not pushed: {e}"
        ))
    })?;
    if next.version_info == rejected.version_info {
        return Err(fail(format!(
            "the edit after the NACK reuses the NACKed version: {}",
            ctx.show(&next)
        )));
    }
    Ok(Outcome::Pass(format!(
        "NACKed v{:?} not resent in {}; the next edit came as v{:?}",
        rejected.version_info,
        humantime::format_duration(ctx.quiet),
        next.version_info
    )))
}

/// name → encoded resource: what a client holds after applying a CDS response.
fn contents(ctx: &Ctx, response: &DiscoveryResponse) -> BTreeMap<String, Vec<u8>> {
    let names = ctx.names(response).into_iter();
    names
        .zip(response.resources.iter().map(|a| a.value.clone()))
        .collect()
}

pub(super) async fn bad_edit_keeps_last_good(ctx: &mut Ctx) -> Step<Outcome> {
    let name = own(ctx, "bad");
    let mut p = ctx.sotw();
    ctx.ask(&mut p, CLUSTER, &[]).await?;
    let outcome = keeps_last_good(ctx, &mut p, &name).await;
    clean_up(ctx, "bad", &name).await;
    outcome
}

async fn keeps_last_good(ctx: &mut Ctx, p: &mut Probe<Sotw>, name: &str) -> Step<Outcome> {
    write(ctx, "bad", &[cluster(name, 1)])?;
    let good = wait_cds(ctx, p, |r| body(&ctx.codec, r, name).is_some()).await;
    let good = good.map_err(|e| {
        fail(format!(
            "a new file with cluster {name} was not pushed: {e}"
        ))
    })?;
    let held = contents(ctx, &good);
    let broken = "{\"version_info\": \"xdsloop-check-broken\", \"resources\": [";
    let fixtures = ctx
        .fixtures
        .as_mut()
        .ok_or_else(|| skip("needs --fixtures"))?;
    fixtures.write_text("bad", broken).map_err(skip)?;
    let quiet = p.quiet(ctx.quiet).await;
    if let Some(r) = quiet.got.iter().find(|r| contents(ctx, r) != held) {
        return Err(fail(format!(
            "after {name}'s file became invalid JSON, the server pushed {} (clients held {})",
            ctx.show(r),
            ctx.show(&good)
        )));
    }
    let mut fresh = ctx.sotw();
    let now = ctx.ask(&mut fresh, CLUSTER, &[]).await?;
    if contents(ctx, &now) != held {
        return Err(fail(format!(
            "with the invalid file, a new stream got {} instead of the last good {}",
            ctx.show(&now),
            ctx.show(&good)
        )));
    }
    remove(ctx, "bad")?;
    let gone = wait_cds(ctx, p, |r| body(&ctx.codec, r, name).is_none()).await;
    let gone = gone.map_err(|e| {
        fail(format!(
            "removing the invalid file was not pushed ({name} still served): {e}"
        ))
    })?;
    Ok(Outcome::Pass(format!(
        "invalid file: nothing pushed in {}, a new stream got the last good {} clusters; its removal came as {}",
        humantime::format_duration(ctx.quiet),
        held.len(),
        describe::sotw(&ctx.codec, &gone)
    )))
}
