//! The single-number measurements beside the matrix: reload of a 10,000-resource directory,
//! Delta bytes for a one-resource change, `/status` with 1,000 streams.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use xdsloop_client::Variant;
use xdsloop_proto::Codec;
use xdsloop_proto::type_url::ENDPOINT;

use crate::cell::{all_hold, ms, synced_fleet, wait};
use crate::fixtures::FixtureSet;
use crate::server::{ServerProcess, supports_flag};

/// 10,000 resources: 5,000 clusters and their 5,000 endpoint sets.
pub(crate) const BIG_CLUSTERS: usize = 5_000;

/// Median of the values (the lower middle for an even count).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[(values.len() - 1) / 2]
}

/// Reloads of a 10,000-resource directory, medians of `runs`: `(full, one_file)`. `full` decodes
/// every file (the first load, or a loader that kept nothing); `one_file` is the server's reload
/// after one file changed (its [`Loader`] decodes only that file, then checks the whole set).
///
/// [`Loader`]: xdsloop_server::fixtures::Loader
pub(crate) fn reload_10k(endpoints: usize, runs: usize) -> Result<(f64, f64), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut set =
        FixtureSet::generate(dir.path(), BIG_CLUSTERS, endpoints).map_err(|e| e.to_string())?;
    let codec = Codec::envoy();
    let check = |loaded: Result<xdsloop_server::Snapshot, _>| match loaded {
        Ok(s) if s.resource_count() == BIG_CLUSTERS * 2 => Ok(()),
        Ok(s) => Err(format!("reload loaded {} resources", s.resource_count())),
        Err(e) => Err(format!("reload: {e}")),
    };
    let (mut full, mut one_file) = (Vec::new(), Vec::new());
    // Run 0 is unmeasured: it warms the page cache, as a long-running server's reloads would be.
    for run in 0..=runs {
        let mut loader = xdsloop_server::fixtures::Loader::default();
        let start = Instant::now();
        check(loader.load(dir.path(), &codec, 1))?;
        let took = start.elapsed();
        set.edit_one_endpoint().map_err(|e| e.to_string())?;
        let start = Instant::now();
        check(loader.load(dir.path(), &codec, 2))?;
        if run > 0 {
            full.push(ms(took));
            one_file.push(ms(start.elapsed()));
        }
    }
    Ok((median(full), median(one_file)))
}

#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct DeltaChange {
    pub nodes: usize,
    pub resources: usize,
    /// gRPC message bytes each node received for the one-resource change.
    pub bytes_per_client: f64,
    /// The changed resource's protobuf encoding.
    pub resource_bytes: usize,
    pub ratio: f64,
    /// Fixture write → the last node ACKed it.
    pub push_max_ms: f64,
    pub server_peak_rss_mb: f64,
}

/// A Delta fleet of `nodes` on `clusters` clusters and their endpoints; one endpoint resource
/// changes.
pub(crate) async fn delta_one_change(
    binary: &Path,
    nodes: usize,
    clusters: usize,
    endpoints: usize,
) -> Result<DeltaChange, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut set =
        FixtureSet::generate(dir.path(), clusters, endpoints).map_err(|e| e.to_string())?;
    let server = ServerProcess::start(binary, dir.path(), &[])?;
    let fleet = synced_fleet(&server, nodes, Variant::Delta).await?;
    let before = fleet.progress();
    let old = all_hold(&before, ENDPOINT, nodes).expect("synced");
    let written = Instant::now();
    let json = set.edit_one_endpoint().map_err(|e| e.to_string())?;
    let after = wait(&fleet, "every Delta node to ACK the edit", |p| {
        all_hold(p, ENDPOINT, nodes).is_some_and(|v| v != old)
    })
    .await?;
    let new = all_hold(&after, ENDPOINT, nodes).expect("checked");
    let report = fleet.report();
    let acks = &report.version(ENDPOINT, &new).expect("a row").change_acks;
    let last = acks.iter().map(|(_, at)| *at).max().unwrap_or(written);
    let push_max_ms = ms(last.saturating_duration_since(written));
    let value: serde_json::Value = serde_json::from_str(&json).map_err(|e| e.to_string())?;
    let resource = Codec::envoy()
        .encode_resource(&value, "edited resource")
        .map_err(|e| e.to_string())?;
    let bytes_per_client = (after.bytes - before.bytes) as f64 / nodes as f64;
    let server_peak_rss_mb = server.peak_rss_bytes() as f64 / (1024.0 * 1024.0);
    fleet.stop().await;
    server.stop();
    Ok(DeltaChange {
        nodes,
        resources: set.resource_count(),
        bytes_per_client,
        resource_bytes: resource.bytes.len(),
        ratio: bytes_per_client / resource.bytes.len() as f64,
        push_max_ms,
        server_peak_rss_mb,
    })
}

#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct StatusTiming {
    pub streams: usize,
    pub p50_ms: f64,
    pub bytes: usize,
}

/// `GET /status` on a server with `streams` open SotW streams, median of `runs`. `Ok(None)`
/// when the server has no admin endpoint.
pub(crate) async fn status_with_streams(
    binary: &Path,
    streams: usize,
    clusters: usize,
    endpoints: usize,
    runs: usize,
) -> Result<Option<StatusTiming>, String> {
    if !supports_flag(binary, "--admin") {
        return Ok(None);
    }
    let admin = free_port()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    FixtureSet::generate(dir.path(), clusters, endpoints).map_err(|e| e.to_string())?;
    let extra = ["--admin".to_string(), admin.to_string()];
    let server = ServerProcess::start(binary, dir.path(), &extra)?;
    let fleet = synced_fleet(&server, streams, Variant::Sotw).await?;
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let body = http_get(admin, "/status").await?;
        times.push(ms(start.elapsed()));
        bytes = body.len();
    }
    fleet.stop().await;
    server.stop();
    Ok(Some(StatusTiming {
        streams,
        p50_ms: median(times),
        bytes,
    }))
}

pub(crate) fn free_port() -> Result<SocketAddr, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener.local_addr().map_err(|e| e.to_string())
}

/// A minimal HTTP/1.1 GET (the bench needs no HTTP client library for one request).
async fn http_get(addr: SocketAddr, path: &str) -> Result<Vec<u8>, String> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let io = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        Ok::<_, std::io::Error>(response)
    };
    let response = tokio::time::timeout(Duration::from_secs(60), io)
        .await
        .map_err(|_| format!("GET {path} timed out"))?
        .map_err(|e| format!("GET {path}: {e}"))?;
    let text = String::from_utf8_lossy(&response);
    if !text.starts_with("HTTP/1.1 200") {
        let status = text.lines().next().unwrap_or("");
        return Err(format!("GET {path}: {status}"));
    }
    Ok(response)
}
