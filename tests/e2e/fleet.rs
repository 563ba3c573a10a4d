//! Fleet mode against the real server (`app::start` on real fixture files): 200 simulated nodes
//! converge to the snapshot's versions, see a fixture edit, and a NACK shows in the report.

use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use serde_json::Value;
use tempfile::TempDir;
use xdsloop_client::Variant;
use xdsloop_client::fleet::{Fleet, FleetConfig, Progress, report::FleetReport};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};
use xdsloop_server::{Snapshot, app::Running, testkit::TestServer};

use crate::harness::{NoViolations, cluster, endpoints};

const NODES: usize = 200;
const CLUSTERS: usize = 10;
/// 200 nodes on a loaded 2-core CI machine: generous, and every wait ends as soon as the
/// state shows up.
const WAIT: Duration = Duration::from_secs(60);

/// Writes `name` by write-temp-then-rename, as editors and the bench do.
fn write_json(dir: &Path, name: &str, value: &Value) {
    let temp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&temp, serde_json::to_string_pretty(value).unwrap()).unwrap();
    std::fs::rename(&temp, dir.join(name)).unwrap();
}

fn write_clusters(dir: &Path, extra: &[&str]) {
    let names = (0..CLUSTERS).map(|i| format!("c{i}"));
    let all: Vec<Value> = names
        .chain(extra.iter().map(|s| s.to_string()))
        .map(|n| cluster(&n))
        .collect();
    write_json(dir, "clusters.json", &Value::Array(all));
}

fn write_endpoints(dir: &Path, first_port: u32) {
    let all: Vec<Value> = (0..CLUSTERS)
        .map(|i| endpoints(&format!("c{i}"), first_port + i as u32))
        .collect();
    write_json(dir, "endpoints.json", &Value::Array(all));
}

/// The server, and the guard that fails the test if xdsloop-client broke a client rule.
async fn serve_fixtures() -> (TempDir, TestServer, NoViolations) {
    let dir = tempfile::tempdir().unwrap();
    write_clusters(dir.path(), &[]);
    write_endpoints(dir.path(), 8000);
    let server = serve_dir(dir.path(), "127.0.0.1:0".parse().unwrap()).await;
    let judge = NoViolations::new(server.registry().clone());
    (dir, server, judge)
}

/// The testkit's server over `dir` on `listen`, watched and reloaded as the binary does.
async fn serve_dir(dir: &Path, listen: SocketAddr) -> TestServer {
    let server = TestServer::builder()
        .fixtures(dir)
        .listen(listen)
        .admin()
        .configure(|config| config.debounce = Duration::from_millis(20));
    server.start().await.unwrap_or_else(|e| panic!("{e}"))
}

fn version(snapshot: &Snapshot, type_url: &str) -> String {
    snapshot.base[type_url].version.clone()
}

/// Waits for the server to publish a snapshot newer than `generation`.
async fn next_snapshot(running: &Running, generation: u64) -> Arc<Snapshot> {
    let mut snapshots = running.snapshots.clone();
    let wait = snapshots.wait_for(|s| s.generation > generation);
    let snapshot = tokio::time::timeout(WAIT, wait)
        .await
        .expect("the fixture edit is loaded")
        .expect("the server is running");
    snapshot.clone()
}

async fn until(fleet: &Fleet, what: &str, done: impl FnMut(&Progress) -> bool) -> Progress {
    match fleet.wait_until(WAIT, done).await {
        Ok(progress) => progress,
        Err(last) => panic!(
            "timed out waiting for {what}; last progress {last:?}\n{}",
            fleet.report().text()
        ),
    }
}

fn start_fleet(running: &Running, mode: Variant, nack: &[(&str, &str)]) -> Fleet {
    let mut config = FleetConfig::new(running.addr.to_string(), NODES);
    config.mode = mode;
    config.connections = 4;
    config.nack = (nack.iter())
        .map(|(t, n)| (t.to_string(), n.to_string()))
        .collect();
    Fleet::start(config).unwrap()
}

/// Every node holds the snapshot's CDS and EDS versions; the counts add up.
async fn converged(fleet: &Fleet, snapshot: &Snapshot) -> FleetReport {
    let (cds, eds) = (version(snapshot, CLUSTER), version(snapshot, ENDPOINT));
    until(fleet, "every node to hold the served versions", |p| {
        p.configured == NODES
            && p.holding(CLUSTER, &cds) == NODES
            && p.holding(ENDPOINT, &eds) == NODES
    })
    .await;
    let report = fleet.report();
    assert_eq!(report.streams_open, NODES);
    assert_eq!(report.first_config.count, NODES);
    for type_url in [CLUSTER, ENDPOINT] {
        let held: usize = (report.versions.iter())
            .filter(|v| v.type_url == type_url)
            .map(|v| v.holding)
            .sum();
        assert_eq!(
            held, NODES,
            "each node holds exactly one {type_url} version"
        );
    }
    report
}

async fn fleet_converges_and_follows_an_endpoint_edit(mode: Variant) {
    let (dir, server, _judge) = serve_fixtures().await;
    let running = server.running().unwrap();
    let first = running.snapshots.borrow().clone();
    let fleet = start_fleet(running, mode, &[]);
    let report = converged(&fleet, &first).await;
    let eds = report
        .version(ENDPOINT, &version(&first, ENDPOINT))
        .unwrap();
    assert_eq!(
        (eds.nodes, eds.first_config.count, eds.nacks),
        (NODES, NODES, 0)
    );
    assert!(report.bytes_received > 0 && report.nacks == 0);

    write_endpoints(dir.path(), 9000);
    let second = next_snapshot(running, first.generation).await;
    assert_eq!(version(&first, CLUSTER), version(&second, CLUSTER));
    let report = converged(&fleet, &second).await;
    let new = report
        .version(ENDPOINT, &version(&second, ENDPOINT))
        .unwrap();
    assert_eq!((new.nodes, new.converge.count), (NODES, NODES));
    assert_eq!(report.holding(ENDPOINT, &version(&first, ENDPOINT)), 0);

    let last = fleet.stop().await;
    assert_eq!(last.streams_open, 0);
    assert_eq!(last.reconnects, 0);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sotw_fleet_of_200_converges_and_sees_a_fixture_edit() {
    fleet_converges_and_follows_an_endpoint_edit(Variant::Sotw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_fleet_of_200_converges_and_sees_a_fixture_edit() {
    fleet_converges_and_follows_an_endpoint_edit(Variant::Delta).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_report_shows_every_node_nacking_a_rejected_cluster() {
    let (dir, server, _judge) = serve_fixtures().await;
    let running = server.running().unwrap();
    let first = running.snapshots.borrow().clone();
    let fleet = start_fleet(running, Variant::Sotw, &[(CLUSTER, "bad")]);
    converged(&fleet, &first).await;

    write_clusters(dir.path(), &["bad"]);
    let rejected = next_snapshot(running, first.generation).await;
    let bad = version(&rejected, CLUSTER);
    until(&fleet, "every node to NACK the bad CDS version", |p| {
        p.versions
            .iter()
            .any(|(t, v, _, nacks)| t == CLUSTER && *v == bad && *nacks == NODES as u64)
    })
    .await;
    let report = fleet.report();
    let row = report.version(CLUSTER, &bad).unwrap();
    assert_eq!((row.nodes, row.holding, row.nacks), (0, 0, NODES as u64));
    assert!(row.nack_error.as_deref().unwrap().contains("bad"));
    assert_eq!(report.nacks, NODES as u64);
    assert!(report.text().contains("NACK cds"), "{}", report.text());
    // A NACK keeps the last accepted version.
    assert_eq!(report.holding(CLUSTER, &version(&first, CLUSTER)), NODES);

    write_clusters(dir.path(), &["good"]);
    let fixed = next_snapshot(running, rejected.generation).await;
    converged(&fleet, &fixed).await;
    fleet.stop().await;
    server.shutdown().await.unwrap();
}

/// A server restart on the same port: every stream ends, every node reconnects and converges
/// again, and the report counts the reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_reconnects_after_a_server_restart() {
    let (dir, server, _judge) = serve_fixtures().await;
    let running = server.running().unwrap();
    let first = running.snapshots.borrow().clone();
    let fleet = start_fleet(running, Variant::Sotw, &[]);
    converged(&fleet, &first).await;
    let addr = running.addr;
    server.shutdown().await.unwrap();
    let down = until(&fleet, "every stream to end", |p| {
        p.streams_open == 0 && p.reconnects >= NODES as u64
    })
    .await;

    let server = serve_dir(dir.path(), addr).await;
    let running = server.running().unwrap();
    let _judge_after_restart = NoViolations::new(running.registry.clone());
    // Nodes keep what they held; each resubscribes and gets CDS and EDS again.
    until(&fleet, "every node to resubscribe", |p| {
        p.streams_open == NODES && p.responses >= down.responses + 2 * NODES as u64
    })
    .await;
    let report = converged(&fleet, &running.snapshots.borrow().clone()).await;
    assert_eq!(report.reconnects, NODES as u64, "{}", report.text());
    fleet.stop().await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn fleet_cli_prints_a_json_report() {
    use clap::Parser;
    use xdsloop_client::fleet::command::{FleetArgs, run};

    let (_dir, server, _judge) = serve_fixtures().await;
    let running = server.running().unwrap();
    let args = FleetArgs::parse_from([
        "fleet",
        "--server",
        &running.addr.to_string(),
        "--clients",
        "5",
        "--output",
        "json",
        "--duration",
        "0.5",
        "--node-prefix",
        "cli-",
    ]);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    run(args, std::future::pending(), &mut out, &mut err)
        .await
        .unwrap();
    let report: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["nodes"], 5);
    assert_eq!(report["mode"], "sotw");
    assert!(report["versions"].is_array());
    server.shutdown().await.unwrap();
}
