//! One watcher's loop: file events → debounce → reload, one reload at a time.
//!
//! A reload runs beside the loop rather than inside it, so events keep arriving while it runs
//! (a large file can take seconds to decode): they start the next burst, and the reload for it
//! starts as soon as the running one has finished, if the burst is quiet by then.

use std::{future::Future, pin::Pin, time::Duration};

use tokio::{sync::mpsc, time::Instant};

use super::{
    debounce::{Debounce, Step},
    events::WatchedRoot,
    reload::Reloader,
};

type Running<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Follows the directory until this watcher cannot any more; returns why (the supervisor then
/// starts a new one).
pub(super) async fn follow(
    reloader: &Reloader,
    mut watched: WatchedRoot,
    mut signals: mpsc::Receiver<Step>,
    quiet: Duration,
) -> String {
    let mut debounce = Debounce::new(quiet);
    let mut running: Option<Running<'_>> = None;
    // Set when the directory can no longer be followed: reported once the reload that shows
    // its effect (usually "directory gone") is published.
    let mut lost: Option<String> = None;
    loop {
        let deadline = debounce.deadline();
        tokio::select! {
            signal = signals.recv() => match signal {
                Some(step) => {
                    let now = Instant::now().into_std();
                    debounce.on_event(now, step);
                    if watched.take_dropped() {
                        debounce.on_event(now, Step::Unknown);
                    }
                }
                // The notify watcher (owned here, with the sender) ended its thread.
                None => return "the file watcher's event thread stopped".to_string(),
            },
            () = until(deadline), if running.is_none() => {
                debounce.fire();
                lost = watched.refresh().err();
                running = Some(Box::pin(reloader.reload()));
            }
            () = finish(&mut running), if running.is_some() => {
                running = None;
                if let Some(why) = lost.take() {
                    return why;
                }
            }
        }
    }
}

async fn until(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

async fn finish(running: &mut Option<Running<'_>>) {
    match running {
        Some(reload) => reload.await,
        None => std::future::pending().await,
    }
}
