//! One matrix cell, one run: generate fixtures, start the server binary, connect a fleet,
//! wait for first config, edit one endpoint resource, wait until every node ACKed it.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use xdsloop_client::Variant;
use xdsloop_client::fleet::{Fleet, FleetConfig, Progress};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use crate::fixtures::FixtureSet;
use crate::server::{ServerProcess, own_cpu_seconds};
use crate::tls::Certs;

/// The longest any one wait may take before the run is declared failed.
pub(crate) const WAIT: Duration = Duration::from_secs(900);

/// What one run measured. Times in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct CellRun {
    pub first_config_p50_ms: f64,
    pub first_config_max_ms: f64,
    /// Fixture write → each node ACKed the new EDS version.
    pub push_p50_ms: f64,
    pub push_max_ms: f64,
    /// Fixture write → the first response carrying the new version reached any node.
    pub write_to_first_byte_ms: f64,
    /// Server CPU from the fleet's start until every node ACKed the edit.
    pub server_cpu_s: f64,
    /// The fleet's (this process's) CPU over the same time: the load generator's cost.
    pub fleet_cpu_s: f64,
    /// The same per simulated node, in milliseconds: what each machine of a sharded fleet
    /// pays per node it simulates (docs/fleet.md).
    pub fleet_cpu_per_node_ms: f64,
    pub server_peak_rss_mb: f64,
    /// gRPC message bytes the fleet received: initial sync, then the push.
    pub initial_bytes: u64,
    pub push_bytes: u64,
    pub nacks: u64,
    pub reconnects: u64,
    /// The 1-minute load average when the run started (other work on the machine).
    pub load_average: f64,
}

/// Waits on the fleet, printing its progress line every few seconds.
pub(crate) async fn wait(
    fleet: &Fleet,
    what: &str,
    mut done: impl FnMut(&Progress) -> bool,
) -> Result<Progress, String> {
    let mut last = Instant::now();
    let outcome = fleet
        .wait_until(WAIT, |p| {
            if last.elapsed() >= Duration::from_secs(3) {
                last = Instant::now();
                eprintln!("    {}", fleet.report().progress_line());
            }
            done(p)
        })
        .await;
    outcome.map_err(|p| format!("timed out waiting for {what}: {p:?}"))
}

/// Every node holds one and the same version of `type_url`; returns it.
pub(crate) fn all_hold(p: &Progress, type_url: &str, nodes: usize) -> Option<String> {
    p.majority(type_url)
        .filter(|(_, holding)| *holding == nodes)
        .map(|(v, _)| v.to_string())
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs one cell once; over TLS with `tls` (the server's certificate, the fleet trusting it).
pub(crate) async fn run(
    binary: &Path,
    nodes: usize,
    clusters: usize,
    endpoints: usize,
    tls: Option<&Certs>,
) -> Result<CellRun, String> {
    let load_average = crate::server::load_average();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut set =
        FixtureSet::generate(dir.path(), clusters, endpoints).map_err(|e| e.to_string())?;
    let server_args = tls.map(Certs::server_args).unwrap_or_default();
    let server = ServerProcess::start(binary, dir.path(), &server_args)?;
    let cpu_before = server.cpu_seconds();
    let fleet_cpu_before = own_cpu_seconds();
    let mut config = FleetConfig::new(server.addr.to_string(), nodes);
    config.tls = tls.map(Certs::client).transpose()?;
    let fleet = Fleet::start(config).map_err(|e| e.to_string())?;
    let synced = wait(&fleet, "first config on every node", |p| {
        p.configured == nodes
            && all_hold(p, CLUSTER, nodes).is_some()
            && all_hold(p, ENDPOINT, nodes).is_some()
    })
    .await?;
    let first = fleet.report();
    let old = all_hold(&synced, ENDPOINT, nodes).expect("checked");

    let written = Instant::now();
    set.edit_one_endpoint().map_err(|e| e.to_string())?;
    let pushed = wait(&fleet, "every node to ACK the edit", |p| {
        all_hold(p, ENDPOINT, nodes).is_some_and(|v| v != old)
    })
    .await?;
    let cpu_after = server.cpu_seconds();
    let fleet_cpu = own_cpu_seconds() - fleet_cpu_before;
    let new = all_hold(&pushed, ENDPOINT, nodes).expect("checked");
    let after = fleet.report();
    let row = after.version(ENDPOINT, &new).expect("a row per version");
    let mut push: Vec<f64> = (row.change_acks.iter())
        .map(|(_, at)| ms(at.saturating_duration_since(written)))
        .collect();
    push.sort_by(f64::total_cmp);
    let run = CellRun {
        first_config_p50_ms: first.first_config.p50_ms,
        first_config_max_ms: first.first_config.max_ms,
        push_p50_ms: percentile(&push, 0.5),
        push_max_ms: percentile(&push, 1.0),
        write_to_first_byte_ms: row
            .first_seen
            .map_or(0.0, |at| ms(at.saturating_duration_since(written))),
        server_cpu_s: cpu_after - cpu_before,
        fleet_cpu_s: fleet_cpu,
        fleet_cpu_per_node_ms: fleet_cpu * 1000.0 / nodes as f64,
        server_peak_rss_mb: server.peak_rss_bytes() as f64 / (1024.0 * 1024.0),
        initial_bytes: first.bytes_received,
        push_bytes: after.bytes_received - first.bytes_received,
        nacks: after.nacks,
        reconnects: after.reconnects,
        load_average,
    };
    fleet.stop().await;
    server.stop();
    Ok(run)
}

/// Nearest-rank percentile of sorted values.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// A fleet of `nodes` in `mode` on `server`, synced (every node configured).
pub(crate) async fn synced_fleet(
    server: &ServerProcess,
    nodes: usize,
    mode: Variant,
) -> Result<Fleet, String> {
    let mut config = FleetConfig::new(server.addr.to_string(), nodes);
    config.mode = mode;
    let fleet = Fleet::start(config).map_err(|e| e.to_string())?;
    wait(&fleet, "first config on every node", |p| {
        p.configured == nodes && all_hold(p, ENDPOINT, nodes).is_some()
    })
    .await?;
    Ok(fleet)
}
