//! What load on the admin side costs the xDS side: a fleet of N SotW streams, one endpoint
//! edit pushed to all of them, first with nobody reading the admin routes, then with 25 loops
//! polling `/status` as fast as it answers and 25 open `/events` streams (the page's grid),
//! medians. The aim is pushes within about 1.5x of their unloaded time; this prints the
//! numbers, the verdict is the reader's (docs/performance.md).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;
use xdsloop_client::Variant;

use crate::cell::synced_fleet;
use crate::extras::{free_port, median};
use crate::fixtures::FixtureSet;
use crate::page::{PushCost, push};
use crate::server::{ServerProcess, supports_flag};

/// Readers of each kind.
pub(crate) const POLLERS: usize = 25;
pub(crate) const PAGES: usize = 25;

#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct AdminLoad {
    pub streams: usize,
    pub clusters: usize,
    pub unloaded: PushCost,
    pub loaded: PushCost,
    /// `/status` answers the pollers got while loaded, per second, and their p50 latency.
    pub status_per_second: f64,
    pub status_p50_ms: f64,
    /// The server's peak RSS, the loaded pushes included.
    pub peak_rss_mib: f64,
}

/// The admin readers, counting what they get.
struct Load {
    tasks: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    answers: Arc<AtomicU64>,
    latencies: Arc<std::sync::Mutex<Vec<f64>>>,
}

impl Load {
    async fn start(admin: SocketAddr) -> Result<Self, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let answers = Arc::new(AtomicU64::new(0));
        let latencies = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for _ in 0..PAGES {
            let mut stream = tokio::net::TcpStream::connect(admin)
                .await
                .map_err(|e| format!("/events: {e}"))?;
            let request = format!(
                "GET /events HTTP/1.1\r\nHost: {admin}\r\nAccept: text/event-stream\r\n\r\n"
            );
            stream
                .write_all(request.as_bytes())
                .await
                .map_err(|e| format!("/events: {e}"))?;
            tasks.push(tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                while matches!(stream.read(&mut buffer).await, Ok(n) if n > 0) {}
            }));
        }
        for _ in 0..POLLERS {
            let (stop, answers, latencies) = (stop.clone(), answers.clone(), latencies.clone());
            tasks.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let asked = Instant::now();
                    if get_status(admin).await.is_err() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                    answers.fetch_add(1, Ordering::Relaxed);
                    let took = asked.elapsed().as_secs_f64() * 1000.0;
                    latencies.lock().unwrap().push(took);
                }
            }));
        }
        Ok(Self {
            tasks,
            stop,
            answers,
            latencies,
        })
    }

    fn stop(self) -> (u64, Vec<f64>) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.abort();
        }
        let latencies = std::mem::take(&mut *self.latencies.lock().unwrap());
        (self.answers.load(Ordering::Relaxed), latencies)
    }
}

/// One `GET /status` to the end of its body (HTTP/1.0: the server closes after it).
async fn get_status(admin: SocketAddr) -> std::io::Result<usize> {
    let mut stream = tokio::net::TcpStream::connect(admin).await?;
    let request = format!("GET /status HTTP/1.0\r\nHost: {admin}\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut body = Vec::new();
    stream.read_to_end(&mut body).await?;
    Ok(body.len())
}

/// `Ok(None)` when the server has no admin endpoint.
pub(crate) async fn admin_load(
    binary: &Path,
    streams: usize,
    clusters: usize,
    endpoints: usize,
    runs: usize,
) -> Result<Option<AdminLoad>, String> {
    if !supports_flag(binary, "--admin") {
        return Ok(None);
    }
    let admin = free_port()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut set =
        FixtureSet::generate(dir.path(), clusters, endpoints).map_err(|e| e.to_string())?;
    let extra = ["--admin".to_string(), admin.to_string()];
    let server = ServerProcess::start(binary, dir.path(), &extra)?;
    let fleet = synced_fleet(&server, streams, Variant::Sotw).await?;
    let (mut unloaded, mut loaded) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        unloaded.push(push(&server, &fleet, &mut set, streams).await?);
    }
    let load = Load::start(admin).await?;
    // Let the pollers and pages reach their steady state before the first loaded push.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    for _ in 0..runs {
        loaded.push(push(&server, &fleet, &mut set, streams).await?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let peak_rss_mib = server.peak_rss_bytes() as f64 / (1024.0 * 1024.0);
    let (answers, latencies) = load.stop();
    fleet.stop().await;
    server.stop();
    let summary = |costs: &[PushCost]| PushCost {
        push_max_ms: median(costs.iter().map(|c| c.push_max_ms).collect()),
        server_cpu_ms: median(costs.iter().map(|c| c.server_cpu_ms).collect()),
    };
    Ok(Some(AdminLoad {
        streams,
        clusters,
        unloaded: summary(&unloaded),
        loaded: summary(&loaded),
        status_per_second: answers as f64 / elapsed.max(0.001),
        status_p50_ms: median(latencies),
        peak_rss_mib,
    }))
}
