//! What `--record FILE` costs the xDS side: a fleet of N SotW streams, one endpoint
//! edit pushed to all of them, on a server without `--record` and then on one with it, medians,
//! plus how much transcript the sync and each push wrote. Numbers only, no verdict.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use xdsloop_client::Variant;

use crate::cell::synced_fleet;
use crate::extras::median;
use crate::fixtures::FixtureSet;
use crate::page::{PushCost, push};
use crate::server::{ServerProcess, supports_flag};

#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct RecordCost {
    pub streams: usize,
    pub clusters: usize,
    pub off: PushCost,
    pub on: PushCost,
    /// Transcript bytes once every node had its first config (opens, subscriptions, pushes,
    /// ACKs of the whole fleet).
    pub sync_bytes: u64,
    /// Transcript bytes one push to every node added (the push and its ACK, per stream).
    /// `on.server_cpu_ms` runs until the transcript stopped growing (the recorder's writes).
    pub bytes_per_push: f64,
}

/// `Ok(None)` when the server has no `--record`.
pub(crate) async fn record_cost(
    binary: &Path,
    streams: usize,
    clusters: usize,
    endpoints: usize,
    runs: usize,
) -> Result<Option<RecordCost>, String> {
    if !supports_flag(binary, "--record") {
        return Ok(None);
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let fixtures = dir.path().join("fixtures");
    let transcript = dir.path().join("run.jsonl");
    let mut set =
        FixtureSet::generate(&fixtures, clusters, endpoints).map_err(|e| e.to_string())?;
    let mut off = Vec::new();
    {
        let server = ServerProcess::start(binary, &fixtures, &[])?;
        let fleet = synced_fleet(&server, streams, Variant::Sotw).await?;
        for _ in 0..runs {
            off.push(push(&server, &fleet, &mut set, streams).await?);
        }
        fleet.stop().await;
        server.stop();
    }
    let extra = ["--record".to_string(), transcript.display().to_string()];
    let server = ServerProcess::start(binary, &fixtures, &extra)?;
    let fleet = synced_fleet(&server, streams, Variant::Sotw).await?;
    let sync_bytes = settled_size(&transcript).await;
    let (mut on, mut per_push) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let before = settled_size(&transcript).await;
        let cpu = server.cpu_seconds();
        let mut cost = push(&server, &fleet, &mut set, streams).await?;
        per_push.push((settled_size(&transcript).await - before) as f64);
        // The recorder writes on its own thread after the ACKs: its CPU counts too.
        cost.server_cpu_ms = (server.cpu_seconds() - cpu) * 1000.0;
        on.push(cost);
    }
    fleet.stop().await;
    server.stop();
    let summary = |costs: &[PushCost]| PushCost {
        push_max_ms: median(costs.iter().map(|c| c.push_max_ms).collect()),
        server_cpu_ms: median(costs.iter().map(|c| c.server_cpu_ms).collect()),
    };
    Ok(Some(RecordCost {
        streams,
        clusters,
        off: summary(&off),
        on: summary(&on),
        sync_bytes,
        bytes_per_push: median(per_push),
    }))
}

/// The file's size once it stopped growing (the recorder writes within 100 ms of an event),
/// or after 5 s.
async fn settled_size(path: &Path) -> u64 {
    let size = || std::fs::metadata(path).map_or(0, |m| m.len());
    let give_up = Instant::now() + Duration::from_secs(5);
    let mut last = size();
    while Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = size();
        if now == last && now > 0 {
            break;
        }
        last = now;
    }
    last
}
