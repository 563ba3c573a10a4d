//! Every version change reaches clients: the real server over a copy of
//! a shipped fixture set, edited on disk, with raw tonic ADS clients.

use std::path::Path;
use std::time::Duration;

use tempfile::TempDir;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER};
use xdsloop_server::testkit::TestServer;
use xdsloop_tests::copy_dir;

use crate::harness::*;

/// A temp copy of `fixtures/<set>`.
fn copy_of(set: &str) -> TempDir {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(set);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&from, dir.path());
    dir
}

/// The testkit's server over `dir`, watched and reloaded as the binary does.
async fn serve(dir: &Path) -> TestServer {
    let server = TestServer::builder()
        .fixtures(dir)
        .admin()
        .configure(|config| config.debounce = Duration::from_millis(20));
    server.start().await.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn version_only_bump_is_pushed() {
    let dir = copy_of("demo");
    let server = serve(dir.path()).await;
    let running = server.running().unwrap();
    let mut client = SotwClient::connect(running.addr, "node-1").await;
    let first = client.subscribe(LISTENER, &[]).await;
    assert_eq!(first.version_info, "v1");
    client.ack(&first, &[]).await;
    let clusters = client.subscribe(CLUSTER, &[]).await;
    client.ack(&clusters, &[]).await;

    let listeners = dir.path().join("listeners.yaml");
    replace_served(running, &listeners, "version_info: v1", "version_info: v2").await;
    let pushed = client.recv().await;
    assert_eq!(pushed.type_url, LISTENER, "only LDS changed");
    assert_eq!(pushed.version_info, "v2");
    assert_eq!(
        pushed.resources, first.resources,
        "same content, new version"
    );
    client.ack(&pushed, &[]).await;
    client
        .assert_silent("the ACKed version is not resent")
        .await;

    // A content change under the unchanged explicit version is pushed too.
    replace_served(
        running,
        &listeners,
        "port_value: 10000",
        "port_value: 10001",
    )
    .await;
    let pushed = client.recv().await;
    assert_eq!(pushed.version_info, "v2");
    assert_ne!(pushed.resources, first.resources);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn delta_version_only_bump_sends_nothing() {
    let dir = copy_of("demo");
    let server = serve(dir.path()).await;
    let running = server.running().unwrap();
    let mut client = DeltaClient::connect(running.addr, "node-1").await;
    client.change(LISTENER, &["*"], &[], "").await;
    let first = client.recv().await;
    client.ack(&first).await;
    let listeners = dir.path().join("listeners.yaml");
    replace_served(running, &listeners, "version_info: v1", "version_info: v2").await;
    // Delta resources carry content-hash versions of their own: none of them changed.
    client
        .assert_silent("a version-only bump changes no Delta resource")
        .await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn files_with_different_versions_combine_and_push() {
    let dir = copy_of("per-file");
    let server = serve(dir.path()).await;
    let running = server.running().unwrap();
    assert!(
        running.reloads.borrow().ok,
        "different versions per file are valid"
    );
    let mut client = SotwClient::connect(running.addr, "node-1").await;
    let first = client.subscribe(ENDPOINT, &["api", "web"]).await;
    assert_eq!(names_in(&first), ["api", "web"]);
    client.ack(&first, &["api", "web"]).await;

    let web = dir.path().join("endpoints/web.yaml");
    replace_served(running, &web, "version_info: web-1", "version_info: web-2").await;
    let bumped = client.recv().await;
    assert_ne!(bumped.version_info, first.version_info, "one file's bump");
    assert_eq!(bumped.resources, first.resources);
    client.ack(&bumped, &["api", "web"]).await;

    let api = dir.path().join("endpoints/api.yaml");
    replace_served(running, &api, "port_value: 8091", "port_value: 8092").await;
    let edited = client.recv().await;
    assert_ne!(edited.version_info, bumped.version_info, "one file's edit");
    assert_ne!(edited.resources, bumped.resources);
    client.ack(&edited, &["api", "web"]).await;
    server.shutdown().await.unwrap();

    // Same files, same version: a client that reconnects after a restart holds it already.
    let restarted = serve(dir.path()).await;
    let mut client = SotwClient::connect(restarted.addr(), "node-1").await;
    let again = client.subscribe(ENDPOINT, &["api", "web"]).await;
    assert_eq!(again.version_info, edited.version_info);
    restarted.shutdown().await.unwrap();
}
