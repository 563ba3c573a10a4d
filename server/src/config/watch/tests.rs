//! The watcher's loop and the reloader with a load the test holds open ([`Gated`]) and paused
//! time: what a long reload shows, logs, and does with the edits made while it runs, without
//! depending on how long decoding a big file takes on this machine.

use std::{
    io::Write,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
        mpsc as std_mpsc,
    },
    time::Duration,
};

use tokio::sync::{mpsc, watch};
use xdsloop_proto::{Codec, type_url::CLUSTER};

use super::{
    ReloadStatus,
    debounce::Step,
    events::WatchedRoot,
    follow::follow,
    reload::{Fixtures, Load, Reloader},
    supervise::watcher,
};
use crate::{config::fixtures::FixtureError, snapshot::Snapshot, test_support::snapshot};

/// How long a held load waits for the test before giving up (a failing test must not hang).
const HOLD_AT_MOST: Duration = Duration::from_secs(30);
const DEBOUNCE: Duration = Duration::from_millis(100);

/// A load that says it decodes `fx/big.yaml` and then waits for the test to let it finish. The
/// first load (at start-up, generation 1) is not held.
struct Gated {
    loads: AtomicU64,
    release: Mutex<std_mpsc::Receiver<()>>,
}

impl Gated {
    fn new() -> (Arc<Gated>, std_mpsc::Sender<()>) {
        let (tx, rx) = std_mpsc::channel();
        let gated = Gated {
            loads: AtomicU64::new(0),
            release: Mutex::new(rx),
        };
        (Arc::new(gated), tx)
    }

    fn loads(&self) -> u64 {
        self.loads.load(Ordering::SeqCst)
    }
}

impl Load for Gated {
    fn load(
        &self,
        generation: u64,
        decoding: &mut dyn FnMut(Vec<PathBuf>),
    ) -> Result<Snapshot, FixtureError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        if generation > 1 {
            decoding(vec![PathBuf::from("fx/big.yaml")]);
            let release = self.release.lock().unwrap().recv_timeout(HOLD_AT_MOST);
            release.expect("the test releases every load it starts");
        }
        let version = generation.to_string();
        let types: &[(&str, &[(&str, &str)])] = &[(CLUSTER, &[("c", &version)])];
        Ok(Arc::unwrap_or_clone(snapshot(generation, types)))
    }
}

fn reloader(load: Arc<Gated>) -> (Arc<Reloader>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let reloader = Reloader::new(path.clone(), path, load).unwrap();
    (Arc::new(reloader), dir)
}

/// Waits for a reload status that `check` accepts (paused time: a missing one fails at once).
async fn status_until(
    seen: &mut watch::Receiver<ReloadStatus>,
    check: impl FnMut(&ReloadStatus) -> bool,
) -> ReloadStatus {
    let found = tokio::time::timeout(Duration::from_secs(60), seen.wait_for(check));
    found.await.expect("in time").unwrap().clone()
}

fn decoding_big(status: &ReloadStatus) -> bool {
    let files = status.in_progress.as_ref().map(|p| p.files.as_slice());
    files == Some(&[PathBuf::from("fx/big.yaml")])
}

#[tokio::test(start_paused = true)]
async fn reload_in_progress_shows_since_when_and_which_files() {
    let (gated, release) = Gated::new();
    let (reloader, _dir) = reloader(gated.clone());
    let mut seen = reloader.reloads.subscribe();
    let reload = tokio::spawn({
        let reloader = reloader.clone();
        async move { reloader.reload().await }
    });
    let running = status_until(&mut seen, decoding_big).await;
    assert_eq!(running.count, 1, "only the first load has finished");
    assert!(running.in_progress.unwrap().since >= running.at);
    release.send(()).unwrap();
    let done = status_until(&mut seen, |s| s.count == 2).await;
    assert!(done.in_progress.is_none(), "{done:?}");
    assert!(done.ok);
    assert_eq!(done.generation, 2);
    reload.await.unwrap();
}

/// What the subscriber writes, for the test to read.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// What this thread logs from now until the guard is dropped.
    fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Lets the other tasks run until `wanted` is logged.
    async fn until(&self, wanted: &str) {
        for _ in 0..1000 {
            if self.text().contains(wanted) {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("never logged {wanted:?}:\n{}", self.text());
    }

    /// Lets the other tasks run for a while, then says whether `unwanted` was logged.
    async fn has_after_settling(&self, unwanted: &str) -> bool {
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        self.text().contains(unwanted)
    }
}

#[tokio::test(start_paused = true)]
async fn slow_reload_is_logged_after_one_and_two_seconds() {
    // The test's runtime has one thread: the reload's own logging happens on it.
    let (logs, _logging) = Logs::capture();
    let (gated, release) = Gated::new();
    let (reloader, _dir) = reloader(gated);
    let mut seen = reloader.reloads.subscribe();
    let reload = tokio::spawn({
        let reloader = reloader.clone();
        async move { reloader.reload().await }
    });
    status_until(&mut seen, decoding_big).await;

    let second = Duration::from_secs(1);
    tokio::time::advance(second - Duration::from_millis(1)).await;
    assert!(!logs.has_after_settling("still running").await);
    tokio::time::advance(Duration::from_millis(1)).await;
    logs.until("reload still running after 1s").await;
    assert!(logs.text().contains("files=fx/big.yaml"), "{}", logs.text());
    tokio::time::advance(second).await;
    logs.until("reload still running after 2s").await;
    tokio::time::advance(second).await;
    assert!(
        !logs.has_after_settling("after 3s").await,
        "then at 4s, 8s..."
    );

    release.send(()).unwrap();
    reload.await.unwrap();
    assert!(logs.text().contains("reload finished"), "{}", logs.text());
}

#[tokio::test(start_paused = true)]
async fn edits_during_a_reload_start_exactly_one_more_after_it() {
    let (gated, release) = Gated::new();
    let (reloader, dir) = reloader(gated.clone());
    let mut seen = reloader.reloads.subscribe();
    // Real notify events would be noise here: the test sends the signals itself.
    let (unused, _keep) = WatchedRoot::channel();
    let watched = WatchedRoot::start(dir.path().to_path_buf(), unused).unwrap();
    let (signals, events) = mpsc::channel(1);
    let following = tokio::spawn({
        let reloader = reloader.clone();
        async move { follow(&reloader, watched, events, DEBOUNCE).await }
    });

    signals.send(Step::Unknown).await.unwrap();
    status_until(&mut seen, decoding_big).await;
    for _ in 0..3 {
        signals.send(Step::Unknown).await.unwrap();
    }
    // Past the debounce: still one reload at a time. (Under a second, the first slow-reload
    // notice: a thread without a subscriber that reaches a `tracing` call site first can leave
    // it disabled for the test that reads the log.)
    tokio::time::advance(DEBOUNCE * 5).await;
    assert_eq!(gated.loads(), 2, "the first load and the running reload");
    release.send(()).unwrap();
    status_until(&mut seen, |s| s.count == 2).await;

    let again = status_until(&mut seen, |s| s.count == 2 && decoding_big(s)).await;
    assert_eq!(
        again.generation, 2,
        "the edits' reload runs on top of the first"
    );
    release.send(()).unwrap();
    status_until(&mut seen, |s| s.count == 3).await;
    tokio::time::sleep(DEBOUNCE * 100).await;
    assert_eq!(gated.loads(), 3, "exactly one reload for the edits");
    assert_eq!(reloader.reloads.borrow().count, 3);
    following.abort();
}

#[tokio::test(start_paused = true)]
async fn a_restarted_watcher_is_up_only_after_its_rescan() {
    let (gated, release) = Gated::new();
    let (reloader, _dir) = reloader(gated);
    let mut seen = reloader.reloads.subscribe();
    reloader.reloads.send_modify(|s| {
        s.watcher.ok = false;
        s.watcher.error = Some("the file watcher's event thread stopped".into());
    });
    let restarted = tokio::spawn({
        let reloader = reloader.clone();
        async move { watcher(&reloader, None, DEBOUNCE).await }
    });
    let rescanning = status_until(&mut seen, decoding_big).await;
    assert!(
        !rescanning.watcher.ok,
        "edits made before the rescan are not followed yet: /healthz must not say 200"
    );
    release.send(()).unwrap();
    let up = status_until(&mut seen, |s| s.watcher.ok).await;
    assert_eq!((up.count, up.watcher.restarts), (2, 1));
    restarted.abort();
}

#[test]
fn an_empty_file_is_logged_once_while_it_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    let cluster = |name: &str| format!("\"@type\": {CLUSTER}\nname: {name}\nconnect_timeout: 1s\n");
    std::fs::write(&a, cluster("a")).unwrap();
    std::fs::write(&b, cluster("b")).unwrap();
    let fixtures = Fixtures::new(dir.path().to_path_buf(), Codec::envoy(), 1 << 20);
    let (logs, _logging) = Logs::capture();
    let mut generation = 0;
    let mut load = || {
        generation += 1;
        let loaded = fixtures.load(generation, &mut |_| {}).unwrap();
        assert!(
            loaded
                .get("n", CLUSTER)
                .unwrap()
                .resources
                .contains_key("a")
        );
        logs.text().matches("empty fixture file").count()
    };
    assert_eq!(load(), 0);
    std::fs::write(&a, "").unwrap();
    assert_eq!(load(), 1, "{}", logs.text());
    std::fs::write(&b, cluster("b2")).unwrap();
    assert_eq!(
        load(),
        1,
        "another edit while a.yaml stays empty: not again"
    );
    assert_eq!(load(), 1);
    std::fs::write(&a, cluster("a")).unwrap();
    assert_eq!(load(), 1);
    std::fs::write(&a, "").unwrap();
    assert_eq!(load(), 2, "emptied again: logged again");
}
