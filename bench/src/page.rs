//! What the live page costs the xDS side: a fleet of N SotW streams, one endpoint edit pushed
//! to all of them, with the page closed and then with it open (the grid's events, and one
//! stream's conversation, read as fast as they come), medians. Numbers only, no verdict.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;
use xdsloop_client::Variant;
use xdsloop_client::fleet::Fleet;
use xdsloop_proto::type_url::ENDPOINT;

use crate::cell::{all_hold, ms, synced_fleet, wait};
use crate::extras::{free_port, median};
use crate::fixtures::FixtureSet;
use crate::server::{ServerProcess, supports_flag};

#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct PushCost {
    /// Fixture write → every node ACKed the new version.
    pub push_max_ms: f64,
    /// Server CPU over the same time.
    pub server_cpu_ms: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct PageCost {
    pub streams: usize,
    pub closed: PushCost,
    pub open: PushCost,
    /// What the open page received per push (grid diffs and conversation events).
    pub page_events_per_push: f64,
    pub page_bytes_per_push: f64,
}

/// The page's two event streams, read by tasks that count what arrives.
struct OpenPage {
    readers: Vec<JoinHandle<()>>,
    events: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

impl OpenPage {
    async fn open(admin: SocketAddr, paths: &[&str]) -> Result<Self, String> {
        let (events, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut readers = Vec::new();
        for path in paths {
            let mut stream = tokio::net::TcpStream::connect(admin)
                .await
                .map_err(|e| format!("page: {e}"))?;
            let request = format!(
                "GET {path} HTTP/1.1\r\nHost: {admin}\r\nAccept: text/event-stream\r\n\r\n"
            );
            stream
                .write_all(request.as_bytes())
                .await
                .map_err(|e| format!("page: {e}"))?;
            let (events, bytes) = (events.clone(), bytes.clone());
            readers.push(tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                while let Ok(n) = stream.read(&mut buffer).await {
                    if n == 0 {
                        return;
                    }
                    let seen = buffer[..n].windows(6).filter(|w| w == b"event:").count();
                    events.fetch_add(seen as u64, Ordering::Relaxed);
                    bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
            }));
        }
        Ok(Self {
            readers,
            events,
            bytes,
        })
    }

    fn counts(&self) -> (u64, u64) {
        let events = self.events.load(Ordering::Relaxed);
        (events, self.bytes.load(Ordering::Relaxed))
    }

    fn close(self) {
        for reader in self.readers {
            reader.abort();
        }
    }
}

/// One edit pushed to every node; what it cost.
pub(crate) async fn push(
    server: &ServerProcess,
    fleet: &Fleet,
    set: &mut FixtureSet,
    nodes: usize,
) -> Result<PushCost, String> {
    let old = all_hold(&fleet.progress(), ENDPOINT, nodes).ok_or("the fleet is not synced")?;
    let cpu = server.cpu_seconds();
    let written = Instant::now();
    set.edit_one_endpoint().map_err(|e| e.to_string())?;
    wait(fleet, "every node to ACK the edit", |p| {
        all_hold(p, ENDPOINT, nodes).is_some_and(|v| v != old)
    })
    .await?;
    Ok(PushCost {
        push_max_ms: ms(written.elapsed()),
        server_cpu_ms: (server.cpu_seconds() - cpu) * 1000.0,
    })
}

/// `Ok(None)` when the server has no admin endpoint (so no page).
pub(crate) async fn page_cost(
    binary: &Path,
    streams: usize,
    clusters: usize,
    endpoints: usize,
    runs: usize,
) -> Result<Option<PageCost>, String> {
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
    let (mut closed, mut open) = (Vec::new(), Vec::new());
    let (mut events, mut bytes) = (Vec::new(), Vec::new());
    // Closed first: a closed browser tab is noticed only at the server's next write to it, so
    // "closed" after "open" could still be paying for the page.
    for _ in 0..runs {
        closed.push(push(&server, &fleet, &mut set, streams).await?);
    }
    let page = OpenPage::open(admin, &["/events", "/streams/1/events"]).await?;
    for _ in 0..runs {
        let before = page.counts();
        open.push(push(&server, &fleet, &mut set, streams).await?);
        let after = page.counts();
        events.push((after.0 - before.0) as f64);
        bytes.push((after.1 - before.1) as f64);
    }
    page.close();
    fleet.stop().await;
    server.stop();
    let summary = |costs: &[PushCost]| PushCost {
        push_max_ms: median(costs.iter().map(|c| c.push_max_ms).collect()),
        server_cpu_ms: median(costs.iter().map(|c| c.server_cpu_ms).collect()),
    };
    Ok(Some(PageCost {
        streams,
        closed: summary(&closed),
        open: summary(&open),
        page_events_per_push: median(events),
        page_bytes_per_push: median(bytes),
    }))
}
