//! The whole server through `app::start`: real fixture files in a temp dir, the real watcher,
//! and an open ADS stream that must see each good edit and none of the bad ones.

use std::{path::Path, time::Duration};

use serde_json::Value;
use tempfile::TempDir;
use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::{
    Error,
    app::{self, Config, Running},
};

use crate::harness::*;

fn write_clusters(path: &Path, clusters: &[Value]) {
    std::fs::write(path, serde_json::to_string_pretty(clusters).unwrap()).unwrap();
}

async fn start(dir: &Path) -> Running {
    let mut config = Config::new(dir);
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.debounce = Duration::from_millis(20);
    app::start(config).await.unwrap_or_else(|e| panic!("{e}"))
}

/// A temp fixture dir with clusters `a` and `b`, the server on it, and a client that
/// received and ACKed the CDS wildcard response.
async fn serving() -> (TempDir, Running, SotwClient, String) {
    let dir = tempfile::tempdir().unwrap();
    write_clusters(
        &dir.path().join("clusters.json"),
        &[cluster("a"), cluster("b")],
    );
    let running = start(dir.path()).await;
    let mut client = SotwClient::connect(running.addr, "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    assert_eq!(names_in(&first), ["a", "b"]);
    client.ack(&first, &[]).await;
    (dir, running, client, first.version_info)
}

#[tokio::test]
async fn fixture_edit_in_place_pushes_a_new_version_on_the_open_stream() {
    let (dir, running, mut client, version) = serving().await;
    write_clusters(
        &dir.path().join("clusters.json"),
        &[cluster("a"), cluster("c")],
    );
    let pushed = client.recv().await;
    assert_eq!(names_in(&pushed), ["a", "c"]);
    assert_ne!(pushed.version_info, version);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn fixture_replaced_by_rename_pushes_a_new_version() {
    let (dir, running, mut client, version) = serving().await;
    // Editors and tools write a hidden temp file and rename it over the original.
    let temp = dir.path().join(".clusters.json.tmp");
    write_clusters(&temp, &[cluster_with_timeout("a", 9), cluster("b")]);
    std::fs::rename(&temp, dir.path().join("clusters.json")).unwrap();
    let pushed = client.recv().await;
    assert_eq!(names_in(&pushed), ["a", "b"]);
    assert_ne!(pushed.version_info, version);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn invalid_edit_keeps_serving_the_previous_version_and_the_fix_is_pushed() {
    let (dir, running, mut client, version) = serving().await;
    let mut reloads = running.reloads.clone();
    std::fs::write(dir.path().join("clusters.json"), "[{\"@type\": ").unwrap();
    let rejected = within("the bad edit to be rejected", reloads.wait_for(|r| !r.ok)).await;
    let error = rejected.unwrap().error.clone().unwrap_or_default();
    assert!(error.contains("clusters.json"), "{error}");
    client.assert_silent("a rejected edit pushes nothing").await;
    let mut late = SotwClient::connect(running.addr, "node-2").await;
    let served = late.subscribe(CLUSTER, &[]).await;
    assert_eq!(
        (names_in(&served), served.version_info),
        (strings(&["a", "b"]), version)
    );
    write_clusters(&dir.path().join("clusters.json"), &[cluster("fixed")]);
    assert_eq!(names_in(&client.recv().await), ["fixed"]);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn start_errors_name_the_directory_descriptor_set_or_address() {
    let missing = app::start(Config::new("/nonexistent/xdsloop-fixtures")).await;
    assert!(
        matches!(missing, Err(Error::FixtureDir { .. })),
        "{missing:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("types.pb");
    std::fs::write(&bogus, b"not a descriptor set").unwrap();
    let fixtures = tempfile::tempdir().unwrap();
    let mut config = Config::new(fixtures.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.descriptor_sets = vec![bogus.clone()];
    match app::start(config).await {
        Err(Error::DescriptorSet { path, .. }) => assert_eq!(path, bogus),
        other => panic!("expected a descriptor-set error, got {other:?}"),
    }

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut config = Config::new(fixtures.path());
    config.listen = taken.local_addr().unwrap();
    let busy = app::start(config).await;
    assert!(matches!(busy, Err(Error::Bind { .. })), "{busy:?}");
}
