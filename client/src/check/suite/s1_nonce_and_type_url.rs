//! S1: every response carries a fresh nonce and the right type URLs.
//!
//! One scripted session per variant gathers responses of several types, with more than one
//! EDS response per stream (widening the EDS names is answered again); both checks judge what
//! it gathered. A silent step only means fewer responses to judge.

use std::collections::BTreeMap;

use xdsloop_proto::discovery::{DeltaDiscoveryResponse, DiscoveryResponse};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER};

use super::{Ctx, Step, fail};
use crate::check::describe;
use crate::check::report::Outcome;

/// The responses of both sessions, each with the type its request asked for.
struct Seen {
    sotw: Vec<(&'static str, DiscoveryResponse)>,
    delta: Vec<(&'static str, DeltaDiscoveryResponse)>,
}

impl Seen {
    fn count(&self) -> usize {
        self.sotw.len() + self.delta.len()
    }
}

async fn session(ctx: &Ctx) -> Seen {
    let real = ctx.inv.endpoints.first().cloned();
    let first = real.unwrap_or_else(|| ctx.missing("s1-a"));
    let second = ctx.missing("s1-b");
    let delta = match ctx.no_delta {
        Some(_) => Vec::new(),
        None => delta_session(ctx, &first, &second).await,
    };
    Seen {
        sotw: sotw_session(ctx, &first, &second).await,
        delta,
    }
}

async fn sotw_session(
    ctx: &Ctx,
    first: &str,
    second: &str,
) -> Vec<(&'static str, DiscoveryResponse)> {
    let mut sotw = Vec::new();
    let mut p = ctx.sotw();
    let steps: [(&'static str, Vec<&str>); 4] = [
        (CLUSTER, vec![]),
        (LISTENER, vec![]),
        (ENDPOINT, vec![first]),
        (ENDPOINT, vec![first, second]),
    ];
    for (url, names) in steps {
        let nonce = last_nonce(&sotw, url);
        let version = sotw.iter().rev().find(|(u, _)| *u == url);
        let version = version.map(|(_, r): &(_, DiscoveryResponse)| r.version_info.clone());
        let sent = p
            .request(url, &names, &version.unwrap_or_default(), &nonce)
            .await;
        if sent.is_err() {
            break;
        }
        if let Ok(response) = p.recv(ctx.timeout).await {
            let _ = p.ack(&response).await;
            sotw.push((url, response));
        }
    }
    sotw
}

async fn delta_session(
    ctx: &Ctx,
    first: &str,
    second: &str,
) -> Vec<(&'static str, DeltaDiscoveryResponse)> {
    let mut delta = Vec::new();
    let mut p = ctx.delta();
    let steps: [(&'static str, Vec<&str>); 3] = [
        (CLUSTER, vec![]),
        (ENDPOINT, vec![first]),
        (ENDPOINT, vec![second]),
    ];
    for (url, names) in steps {
        if p.change(url, &names, &[]).await.is_err() {
            break;
        }
        if let Ok(response) = p.recv(ctx.timeout).await {
            let _ = p.ack(&response).await;
            delta.push((url, response));
        }
    }
    delta
}

fn last_nonce(seen: &[(&str, DiscoveryResponse)], url: &str) -> String {
    let last = seen.iter().rev().find(|(u, _)| *u == url);
    last.map(|(_, r)| r.nonce.clone()).unwrap_or_default()
}

pub(super) async fn nonce_fresh(ctx: &mut Ctx) -> Step<Outcome> {
    let seen = session(ctx).await;
    let sotw = seen
        .sotw
        .iter()
        .map(|(_, r)| (&r.type_url, &r.nonce, ctx.show(r)));
    judge_nonces("SotW", sotw)?;
    let delta = seen
        .delta
        .iter()
        .map(|(_, r)| (&r.type_url, &r.nonce, describe::delta(r)));
    judge_nonces("Delta", delta)?;
    if seen.count() == 0 {
        return Err(fail("no response on a SotW or a Delta stream to judge"));
    }
    Ok(Outcome::Pass(format!(
        "{} SotW and {}, each with a nonce not used before for its type",
        seen.sotw.len(),
        delta_count(ctx, &seen)
    )))
}

/// Fails on an empty nonce or one repeated within a type (nonces are per type on ADS).
fn judge_nonces<'a>(
    variant: &str,
    responses: impl Iterator<Item = (&'a String, &'a String, String)>,
) -> Step<()> {
    let mut used: BTreeMap<(&String, &String), String> = BTreeMap::new();
    for (url, nonce, shown) in responses {
        if nonce.is_empty() {
            return Err(fail(format!(
                "{variant}: a response without a nonce: {shown}"
            )));
        }
        if let Some(first) = used.insert((url, nonce), shown.clone()) {
            return Err(fail(format!(
                "{variant}: nonce {nonce:?} sent twice for {} on one stream: {first}; then {shown}",
                describe::short(url)
            )));
        }
    }
    Ok(())
}

pub(super) async fn type_url(ctx: &mut Ctx) -> Step<Outcome> {
    let seen = session(ctx).await;
    for (asked, r) in &seen.sotw {
        let anys = r.resources.iter().map(|a| a.type_url.as_str());
        judge_types(asked, &r.type_url, anys, || ctx.show(r))?;
    }
    for (asked, r) in &seen.delta {
        let anys = r.resources.iter().filter_map(|w| w.resource.as_ref());
        let anys = anys.map(|a| a.type_url.as_str());
        judge_types(asked, &r.type_url, anys, || describe::delta(r))?;
    }
    if seen.count() == 0 {
        return Err(fail("no response on a SotW or a Delta stream to judge"));
    }
    Ok(Outcome::Pass(format!(
        "{} SotW and {}: each of the type asked for, every resource's Any of that type",
        seen.sotw.len(),
        delta_count(ctx, &seen)
    )))
}

/// `3 Delta responses`, or that Delta was not served.
fn delta_count(ctx: &Ctx, seen: &Seen) -> String {
    match ctx.no_delta {
        Some(_) => "no Delta responses (Delta not served, see the NOTE)".to_string(),
        None => format!("{} Delta responses", seen.delta.len()),
    }
}

fn judge_types<'a>(
    asked: &str,
    answered: &str,
    anys: impl Iterator<Item = &'a str>,
    shown: impl Fn() -> String,
) -> Step<()> {
    if answered != asked {
        return Err(fail(format!(
            "a {} request was answered with type_url {answered:?}: {}",
            describe::short(asked),
            shown()
        )));
    }
    for (i, any) in anys.enumerate() {
        if any != answered {
            return Err(fail(format!(
                "resource #{} has Any type_url {any:?} in a {answered:?} response: {}",
                i + 1,
                shown()
            )));
        }
    }
    Ok(())
}
