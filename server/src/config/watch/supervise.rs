//! Keeping a watcher alive. If the one following the directory dies (its notify thread ends,
//! the directory and the parent that would show its return are both gone, a re-watch fails, a
//! panic), serving stale fixtures forever without a word would be the worst outcome: the
//! failure is logged as an error, shown in `/status` and `/healthz`, and a new watcher is
//! started with a full rescan, retrying with a capped backoff until one works.

use std::{future::Future, sync::Arc, time::Duration};

use tokio::{
    sync::{mpsc, watch},
    task::JoinSet,
};

use super::{
    ReloadStatus,
    debounce::Step,
    events::WatchedRoot,
    follow::follow,
    reload::{Reloader, panic_message},
};

/// The first retry comes quickly (a directory swapped by a deploy is back at once); later ones
/// slow down to this, which is also how long a re-created directory may wait to be noticed.
const FIRST_RETRY: Duration = Duration::from_millis(250);
const MAX_RETRY: Duration = Duration::from_secs(2);

/// A watcher set up by [`super::Watcher::start_with`], handed to the first run.
pub(super) type Watched = (WatchedRoot, mpsc::Receiver<Step>);

/// Follows the directory for as long as the task runs: with `first`, then with new watchers.
pub(super) async fn run(reloader: Arc<Reloader>, first: Watched, debounce: Duration) {
    let reloads = reloader.reloads.clone();
    let mut first = Some(first);
    supervise(&reloads, move || {
        let (reloader, first) = (reloader.clone(), first.take());
        async move { watcher(&reloader, first, debounce).await }
    })
    .await;
}

/// One watcher's life: set up (or take `first`), rescan if it replaces a failed one, follow.
/// Returns why it ended.
pub(super) async fn watcher(
    reloader: &Reloader,
    first: Option<Watched>,
    debounce: Duration,
) -> String {
    let (watched, signals) = match first {
        Some(first) => first,
        None => {
            let (tx, rx) = WatchedRoot::channel();
            if !reloader.root.is_dir() {
                let dir = reloader.dir.display();
                return format!("{dir} is not there; waiting for it to come back");
            }
            match WatchedRoot::start(reloader.root.clone(), tx) {
                Ok(watched) => {
                    // Events were missed while nothing watched: read everything again, and
                    // only then say that edits are followed (`/healthz` turns 200).
                    reloader.reload().await;
                    recovered(&reloader.reloads);
                    (watched, rx)
                }
                Err(e) => return format!("cannot watch {}: {e}", reloader.dir.display()),
            }
        }
    };
    follow(reloader, watched, signals, debounce).await
}

/// Runs what `start` returns as a task; whenever it ends (it returns why) or panics, reports
/// the failure and starts it again after a backoff. Ends only when this future is dropped
/// (which drops the running task too).
pub(super) async fn supervise<F, Fut>(reloads: &watch::Sender<ReloadStatus>, mut start: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = String> + Send + 'static,
{
    let mut retry = FIRST_RETRY;
    loop {
        let mut task = JoinSet::new();
        task.spawn(start());
        let why = match task.join_next().await {
            Some(Ok(why)) => why,
            Some(Err(e)) if e.is_panic() => format!("panicked: {}", panic_message(e.into_panic())),
            // Cancelled: only when the runtime shuts down.
            Some(Err(_)) | None => return,
        };
        if reloads.borrow().watcher.ok {
            // It had been working: a new failure, so the first retry comes quickly again.
            retry = FIRST_RETRY;
        }
        failed(reloads, &why, retry);
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(MAX_RETRY);
    }
}

/// Marks the watcher down. Its first failure is an error in the log; while it stays down, a
/// different reason is a warning and the same one again (on every retry) only a debug line.
fn failed(reloads: &watch::Sender<ReloadStatus>, why: &str, retry: Duration) {
    let (was_ok, repeated) = {
        let health = &reloads.borrow().watcher;
        (health.ok, health.error.as_deref() == Some(why))
    };
    let message =
        "the fixture watcher is down: fixture changes are not followed until it is restarted";
    if was_ok {
        tracing::error!(error = %why, retry_in = ?retry, "{message}");
    } else if !repeated {
        tracing::warn!(error = %why, retry_in = ?retry, "{message}");
    } else {
        tracing::debug!(error = %why, retry_in = ?retry, "{message}");
    }
    reloads.send_modify(|s| {
        let health = &mut s.watcher;
        if health.ok {
            health.since = Some(std::time::SystemTime::now());
        }
        health.ok = false;
        health.error = Some(why.to_string());
        // A reload the failed watcher had running will not be published.
        s.in_progress = None;
    });
}

fn recovered(reloads: &watch::Sender<ReloadStatus>) {
    tracing::info!("the fixture watcher is running again; the directory was read again");
    reloads.send_modify(|s| {
        let health = &mut s.watcher;
        health.ok = true;
        health.error = None;
        health.since = None;
        health.restarts += 1;
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::test_support::snapshot;

    /// A real panic in the supervised task: reported with its message, then a new task runs
    /// and reports itself recovered.
    #[tokio::test(start_paused = true)]
    async fn reload_task_panic_is_reported_and_restarted() {
        let status = ReloadStatus::ok(&snapshot(1, &[]));
        let (reloads, mut seen) = watch::channel(status);
        let runs = Arc::new(AtomicUsize::new(0));
        let supervisor = {
            let (reloads, runs) = (reloads.clone(), runs.clone());
            tokio::spawn(async move {
                supervise(&reloads.clone(), move || {
                    let (reloads, run) = (reloads.clone(), runs.fetch_add(1, Ordering::SeqCst));
                    async move {
                        if run == 0 {
                            panic!("reload loop bug");
                        }
                        recovered(&reloads);
                        std::future::pending().await
                    }
                })
                .await;
            })
        };
        let down = seen.wait_for(|s| !s.watcher.ok).await.unwrap().clone();
        assert_eq!(
            down.watcher.error.as_deref(),
            Some("panicked: reload loop bug")
        );
        assert!(down.watcher.since.is_some());
        let up = seen.wait_for(|s| s.watcher.ok).await.unwrap().clone();
        assert_eq!(up.watcher.restarts, 1);
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        supervisor.abort();
    }

    /// A watcher that cannot be set up is retried, ever more slowly up to a cap, and reported
    /// once; the count of restarts moves only when one works.
    #[tokio::test(start_paused = true)]
    async fn failing_watcher_is_retried_with_backoff() {
        let (reloads, mut seen) = watch::channel(ReloadStatus::ok(&snapshot(1, &[])));
        let starts = Arc::new(std::sync::Mutex::new(Vec::new()));
        let supervisor = {
            let (reloads, starts) = (reloads.clone(), starts.clone());
            tokio::spawn(async move {
                supervise(&reloads.clone(), move || {
                    let reloads = reloads.clone();
                    let mut starts = starts.lock().unwrap();
                    starts.push(tokio::time::Instant::now());
                    let attempt = starts.len();
                    async move {
                        if attempt < 6 {
                            return "directory gone".to_string();
                        }
                        recovered(&reloads);
                        std::future::pending().await
                    }
                })
                .await;
            })
        };
        seen.wait_for(|s| s.watcher.restarts == 1).await.unwrap();
        let starts = starts.lock().unwrap().clone();
        let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        let ms = Duration::from_millis;
        assert_eq!(gaps, [ms(250), ms(500), ms(1000), ms(2000), ms(2000)]);
        supervisor.abort();
    }
}
