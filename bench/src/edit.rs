//! Edit to every client ACKed: what a user waits for after saving. New clusters and endpoints
//! files are renamed into place on a server with its default settings; the time runs from the
//! first rename until each node has ACKed both new versions (file event, debounce, reload,
//! push, and the fleet's ACKs all included).

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;
use xdsloop_client::Variant;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use crate::cell::{all_hold, ms, percentile, synced_fleet, wait};
use crate::extras::median;
use crate::fixtures::FixtureSet;
use crate::server::{ServerProcess, load_average};

/// One run, in milliseconds from the first rename; per node, the later of its two ACKs.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct EditRun {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The first response with a new version reached any node: file event, debounce and
    /// reload, before the fan-out.
    pub first_byte_ms: f64,
    /// The 1-minute load average when the run started (other work on the machine).
    pub load_average: f64,
}

/// Every run and the field-wise medians.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct EditToAcked {
    pub nodes: usize,
    pub clusters: usize,
    pub endpoints: usize,
    pub median: EditRun,
    pub runs: Vec<EditRun>,
}

/// `runs` runs, each on a fresh server and fleet.
pub(crate) async fn edit_to_all_acked(
    binary: &Path,
    nodes: usize,
    clusters: usize,
    endpoints: usize,
    runs: usize,
) -> Result<EditToAcked, String> {
    let mut all = Vec::new();
    for run in 1..=runs {
        eprintln!("  edit to all ACKed: N={nodes} C={clusters} E={endpoints} run {run}/{runs}");
        all.push(one_run(binary, nodes, clusters, endpoints).await?);
    }
    let m = |f: fn(&EditRun) -> f64| median(all.iter().map(f).collect());
    Ok(EditToAcked {
        nodes,
        clusters,
        endpoints,
        median: EditRun {
            p50_ms: m(|r| r.p50_ms),
            p99_ms: m(|r| r.p99_ms),
            max_ms: m(|r| r.max_ms),
            first_byte_ms: m(|r| r.first_byte_ms),
            load_average: m(|r| r.load_average),
        },
        runs: all,
    })
}

async fn one_run(
    binary: &Path,
    nodes: usize,
    clusters: usize,
    endpoints: usize,
) -> Result<EditRun, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut set =
        FixtureSet::generate(dir.path(), clusters, endpoints).map_err(|e| e.to_string())?;
    let server = ServerProcess::start(binary, dir.path(), &[])?;
    let fleet = synced_fleet(&server, nodes, Variant::Sotw).await?;
    let before = fleet.progress();
    let old = [CLUSTER, ENDPOINT].map(|t| all_hold(&before, t, nodes).expect("synced"));
    let load_average = load_average();
    let renamed = set
        .rename_new_files_into_place()
        .map_err(|e| e.to_string())?;
    let after = wait(&fleet, "every node to ACK the edit", |p| {
        [CLUSTER, ENDPOINT]
            .iter()
            .zip(&old)
            .all(|(t, old)| all_hold(p, t, nodes).is_some_and(|v| &v != old))
    })
    .await?;
    let report = fleet.report();
    // Per node, the later of its CDS and EDS ACKs.
    let mut last: HashMap<usize, f64> = HashMap::new();
    let mut first_byte = f64::MAX;
    for t in [CLUSTER, ENDPOINT] {
        let version = all_hold(&after, t, nodes).expect("checked");
        let row = report.version(t, &version).expect("a row per version");
        if let Some(seen) = row.first_seen {
            first_byte = first_byte.min(ms(seen.saturating_duration_since(renamed)));
        }
        for (node, at) in &row.change_acks {
            let took = ms(at.saturating_duration_since(renamed));
            let slot = last.entry(*node).or_default();
            *slot = slot.max(took);
        }
    }
    fleet.stop().await;
    server.stop();
    let mut times: Vec<f64> = last.into_values().collect();
    times.sort_by(f64::total_cmp);
    Ok(EditRun {
        p50_ms: percentile(&times, 0.5),
        p99_ms: percentile(&times, 0.99),
        max_ms: percentile(&times, 1.0),
        first_byte_ms: first_byte,
        load_average,
    })
}
