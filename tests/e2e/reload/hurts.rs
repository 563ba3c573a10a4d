//! Fixtures that hurt: a FIFO, a huge file, a zero-byte save, a watcher
//! that loses its directory. The reload loop never stalls, says what it is doing, and what it
//! says is true.

use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::{
    app::Running,
    fixtures::Settings,
    status::{StatusDocument, remote},
    testkit::TestServer,
};

use super::*;
use crate::harness::{SotwClient, TIMEOUT, http_get, names_in, poll_until};

/// A valid cluster whose `alt_stat_name` is `bytes` long: decoding it takes a while.
fn big_cluster_yaml(name: &str, bytes: usize) -> String {
    format!(
        "\"@type\": {}\nname: {name}\nconnect_timeout: 1s\nalt_stat_name: \"{}\"\n",
        type_url::CLUSTER,
        "x".repeat(bytes)
    )
}

/// Big enough that decoding it takes a good part of a second on a typical machine, so the edit
/// usually lands while it decodes; far under the default size limit.
const SLOW_TO_DECODE: usize = 6 * 1024 * 1024;

/// The whole server (admin endpoint included) on `dir`.
async fn serve(dir: &Path) -> TestServer {
    let server = TestServer::builder()
        .fixtures(dir)
        .admin()
        .configure(|config| config.debounce = DEBOUNCE);
    server.start().await.unwrap_or_else(|e| panic!("{e}"))
}

async fn status_until(
    running: &Running,
    what: &str,
    check: impl Fn(&StatusDocument) -> bool,
) -> StatusDocument {
    let admin = running.admin_addr.unwrap().to_string();
    let found = poll_until(what, TIMEOUT, async || {
        let doc = remote::fetch(&admin).await.map_err(|e| e.to_string())?;
        if check(&doc) {
            Ok(doc)
        } else {
            Err(format!("{doc:#?}"))
        }
    });
    found.await.unwrap_or_else(|e| panic!("{e}"))
}

/// Waits until a reload that started after `count` reloads has finished.
async fn next_reload(rx: &mut watch::Receiver<ReloadStatus>, count: u64) -> ReloadStatus {
    wait_reload(rx, "the next reload to finish", |r| {
        r.count > count && r.in_progress.is_none()
    })
    .await
}

#[tokio::test]
async fn fifo_in_fixture_dir_is_rejected_and_does_not_block() {
    let (dir, mut watcher) = demo();
    let pipe = dir.path().join("pipe.yaml");
    rustix::fs::mkfifoat(rustix::fs::CWD, &pipe, rustix::fs::Mode::RUSR).unwrap();
    let status = wait_reload(&mut watcher.reloads, "the FIFO rejected", |r| !r.ok).await;
    assert_eq!(status.file.as_deref(), Some(pipe.as_path()));
    let error = status.error.unwrap();
    assert!(
        error.contains("pipe.yaml: not a regular file (FIFO)"),
        "{error}"
    );

    // The loop goes on: a later edit is read (and rejected for the same reason while the FIFO
    // is there), and once it is gone the edit is served.
    std::fs::write(dir.path().join("endpoints.yaml"), endpoints_yaml(9401)).unwrap();
    let status = next_reload(&mut watcher.reloads, status.count).await;
    assert!(!status.ok && status.file.as_deref() == Some(pipe.as_path()));
    std::fs::remove_file(&pipe).unwrap();
    wait_snapshot(
        &mut watcher.snapshots,
        "the edit made beside the FIFO",
        |s| ports(s, "web") == [9401],
    )
    .await;
}

#[tokio::test]
async fn oversized_fixture_is_rejected_with_limit() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture_set("demo"), dir.path());
    let settings = Settings {
        debounce: DEBOUNCE,
        max_file_bytes: 64 * 1024,
    };
    let start = || Watcher::start_with(dir.path().to_path_buf(), Codec::envoy(), settings);
    let mut watcher = start().unwrap_or_else(|e| panic!("{e}"));
    let good = watcher.snapshots.borrow().clone();

    let big = dir.path().join("big.yaml");
    let text = big_cluster_yaml("big", 100_000);
    std::fs::write(&big, &text).unwrap();
    let status = wait_reload(&mut watcher.reloads, "the big file rejected", |r| !r.ok).await;
    assert_eq!(status.file.as_deref(), Some(big.as_path()));
    assert_eq!(
        status.error.unwrap(),
        format!(
            "{}: {} bytes is over the 64 KiB limit (max_fixture_bytes; the server's --max-fixture-bytes)",
            big.display(),
            text.len()
        )
    );
    assert!(Arc::ptr_eq(&watcher.snapshots.borrow(), &good), "kept");
    drop(watcher);
    // At start-up it stops the server with the same message.
    let err = start().expect_err("rejected at start-up").to_string();
    assert!(err.contains("over the 64 KiB limit"), "{err}");

    std::fs::write(&big, big_cluster_yaml("big", 1000)).unwrap();
    let watcher = start().unwrap_or_else(|e| panic!("{e}"));
    assert!(has(&watcher.snapshots.borrow(), "n", CLUSTER, "big"));
}

/// The real watcher with a real slow decode. Whether the edit lands while the big file is
/// still decoding depends on this machine's speed, so nothing here assumes it; the unit tests
/// in `config/watch/tests.rs` hold a reload open and prove the order deterministically.
#[tokio::test]
async fn edit_during_long_reload_is_loaded_after_it() {
    let (dir, mut watcher) = demo();
    let before = watcher.reloads.borrow().count;
    std::fs::write(
        dir.path().join("big.yaml"),
        big_cluster_yaml("big", SLOW_TO_DECODE),
    )
    .unwrap();
    wait_reload(
        &mut watcher.reloads,
        "the big file's reload to start",
        |r| r.in_progress.is_some() || r.count > before,
    )
    .await;
    std::fs::write(dir.path().join("endpoints.yaml"), endpoints_yaml(9501)).unwrap();
    let last = wait_snapshot(&mut watcher.snapshots, "the edit made meanwhile", |s| {
        ports(s, "web") == [9501]
    })
    .await;
    assert!(has(&last, "n", CLUSTER, "big"), "and the big file too");
}

#[tokio::test]
async fn zero_byte_save_keeps_previous_resources_for_clients() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture_set("demo"), dir.path());
    let server = serve(dir.path()).await;
    let running = server.running().unwrap();
    let mut reloads = running.reloads.clone();
    let mut snapshots = running.snapshots.clone();
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    assert_eq!(names_in(&first), ["api", "web"]);
    client.ack(&first, &[]).await;

    // An editor truncated the file and has not written it yet (or the write failed).
    let clusters = dir.path().join("clusters.yaml");
    let count = reloads.borrow().count;
    std::fs::write(&clusters, "").unwrap();
    let status = next_reload(&mut reloads, count).await;
    assert!(status.ok, "{status:?}");
    client.assert_silent("an empty save pushes nothing").await;
    assert!(has(&snapshots.borrow(), "n", CLUSTER, "web"));

    // Deleting the file does delete its resources, for every client.
    std::fs::remove_file(&clusters).unwrap();
    wait_snapshot(&mut snapshots, "the clusters deleted", |s| {
        !has(s, "n", CLUSTER, "web")
    })
    .await;
    let pushed = client.recv().await;
    assert!(names_in(&pushed).is_empty(), "{:?}", names_in(&pushed));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn watcher_failure_is_reported_and_recovers() {
    // The directory and its parent both go: no watch is left that could see them come back.
    let base = tempfile::tempdir().unwrap();
    let parent = base.path().join("parent");
    let live = parent.join("live");
    copy_dir(&fixture_set("demo"), &live);
    let server = serve(&live).await;
    let running = server.running().unwrap();
    let admin = running.admin_addr.unwrap();
    let mut reloads = running.reloads.clone();
    std::fs::remove_dir_all(&parent).unwrap();

    let down = wait_reload(&mut reloads, "the watcher down", |r| !r.watcher.ok).await;
    let error = down.watcher.error.unwrap();
    assert!(error.contains(&live.display().to_string()), "{error}");
    let doc = status_until(running, "/status to show it", |d| !d.reload.watcher.ok).await;
    assert!(doc.reload.watcher.since.is_some());
    let health = http_get(admin, "/healthz").await;
    assert_eq!(health.status, 503, "{}", health.body);
    assert_eq!(health.json()["status"], "unhealthy");
    let reason = health.json()["error"].as_str().unwrap().to_string();
    assert!(reason.contains("fixture watcher is down"), "{reason}");

    // Back: a new watcher, a rescan, and edits followed again.
    copy_dir(&fixture_set("demo"), &live);
    std::fs::write(live.join("endpoints.yaml"), endpoints_yaml(9601)).unwrap();
    let mut snapshots = running.snapshots.clone();
    wait_snapshot(&mut snapshots, "the re-created directory", |s| {
        ports(s, "web") == [9601]
    })
    .await;
    let up = wait_reload(&mut reloads, "the watcher up", |r| r.watcher.ok).await;
    assert_eq!(up.watcher.restarts, 1);
    assert_eq!(http_get(admin, "/healthz").await.status, 200);
    std::fs::write(live.join("endpoints.yaml"), endpoints_yaml(9602)).unwrap();
    wait_snapshot(&mut snapshots, "an edit after the restart", |s| {
        ports(s, "web") == [9602]
    })
    .await;
    server.shutdown().await.unwrap();
}
