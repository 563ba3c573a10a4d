//! S13: responses far above gRPC's 4 MiB default arrive whole.
//!
//! With `--fixtures` the suite writes four clusters of 1.6 MB each (every one alone under
//! 4 MiB, the CDS response about 6.4 MB); without, a server whose own CDS response is above
//! 4 MiB (seen while learning the inventory) passes, others SKIP.

use xdsloop_proto::type_url::CLUSTER;

use super::edit::{clean_up, own, wait_cds, write};
use super::resources::{body, large_cluster};
use super::{Ctx, Step, fail, skip};
use crate::check::report::Outcome;

/// gRPC's default maximum message size.
const GRPC_DEFAULT: usize = 4 * 1024 * 1024;
const CLUSTERS: usize = 4;
const CLUSTER_BYTES: usize = 1_600_000;

fn mb(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

pub(super) async fn large(ctx: &mut Ctx) -> Step<Outcome> {
    if ctx.fixtures.is_none() {
        let bytes = ctx.inv.cds_bytes;
        if bytes > GRPC_DEFAULT {
            return Ok(Outcome::Pass(format!(
                "the wildcard CDS response of {} arrived whole",
                mb(bytes)
            )));
        }
        return Err(skip(format!(
            "needs --fixtures DIR (to write {} of clusters), or a server whose CDS response is above 4 MiB (this one's: {} bytes)",
            mb(CLUSTERS * CLUSTER_BYTES),
            bytes
        )));
    }
    let names: Vec<String> = (1..=CLUSTERS)
        .map(|i| own(ctx, &format!("large-{i}")))
        .collect();
    let mut p = ctx.sotw();
    ctx.ask(&mut p, CLUSTER, &[]).await?;
    let clusters: Vec<_> = names
        .iter()
        .map(|n| large_cluster(n, CLUSTER_BYTES))
        .collect();
    write(ctx, "large", &clusters)?;
    let all = |r: &_| names.iter().all(|n| body(&ctx.codec, r, n).is_some());
    let outcome = match wait_cds(ctx, &mut p, all).await {
        Ok(r) => Ok(Outcome::Pass(format!(
            "a cds response of {} ({CLUSTERS} clusters of {}) arrived whole",
            mb(prost::Message::encoded_len(&r)),
            mb(CLUSTER_BYTES)
        ))),
        Err(e) => Err(fail(format!(
            "{CLUSTERS} clusters of {} (a cds response of about {}) did not arrive: {e}",
            mb(CLUSTER_BYTES),
            mb(CLUSTERS * CLUSTER_BYTES)
        ))),
    };
    clean_up(ctx, "large", &names[0]).await;
    outcome
}
