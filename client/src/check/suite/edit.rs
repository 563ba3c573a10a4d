//! Checks that edit the served fixtures: an edit comes under a new version (ack-nack.1), a
//! name asked for before it existed is pushed once it does (resource-not-existed.3), an LDS or
//! CDS push holds every resource (grouping.3), and an invalid file changes nothing
//! (xdsloop.bad-edit-keeps-last-good).
//!
//! Each case removes its file at the end and waits for the server to serve the directory as
//! found, so the next case starts from there.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use xdsloop_proto::Variant;
use xdsloop_proto::type_url::CLUSTER;

use super::resources::{cluster, of_type};
use super::{Ctx, Sent, Step, fail, judged, setup, short, skip};
use crate::check::case::{Case, ROOT_TYPES};
use crate::check::conversation::{Conv, Seen};
use crate::check::probe::Service;
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

/// Deletes file `stem` (if the case left it) and waits until the server no longer serves
/// the suite's resources of this run, asking on fresh streams. Best effort, within
/// `--push-timeout`: the outcome was decided before; this only keeps the next case from
/// seeing the removal.
pub(super) async fn clean_up(ctx: &mut Ctx, stem: &str) {
    if remove(ctx, stem).is_err() {
        return;
    }
    let prefix = own(ctx, "");
    let deadline = Instant::now() + ctx.push_timeout;
    let case = Case {
        type_url: CLUSTER,
        variant: Variant::Sotw,
        service: Service::Ads,
    };
    while Instant::now() < deadline {
        let mut conv = ctx.conv(case);
        let _ = conv.want(CLUSTER, &[]).await;
        let left = deadline.saturating_duration_since(Instant::now());
        let clean = conv
            .until(CLUSTER, left, |s| {
                s.names().iter().all(|n| !n.starts_with(&prefix))
            })
            .await;
        conv.finish(Duration::ZERO).await;
        if clean.is_ok() {
            return;
        }
        // Retrying an external server, not synchronising with it.
        tokio::time::sleep(RETRY).await;
    }
}

/// Pause between attempts of [`clean_up`].
const RETRY: Duration = Duration::from_millis(100);

/// Subscribes `conv` to its case's type: the wildcard for LDS/CDS, else `name`.
async fn subscribe(ctx: &Ctx, conv: &mut Conv, name: &str) -> Step<()> {
    let url = conv.case().type_url;
    match ROOT_TYPES.contains(&url) {
        true => ctx.ask_for(conv, url, &[]).await.map(drop),
        false => conv.want(url, &[name]).await.sent("subscribing"),
    }
}

/// Waits for `name` on `conv` within `--push-timeout`.
async fn pushed(
    ctx: &Ctx,
    conv: &mut Conv,
    name: &str,
    mut more: impl FnMut(&Seen) -> bool,
) -> Result<Seen, crate::check::conversation::Miss> {
    let url = conv.case().type_url;
    conv.until(url, ctx.push_timeout, |s| s.has(name) && more(s))
        .await
}

pub(super) async fn edit_versioned(ctx: &mut Ctx, case: Case, stem: &str) -> Step<Outcome> {
    let url = case.type_url;
    let name = own(ctx, "versioned");
    let mut conv = ctx.conv(case);
    subscribe(ctx, &mut conv, &name).await?;
    write(ctx, stem, &[of_type(url, &name, 1)])?;
    let what = format!("a new file with {} {name}", short(url));
    let added = setup(pushed(ctx, &mut conv, &name, |_| true).await, &what)?;
    let was = body(&added, &name);
    write(ctx, stem, &[of_type(url, &name, 2)])?;
    let what = format!("the edit of {} {name} was not pushed", short(url));
    let edited = judged(
        pushed(ctx, &mut conv, &name, |s| body(s, &name) != was).await,
        what,
    );
    conv.finish(ctx.quiet).await;
    let edited = edited?;
    if edited.version == added.version {
        return Err(fail(format!(
            "the edit of {name} was pushed under the same version: {} then {}",
            added.shown, edited.shown
        )));
    }
    Ok(Outcome::Pass(format!(
        "new file pushed as {} v{:?}, its edit as v{:?}",
        short(url),
        added.version,
        edited.version
    )))
}

pub(super) async fn created_pushed(ctx: &mut Ctx, case: Case, stem: &str) -> Step<Outcome> {
    let url = case.type_url;
    let name = own(ctx, "created");
    let mut conv = ctx.conv(case);
    conv.want(url, &[&name]).await.sent("subscribing")?;
    // Whatever the server answers for a name that does not exist yet (nothing, an empty
    // response, a removal) is ACKed; what counts is the push once it exists.
    let _ = conv.quiet(ctx.quiet).await;
    write(ctx, stem, &[of_type(url, &name, 1)])?;
    let what = format!(
        "{} {name} was asked for before it existed; a file creating it was not pushed",
        short(url)
    );
    let created = judged(pushed(ctx, &mut conv, &name, |_| true).await, what);
    conv.finish(ctx.quiet).await;
    Ok(Outcome::Pass(format!(
        "{} {name}, asked for before it existed, came once a file created it: {}",
        short(url),
        created?.shown
    )))
}

pub(super) async fn full_state_pushed(ctx: &mut Ctx, case: Case, stem: &str) -> Step<Outcome> {
    let url = case.type_url;
    let name = own(ctx, "full");
    let mut conv = ctx.conv(case);
    ctx.ask_for(&mut conv, url, &[]).await?;
    let held: Vec<String> = conv
        .last(url)
        .map(|s| s.names().iter().map(|n| n.to_string()).collect())
        .unwrap_or_default();
    write(ctx, stem, &[of_type(url, &name, 1)])?;
    let what = format!("a new file with {} {name}", short(url));
    let added = setup(pushed(ctx, &mut conv, &name, |_| true).await, &what)?;
    let was = body(&added, &name);
    write(ctx, stem, &[of_type(url, &name, 2)])?;
    let what = format!("the edit of {name}");
    let edited = pushed(ctx, &mut conv, &name, |s| body(s, &name) != was).await;
    let edited = setup(edited, &what);
    conv.finish(ctx.quiet).await;
    let edited = edited?;
    let lacking: Vec<&String> = held.iter().filter(|n| !edited.has(n)).collect();
    if !lacking.is_empty() {
        return Err(fail(format!(
            "an edit of {name} alone was pushed without {} the client holds (an LDS/CDS response is the full state): {}",
            super::list(&lacking),
            edited.shown
        )));
    }
    Ok(Outcome::Pass(format!(
        "the edit of {name} came with all {} held: {}",
        held.len(),
        edited.shown
    )))
}

/// name → encoded resource: what a client holds after applying a response.
/// The cluster names `seen` carries: what is compared while a file is broken (bodies may
/// legally change under other edits meanwhile).
fn contents(seen: &Seen) -> BTreeSet<String> {
    seen.names().into_iter().map(str::to_string).collect()
}

/// The body of `name` in `seen`.
fn body(seen: &Seen, name: &str) -> Option<Vec<u8>> {
    let found = seen.resources.iter().find(|r| r.name == name);
    found.and_then(|r| r.body.clone())
}

pub(super) async fn keeps_last_good(ctx: &mut Ctx, case: Case, stem: &str) -> Step<Outcome> {
    let name = own(ctx, "bad");
    let mut conv = ctx.conv(case);
    ctx.ask_for(&mut conv, CLUSTER, &[]).await?;
    write(ctx, stem, &[cluster(&name, 1)])?;
    let good = setup(
        pushed(ctx, &mut conv, &name, |_| true).await,
        format!("a new file with cluster {name}"),
    )?;
    // The reference is what a new stream gets now, not the push: a push may legally hold only
    // part of the state (and a server breaking grouping.2 is judged there, not here).
    let held = fresh_clusters(ctx, case).await?;
    let broken = "{\"version_info\": \"xdsloop-check-broken\", \"resources\": [";
    let fixtures = ctx
        .fixtures
        .as_mut()
        .ok_or_else(|| skip("needs --fixtures"))?;
    fixtures.write_text(stem, broken).map_err(skip)?;
    let quiet = conv.quiet(ctx.quiet).await;
    if let Some(r) = quiet
        .got
        .iter()
        .find(|r| r.type_url == CLUSTER && Some(contents(r)) != held)
    {
        return Err(fail(format!(
            "after {name}'s file became invalid JSON, the server pushed {} (clients held {})",
            r.shown, good.shown
        )));
    }
    let now_held = fresh_clusters(ctx, case).await?;
    if now_held != held {
        return Err(fail(format!(
            "with the invalid file, a new stream got {} instead of the last good {} (what a new stream got before the file broke)",
            fresh_shown(now_held),
            fresh_shown(held)
        )));
    }
    remove(ctx, stem)?;
    let what = format!("removing the invalid file was not pushed ({name} still served)");
    let gone = judged(
        conv.until(CLUSTER, ctx.push_timeout, |s| !s.has(&name))
            .await,
        what,
    );
    conv.finish(ctx.quiet).await;
    Ok(Outcome::Pass(format!(
        "invalid file: nothing pushed in {}, a new stream got the last good {} clusters; its removal came as {}",
        humantime::format_duration(ctx.quiet),
        held.as_ref().map_or(0, BTreeSet::len),
        gone?.shown
    )))
}

/// The clusters a new stream asking for all of them is answered with.
async fn fresh_clusters(ctx: &mut Ctx, case: Case) -> Step<Option<BTreeSet<String>>> {
    let mut fresh = ctx.conv(case);
    let asked = ctx.ask_for(&mut fresh, CLUSTER, &[]).await;
    let held = fresh.last(CLUSTER).map(contents);
    fresh.finish(Duration::ZERO).await;
    asked?;
    Ok(held)
}

fn fresh_shown(held: Option<BTreeSet<String>>) -> String {
    match held {
        Some(held) => format!("{} clusters", held.len()),
        None => "nothing".to_string(),
    }
}
