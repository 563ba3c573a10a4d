//! Make before break on ADS (eventual-consistency.*): one fixture file adds a cluster `x`,
//! its endpoints, a listener `y` and its route (which sends traffic to `x`), so the server
//! sees one update. The client already asks for endpoints `x` and route `y` (they do not exist
//! yet), so nothing but the server's order decides what comes first. The additions must come
//! CDS, EDS, LDS, RDS: "CDS updates (if any) must always be pushed first", "EDS updates ...
//! after CDS updates for the respective clusters", "LDS updates ... after corresponding
//! CDS/EDS updates", "RDS updates related to the newly added listeners ... after
//! CDS/EDS/LDS updates", and a route only after the cluster it references.
//!
//! The spec sets no order for removals ("Stale CDS clusters and related EDS endpoints ... can
//! then be removed"), so the deletion is not judged.

use std::collections::BTreeMap;

use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use super::edit::{own, write};
use super::resources::{cluster, endpoints, listener, route};
use super::{Ctx, Sent, Step, fail, setup, short, type_names};
use crate::check::case::Case;
use crate::check::report::Outcome;

/// The order the additions must take, each with the sentence a reversal breaks.
const AFTER: &[(&str, &str, &str)] = &[
    (ENDPOINT, CLUSTER, "eventual-consistency.3"),
    (LISTENER, CLUSTER, "eventual-consistency.4"),
    (LISTENER, ENDPOINT, "eventual-consistency.4"),
    (ROUTE, LISTENER, "eventual-consistency.5"),
    (ROUTE, CLUSTER, "eventual-consistency.7"),
];

pub(super) async fn make_before_break(ctx: &mut Ctx, case: Case, stem: &str) -> Step<Outcome> {
    let (x, y) = (own(ctx, "mbb-cluster"), own(ctx, "mbb-listener"));
    let mut conv = ctx.conv(case);
    ctx.ask_for(&mut conv, CLUSTER, &[]).await?;
    ctx.ask_for(&mut conv, LISTENER, &[]).await?;
    for (url, new) in [(ENDPOINT, &x), (ROUTE, &y)] {
        let mut names = type_names(ctx, url);
        names.push(new.clone());
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        conv.want(url, &names).await.sent(short(url))?;
    }
    let _ = conv.quiet(ctx.quiet).await;
    let resources = [
        cluster(&x, 1),
        endpoints(&x, 10003),
        listener(&y, &y, 10004),
        route(&y, &x),
    ];
    write(ctx, stem, &resources)?;
    let mut arrived: BTreeMap<&str, usize> = BTreeMap::new();
    let mut shown = Vec::new();
    let mut position = 0;
    let name_of = |url: &str| {
        if url == CLUSTER || url == ENDPOINT {
            x.clone()
        } else {
            y.clone()
        }
    };
    let all = loop {
        let next = conv.until_any(ctx.push_timeout).await;
        let seen = match next {
            Ok(seen) => seen,
            Err(miss) => break Err(miss),
        };
        position += 1;
        for url in [CLUSTER, ENDPOINT, LISTENER, ROUTE] {
            if seen.type_url == url && seen.has(&name_of(url)) {
                arrived.entry(url).or_insert(position);
                shown.push(seen.shown.clone());
            }
        }
        if arrived.len() == 4 {
            break Ok(());
        }
    };
    conv.finish(ctx.quiet).await;
    let what = format!(
        "cluster {x}, its endpoints, listener {y} and route {y} (one new file) did not all arrive (their arrival is resource-not-existed.3's and proto.delta-request.4's to judge)"
    );
    setup(
        all.map_err(|mut miss| {
            miss.before.clear();
            miss
        }),
        what,
    )?;
    for (later, earlier, sentence) in AFTER {
        if arrived[later] < arrived[earlier] {
            return Err(fail(format!(
                "{} arrived before {} ({sentence}): {}",
                short(later),
                short(earlier),
                shown.join("; ")
            )));
        }
    }
    Ok(Outcome::Pass(format!(
        "added in order: {}",
        shown.join("; ")
    )))
}
