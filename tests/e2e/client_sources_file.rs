//! The file config source against real temp files: the initial file is applied (dependencies
//! followed inside it), an in-place write and a rename over the file each arrive as a new
//! version, and a bad file is rejected with the last good config kept. There is no ACK channel:
//! verdicts are local (ACCEPTED / REJECTED in the CLI).

use std::path::{Path, PathBuf};

use tempfile::TempDir;
use tokio::sync::broadcast;
use xdsloop_client::{
    Client, ClientConfig, ConnectionReport, Report, Source, SourceKind, Store, UpdateReport,
    Verdict,
};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use crate::client_support::*;

/// The demo fixtures as one multi-document YAML file whose first document fixes the version.
fn bundle(version: &str, web_timeout: &str) -> String {
    let mut text = format!("version_info: {version}\nresources: []\n");
    for file in [
        "clusters.yaml",
        "endpoints.yaml",
        "listeners.yaml",
        "routes.yaml",
    ] {
        let part = std::fs::read_to_string(demo_dir().join(file)).unwrap();
        text.push_str("---\n");
        text.push_str(&part);
        text.push('\n');
    }
    // The web cluster is the first `connect_timeout` in the bundle.
    text.replacen(
        "connect_timeout: 0.25s",
        &format!("connect_timeout: {web_timeout}"),
        1,
    )
}

struct Watched {
    _dir: TempDir,
    path: PathBuf,
    client: Client,
    reports: broadcast::Receiver<Report>,
}

async fn watch_file(initial: Option<&str>) -> Watched {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("xds.yaml");
    if let Some(text) = initial {
        std::fs::write(&path, text).unwrap();
    }
    let mut config = ClientConfig::new("unused", "client-e2e");
    config.source = Source::File(path.clone());
    config.follow_deps = true;
    let (client, reports) = demo_client(config).await;
    Watched {
        _dir: dir,
        path,
        client,
        reports,
    }
}

fn all_four_at(store: &Store, version: &str) -> bool {
    [CLUSTER, ENDPOINT, LISTENER, ROUTE]
        .iter()
        .all(|t| store.version(t) == Some(version))
        && store.holds(CLUSTER, "web")
        && store.holds(ENDPOINT, "api")
        && store.holds(ROUTE, "local_route")
}

fn web_timeout(store: &Store) -> Option<String> {
    let web = store.of_type(CLUSTER)?.resources.get("web")?;
    let codec = xdsloop_proto::Codec::envoy();
    let json = codec.to_json(CLUSTER, &web.bytes).ok()?;
    json["connect_timeout"].as_str().map(str::to_string)
}

async fn update_of(reports: &mut broadcast::Receiver<Report>, type_url: &str) -> UpdateReport {
    report(reports, |r| match r {
        Report::Update(u) if u.type_url == type_url => Some(u.clone()),
        _ => None,
    })
    .await
}

#[tokio::test]
async fn file_source_applies_the_file_and_follows_dependencies_inside_it() {
    let mut w = watch_file(Some(&bundle("f1", "0.25s"))).await;
    let watching = report(&mut w.reports, |r| match r {
        Report::Connection(ConnectionReport::Watching { path }) => Some(path.clone()),
        _ => None,
    })
    .await;
    assert!(watching.ends_with("xds.yaml"), "{watching}");
    let cds = update_of(&mut w.reports, CLUSTER).await;
    assert_eq!(cds.source, SourceKind::File);
    assert_eq!((cds.version.as_str(), cds.verdict), ("f1", Verdict::Ack));
    let mut added = cds.diff.added.clone();
    added.sort();
    assert_eq!(added, ["api", "web"]);
    assert_eq!(cds.nonce, "1", "the nonce is the load number");
    let store = store_where(&w.client, |s| all_four_at(s, "f1")).await;
    assert_eq!(store.of_type(ENDPOINT).unwrap().resources.len(), 2);
    w.client.stop().await;
}

#[tokio::test]
async fn file_source_applies_an_in_place_write_as_a_new_version() {
    let w = watch_file(Some(&bundle("f1", "0.25s"))).await;
    store_where(&w.client, |s| all_four_at(s, "f1")).await;
    std::fs::write(&w.path, bundle("f2", "3s")).unwrap();
    let store = store_where(&w.client, |s| all_four_at(s, "f2")).await;
    assert_eq!(web_timeout(&store).as_deref(), Some("3s"));
    w.client.stop().await;
}

#[tokio::test]
async fn file_source_applies_a_rename_over_the_file_as_a_new_version() {
    let w = watch_file(Some(&bundle("f1", "0.25s"))).await;
    store_where(&w.client, |s| all_four_at(s, "f1")).await;
    let staged = w.path.with_file_name(".xds.yaml.tmp");
    std::fs::write(&staged, bundle("f2", "4s")).unwrap();
    std::fs::rename(&staged, &w.path).unwrap();
    let store = store_where(&w.client, |s| all_four_at(s, "f2")).await;
    assert_eq!(web_timeout(&store).as_deref(), Some("4s"));
    w.client.stop().await;
}

#[tokio::test]
async fn file_source_rejects_a_bad_file_and_keeps_the_last_good_config() {
    let mut w = watch_file(Some(&bundle("f1", "0.25s"))).await;
    let good = store_where(&w.client, |s| all_four_at(s, "f1")).await;
    // An unknown field in a cluster: decodes as YAML, fails as a Cluster.
    let bad = bundle("f2", "0.25s").replacen("lb_policy: ROUND_ROBIN", "lb_polcy: ROUND_ROBIN", 1);
    std::fs::write(&w.path, bad).unwrap();
    let rejected = report(&mut w.reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER && u.verdict != Verdict::Ack => Some(u.clone()),
        _ => None,
    })
    .await;
    let Verdict::Nack(reason) = &rejected.verdict else {
        unreachable!()
    };
    assert!(reason.contains("lb_polcy"), "{reason}");
    assert!(reason.contains("xds.yaml"), "names the file: {reason}");
    assert!(rejected.diff.is_empty());
    let now = w.client.store().borrow().clone();
    assert_eq!(*now, *good, "the last good config stays");
    // Fixing the file applies it.
    std::fs::write(&w.path, bundle("f3", "2s")).unwrap();
    let store = store_where(&w.client, |s| all_four_at(s, "f3")).await;
    assert_eq!(web_timeout(&store).as_deref(), Some("2s"));
    w.client.stop().await;
}

#[tokio::test]
async fn file_source_waits_for_a_missing_file_and_applies_it_once_created() {
    let mut w = watch_file(None).await;
    let rejected = update_of(&mut w.reports, CLUSTER).await;
    match &rejected.verdict {
        Verdict::Nack(reason) => assert!(reason.contains("cannot read"), "{reason}"),
        Verdict::Ack => panic!("a missing file cannot be accepted"),
    }
    write_via_rename(&w.path, &bundle("f1", "0.25s"));
    store_where(&w.client, |s| all_four_at(s, "f1")).await;
    w.client.stop().await;
}

fn write_via_rename(path: &Path, text: &str) {
    let staged = path.with_extension("new");
    std::fs::write(&staged, text).unwrap();
    std::fs::rename(&staged, path).unwrap();
}
