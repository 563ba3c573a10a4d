//! Hot reload against real files, real notify events and the real `Watcher`: every way editors
//! and tools change a fixture directory ends in the right snapshot, and bad edits are rejected
//! while the last good snapshot keeps being served.

mod fuzz;
mod hurts;
mod rejects;

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use tempfile::TempDir;
use tokio::sync::watch;
use xdsloop_proto::{Codec, type_url};
use xdsloop_server::{
    Snapshot,
    fixtures::{ReloadStatus, Watcher},
};
use xdsloop_tests::copy_dir;

/// Generous: a loaded CI machine may be slow to deliver file events. Waits end as soon as the
/// expected state shows up.
const WAIT: Duration = Duration::from_secs(10);
const DEBOUNCE: Duration = Duration::from_millis(50);

fn fixture_set(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(name)
}

/// A temp copy of the demo set, watched.
fn demo() -> (TempDir, Watcher) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture_set("demo"), dir.path());
    let watcher = Watcher::start(dir.path().to_path_buf(), Codec::envoy(), DEBOUNCE)
        .unwrap_or_else(|e| panic!("{e}"));
    (dir, watcher)
}

fn endpoints_yaml(web_port: u16) -> String {
    format!(
        "\"@type\": {}\ncluster_name: web\nendpoints:\n- lb_endpoints:\n  - endpoint: {{ address: {{ \
         socket_address: {{ address: 127.0.0.1, port_value: {web_port} }} }} }}\n",
        type_url::ENDPOINT
    )
}

fn cluster_yaml(name: &str) -> String {
    format!(
        "\"@type\": {}\nname: {name}\nconnect_timeout: 1s\n",
        type_url::CLUSTER
    )
}

/// The ports of cluster `cluster`'s endpoints as served to any node.
fn ports(snapshot: &Snapshot, cluster: &str) -> Vec<u64> {
    let Some(resource) = snapshot
        .get("any-node", type_url::ENDPOINT)
        .and_then(|t| t.resources.get(cluster))
    else {
        return Vec::new();
    };
    let json = Codec::envoy()
        .to_json(type_url::ENDPOINT, &resource.bytes)
        .unwrap();
    let mut ports = Vec::new();
    for locality in json["endpoints"].as_array().unwrap() {
        for lb in locality["lb_endpoints"].as_array().unwrap() {
            let address = &lb["endpoint"]["address"]["socket_address"];
            ports.push(address["port_value"].as_u64().unwrap());
        }
    }
    ports
}

fn has(snapshot: &Snapshot, node: &str, type_url: &str, name: &str) -> bool {
    snapshot
        .get(node, type_url)
        .is_some_and(|t| t.resources.contains_key(name))
}

/// The watched value once `done` holds for it; `None` if that takes longer than `WAIT`.
async fn wait_until<T: Clone>(rx: &mut watch::Receiver<T>, done: impl Fn(&T) -> bool) -> Option<T> {
    let wait = async {
        loop {
            let current = rx.borrow_and_update().clone();
            if done(&current) {
                return current;
            }
            rx.changed().await.expect("the watcher stopped");
        }
    };
    tokio::time::timeout(WAIT, wait).await.ok()
}

async fn wait_snapshot(
    rx: &mut watch::Receiver<Arc<Snapshot>>,
    what: &str,
    done: impl Fn(&Snapshot) -> bool,
) -> Arc<Snapshot> {
    wait_until(rx, |s| done(s))
        .await
        .unwrap_or_else(|| panic!("timed out waiting for a snapshot with {what}"))
}

async fn wait_reload(
    rx: &mut watch::Receiver<ReloadStatus>,
    what: &str,
    done: impl Fn(&ReloadStatus) -> bool,
) -> ReloadStatus {
    wait_until(rx, done)
        .await
        .unwrap_or_else(|| panic!("timed out waiting for a reload status: {what}"))
}

#[tokio::test]
async fn initial_load_serves_the_directory() {
    let (_dir, watcher) = demo();
    let snapshot = watcher.snapshots.borrow().clone();
    assert_eq!(snapshot.generation, 1);
    assert_eq!(ports(&snapshot, "web"), [8081, 8082, 8083]);
    assert_eq!(snapshot.get("n", type_url::LISTENER).unwrap().version, "v1");
    let status = watcher.reloads.borrow().clone();
    assert!(
        status.ok && status.generation == 1 && status.resources == 6,
        "{status:?}"
    );
}

#[tokio::test]
async fn in_place_edit_publishes_a_new_version() {
    let (dir, mut watcher) = demo();
    let before = watcher.snapshots.borrow().clone();
    std::fs::write(dir.path().join("endpoints.yaml"), endpoints_yaml(9001)).unwrap();
    let after = wait_snapshot(&mut watcher.snapshots, "web on 9001", |s| {
        ports(s, "web") == [9001]
    })
    .await;
    assert!(after.generation > before.generation);
    let version = |s: &Snapshot, t: &str| s.get("n", t).unwrap().version.clone();
    assert_ne!(
        version(&after, type_url::ENDPOINT),
        version(&before, type_url::ENDPOINT)
    );
    assert_eq!(
        version(&after, type_url::CLUSTER),
        version(&before, type_url::CLUSTER)
    );
    assert!(
        !has(&after, "n", type_url::ENDPOINT, "api"),
        "api's CLA was removed"
    );
}

#[tokio::test]
async fn write_to_temp_then_rename_publishes() {
    let (dir, mut watcher) = demo();
    // Same directory, hidden temp name (vim with `backupcopy=no`, many IDEs).
    let temp = dir.path().join(".endpoints.yaml.tmp");
    std::fs::write(&temp, endpoints_yaml(9002)).unwrap();
    std::fs::rename(&temp, dir.path().join("endpoints.yaml")).unwrap();
    wait_snapshot(&mut watcher.snapshots, "web on 9002", |s| {
        ports(s, "web") == [9002]
    })
    .await;

    // From outside the watched tree (atomic writers that use the system temp directory).
    let outside = tempfile::tempdir().unwrap();
    let temp = outside.path().join("endpoints.yaml");
    std::fs::write(&temp, endpoints_yaml(9003)).unwrap();
    std::fs::rename(&temp, dir.path().join("endpoints.yaml")).unwrap();
    wait_snapshot(&mut watcher.snapshots, "web on 9003", |s| {
        ports(s, "web") == [9003]
    })
    .await;
}

#[tokio::test]
async fn several_writes_in_a_row_end_at_the_last_content() {
    let (dir, mut watcher) = demo();
    for port in 9100..9110 {
        std::fs::write(dir.path().join("endpoints.yaml"), endpoints_yaml(port)).unwrap();
    }
    let last = wait_snapshot(&mut watcher.snapshots, "web on 9109", |s| {
        ports(s, "web") == [9109]
    })
    .await;
    assert!(watcher.reloads.borrow().ok);
    assert_eq!(watcher.snapshots.borrow().generation, last.generation);
}

/// A file closed after writing is reloaded after a short settle window, but one still
/// open for writing is not read until it is closed (or the debounce passes), however long the
/// writer pauses between its write() calls.
#[tokio::test]
async fn a_file_still_open_for_writing_is_never_reloaded_half_written() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture_set("demo"), dir.path());
    // Far longer than the writer's pause, so only the settle rule could read the half.
    let debounce = Duration::from_secs(3);
    let mut watcher = Watcher::start(dir.path().to_path_buf(), Codec::envoy(), debounce).unwrap();
    let mut reloads = watcher.reloads.clone();
    let text = endpoints_yaml(9400);
    let (half, rest) = text.split_at(text.len() / 2);
    let mut file = std::fs::File::create(dir.path().join("endpoints.yaml")).unwrap();
    file.write_all(half.as_bytes()).unwrap();
    file.sync_data().unwrap();
    // A slow writer: ten settle windows between two write() calls on the open file (not a
    // wait for the watcher: it runs meanwhile, and must not read the file).
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(reloads.borrow_and_update().count, 1, "read while open");
    file.write_all(rest.as_bytes()).unwrap();
    drop(file);
    wait_snapshot(&mut watcher.snapshots, "web on 9400", |s| {
        ports(s, "web") == [9400]
    })
    .await;
    let status = watcher.reloads.borrow().clone();
    assert!(status.ok && status.count == 2, "{status:?}");
}

#[tokio::test]
async fn new_deleted_files_and_directories_are_followed() {
    let (dir, mut watcher) = demo();
    let rx = &mut watcher.snapshots;
    let extra = dir.path().join("extra.yaml");
    std::fs::write(&extra, cluster_yaml("extra")).unwrap();
    wait_snapshot(rx, "new file", |s| has(s, "n", type_url::CLUSTER, "extra")).await;
    std::fs::remove_file(&extra).unwrap();
    wait_snapshot(rx, "file deleted", |s| {
        !has(s, "n", type_url::CLUSTER, "extra")
    })
    .await;

    // A new directory with a file written right after it: the file lands before notify has
    // had a chance to watch the directory.
    let sub = dir.path().join("team/a");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("more.yaml"), cluster_yaml("more")).unwrap();
    wait_snapshot(rx, "new sub-directory", |s| {
        has(s, "n", type_url::CLUSTER, "more")
    })
    .await;
    // And a later edit inside it: the new directory is watched too.
    std::fs::write(sub.join("more.yaml"), cluster_yaml("more2")).unwrap();
    wait_snapshot(rx, "edit in new sub-directory", |s| {
        has(s, "n", type_url::CLUSTER, "more2") && !has(s, "n", type_url::CLUSTER, "more")
    })
    .await;
    std::fs::remove_dir_all(dir.path().join("team")).unwrap();
    wait_snapshot(rx, "sub-directory deleted", |s| {
        !has(s, "n", type_url::CLUSTER, "more2")
    })
    .await;

    // A node overlay appearing later is served to that node only.
    let canary = dir.path().join("nodes/canary");
    std::fs::create_dir_all(&canary).unwrap();
    std::fs::write(canary.join("c.yaml"), cluster_yaml("canary-only")).unwrap();
    let s = wait_snapshot(rx, "overlay", |s| {
        has(s, "canary", type_url::CLUSTER, "canary-only")
    })
    .await;
    assert!(!has(&s, "other", type_url::CLUSTER, "canary-only"));
    assert!(has(&s, "canary", type_url::CLUSTER, "web"));
}

#[tokio::test]
async fn replacing_the_whole_directory_is_followed() {
    let parent = tempfile::tempdir().unwrap();
    let live = parent.path().join("live");
    copy_dir(&fixture_set("demo"), &live);
    let mut watcher = Watcher::start(live.clone(), Codec::envoy(), DEBOUNCE).unwrap();

    // Deploy-style swap: build the new tree beside it, move the old one away, move the new in.
    let next = parent.path().join("next");
    copy_dir(&fixture_set("demo"), &next);
    std::fs::write(next.join("endpoints.yaml"), endpoints_yaml(9300)).unwrap();
    std::fs::rename(&live, parent.path().join("old")).unwrap();
    std::fs::rename(&next, &live).unwrap();
    wait_snapshot(&mut watcher.snapshots, "the new tree", |s| {
        ports(s, "web") == [9300]
    })
    .await;
    // And the new tree is watched.
    std::fs::write(live.join("endpoints.yaml"), endpoints_yaml(9301)).unwrap();
    wait_snapshot(&mut watcher.snapshots, "an edit in the new tree", |s| {
        ports(s, "web") == [9301]
    })
    .await;

    // Deleted: reported, the last good snapshot stays; re-created: served again.
    std::fs::remove_dir_all(&live).unwrap();
    let status = wait_reload(&mut watcher.reloads, "directory gone", |r| !r.ok).await;
    assert_eq!(status.file.as_deref(), Some(live.as_path()));
    assert_eq!(ports(&watcher.snapshots.borrow(), "web"), [9301]);
    std::fs::create_dir(&live).unwrap();
    std::fs::write(live.join("endpoints.yaml"), endpoints_yaml(9302)).unwrap();
    wait_snapshot(&mut watcher.snapshots, "the re-created directory", |s| {
        ports(s, "web") == [9302]
    })
    .await;
    assert!(watcher.reloads.borrow().ok);
}

#[tokio::test]
async fn stopping_ends_the_channels() {
    let (_dir, watcher) = demo();
    let mut snapshots = watcher.snapshots.clone();
    watcher.stop();
    let ended = tokio::time::timeout(WAIT, snapshots.changed()).await;
    assert!(matches!(ended, Ok(Err(_))), "the sender is dropped on stop");
}

#[cfg(unix)]
#[tokio::test]
async fn edits_to_the_targets_of_symlinks_leaving_the_directory_are_served() {
    let top = tempfile::tempdir().unwrap();
    let (fx, ext) = (top.path().join("fx"), top.path().join("ext"));
    std::fs::create_dir_all(ext.join("dir")).unwrap();
    std::fs::create_dir_all(&fx).unwrap();
    std::fs::write(ext.join("extc.yaml"), cluster_yaml("linked-file")).unwrap();
    std::fs::write(ext.join("dir/d.yaml"), cluster_yaml("linked-dir")).unwrap();
    std::os::unix::fs::symlink("../ext/extc.yaml", fx.join("link-file.yaml")).unwrap();
    std::os::unix::fs::symlink("../ext/dir", fx.join("linkdir")).unwrap();
    let mut watcher = Watcher::start(fx.clone(), Codec::envoy(), DEBOUNCE).unwrap();
    let rx = &mut watcher.snapshots;
    let first = rx.borrow().clone();
    assert!(has(&first, "n", type_url::CLUSTER, "linked-file"));
    assert!(has(&first, "n", type_url::CLUSTER, "linked-dir"));

    std::fs::write(ext.join("extc.yaml"), cluster_yaml("linked-file-2")).unwrap();
    wait_snapshot(rx, "the edit of a linked file", |s| {
        has(s, "n", type_url::CLUSTER, "linked-file-2")
    })
    .await;
    std::fs::write(ext.join("dir/d.yaml"), cluster_yaml("linked-dir-2")).unwrap();
    wait_snapshot(rx, "the edit in a linked directory", |s| {
        has(s, "n", type_url::CLUSTER, "linked-dir-2")
    })
    .await;
    std::fs::write(ext.join("dir/new.yaml"), cluster_yaml("linked-dir-new")).unwrap();
    wait_snapshot(rx, "a new file in a linked directory", |s| {
        has(s, "n", type_url::CLUSTER, "linked-dir-new")
    })
    .await;

    // A link made later, to another place outside, is followed from then on.
    let other = top.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("o.yaml"), cluster_yaml("other-1")).unwrap();
    std::os::unix::fs::symlink(&other, fx.join("later")).unwrap();
    wait_snapshot(rx, "a new link", |s| {
        has(s, "n", type_url::CLUSTER, "other-1")
    })
    .await;
    std::fs::write(other.join("o.yaml"), cluster_yaml("other-2")).unwrap();
    wait_snapshot(rx, "the edit behind the new link", |s| {
        has(s, "n", type_url::CLUSTER, "other-2")
    })
    .await;
    std::fs::remove_file(fx.join("later")).unwrap();
    wait_snapshot(rx, "the link removed", |s| {
        !has(s, "n", type_url::CLUSTER, "other-2")
    })
    .await;
}
