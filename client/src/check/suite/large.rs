//! xdsloop.large-responses: responses far above gRPC's 4 MiB default arrive whole. No
//! sentence of the spec sets a size; large fleets need it all the same.
//!
//! The suite writes four clusters of 1.6 MB each (every one alone under 4 MiB, the CDS
//! response about 6.4 MB).

use xdsloop_proto::type_url::CLUSTER;

use super::edit::{own, write};
use super::resources::large_cluster;
use super::{Ctx, Step, judged, setup};
use crate::check::case::Case;
use crate::check::report::Outcome;

const CLUSTERS: usize = 4;
const CLUSTER_BYTES: usize = 1_600_000;

fn mb(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

pub(super) async fn large(ctx: &mut Ctx, case: Case, stem: &str) -> Step<Outcome> {
    let names: Vec<String> = (1..=CLUSTERS)
        .map(|i| own(ctx, &format!("large-{i}")))
        .collect();
    let mut conv = ctx.conv(case);
    ctx.ask_for(&mut conv, CLUSTER, &[]).await?;
    // First a small file: a server that pushes no edit at all is judged elsewhere
    // (resource-not-existed.3), not here.
    let small = own(ctx, "large-probe");
    write(ctx, stem, &[large_cluster(&small, 10)])?;
    let what = format!("a new file with cluster {small}");
    setup(
        conv.until(CLUSTER, ctx.push_timeout, |s| s.has(&small))
            .await,
        what,
    )?;
    let clusters: Vec<_> = names
        .iter()
        .map(|n| large_cluster(n, CLUSTER_BYTES))
        .collect();
    write(ctx, stem, &clusters)?;
    // The large push is also encoded, sent and decoded, megabytes each way: twice the time an
    // edit's push may take.
    let all = conv
        .until(CLUSTER, ctx.push_timeout * 2, |s| {
            names.iter().all(|n| s.has(n))
        })
        .await;
    conv.finish(ctx.quiet).await;
    let what = format!(
        "{CLUSTERS} clusters of {} (a cds response of about {}) did not arrive",
        mb(CLUSTER_BYTES),
        mb(CLUSTERS * CLUSTER_BYTES)
    );
    let seen = judged(all, what)?;
    let bytes: usize = seen
        .resources
        .iter()
        .filter_map(|r| r.body.as_ref())
        .map(Vec::len)
        .sum();
    Ok(Outcome::Pass(format!(
        "a cds response of {} ({CLUSTERS} clusters of {}) arrived whole",
        mb(bytes),
        mb(CLUSTER_BYTES)
    )))
}
