//! Certificate rotation without a restart: the TLS files are watched and, after a quiet
//! period, read again; every new connection takes the newest configuration (connections
//! already open keep theirs, as TLS must).
//!
//! The files' parent directories are watched, not the files: renaming a new file into place
//! replaces the inode a file watch would be on, and Kubernetes swaps a `..data` symlink next
//! to the mounted names. A file whose content did not change is not a new configuration. A
//! bad file (half-written, a key that does not match) keeps the last good configuration
//! serving and shows as `reload_error` in `/status` and the log; the next good write clears it.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

use crate::{
    config::watch::{
        debounce::{Debounce, Step},
        touches_content,
    },
    error::Error,
    net::tls::{self, ClientCerts, Loaded, TlsFiles},
};

/// The configuration being served, and how following the files goes.
#[derive(Debug, Clone)]
pub(crate) struct TlsView {
    pub files: TlsFiles,
    pub loaded: Arc<Loaded>,
    /// Why the latest attempt to read the files failed; `None` after a good one.
    pub reload_error: Option<String>,
    /// Configurations loaded since start-up, the first included.
    pub loads: u64,
}

/// Loads `files` (an error is a start-up failure) and follows them from then on. The
/// follower ends once every receiver is gone.
pub(crate) fn follow(
    files: TlsFiles,
    client_certs: ClientCerts,
    quiet: Duration,
) -> Result<watch::Receiver<TlsView>, Error> {
    let loaded = tls::load(&files, client_certs)?;
    let view = TlsView {
        files: files.clone(),
        loaded: Arc::new(loaded),
        reload_error: None,
        loads: 1,
    };
    let (tx, rx) = watch::channel(view);
    // One pending signal says all there is to say.
    let (signal, events) = mpsc::channel(1);
    let watcher = watch_dirs(&files, signal)?;
    tokio::spawn(run(tx, client_certs, events, watcher, quiet));
    Ok(rx)
}

/// A notify watcher on the directories of `files`, signalling content changes there.
fn watch_dirs(files: &TlsFiles, signal: mpsc::Sender<()>) -> Result<RecommendedWatcher, Error> {
    let dirs: BTreeSet<PathBuf> = files.paths().into_iter().map(parent).collect();
    let handler = move |event: notify::Result<notify::Event>| {
        if event.as_ref().is_ok_and(touches_content) || event.is_err() {
            let _ = signal.try_send(());
        }
    };
    let fail = |e: notify::Error| Error::Tls(format!("watching the TLS files: {e}"));
    let mut watcher = notify::recommended_watcher(handler).map_err(fail)?;
    for dir in &dirs {
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| Error::Tls(format!("watching {}: {e}", dir.display())))?;
    }
    Ok(watcher)
}

fn parent(file: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

async fn run(
    tx: watch::Sender<TlsView>,
    client_certs: ClientCerts,
    mut events: mpsc::Receiver<()>,
    _watcher: RecommendedWatcher,
    quiet: Duration,
) {
    let mut debounce = Debounce::new(quiet);
    loop {
        let deadline = debounce.deadline().map(tokio::time::Instant::from_std);
        let due = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tx.closed() => return,
            event = events.recv() => match event {
                Some(()) => debounce.on_event(Instant::now(), Step::Unknown),
                None => return,
            },
            _ = due => {
                debounce.fire();
                reload(&tx, client_certs).await;
            }
        }
    }
}

/// Reads the files again; publishes a changed configuration, or the error.
async fn reload(tx: &watch::Sender<TlsView>, client_certs: ClientCerts) {
    let files = tx.borrow().files.clone();
    let read = tokio::task::spawn_blocking(move || tls::load(&files, client_certs)).await;
    let outcome = read.unwrap_or_else(|e| Err(Error::Tls(format!("reading the TLS files: {e}"))));
    tx.send_if_modified(|view| apply(view, outcome));
}

/// The view after one reload; whether it changed.
fn apply(view: &mut TlsView, outcome: Result<Loaded, Error>) -> bool {
    match outcome {
        Ok(loaded) if loaded.fingerprint == view.loaded.fingerprint => {
            view.reload_error.take().is_some()
        }
        Ok(loaded) => {
            info!(
                subject = loaded.cert.summary(),
                serial = %loaded.cert.serial,
                "TLS files reloaded: new connections use the new certificate"
            );
            view.loaded = Arc::new(loaded);
            view.reload_error = None;
            view.loads += 1;
            true
        }
        Err(e) => {
            let message = e.to_string();
            warn!(error = %message, "TLS files rejected; the last good certificate stays in use");
            view.reload_error = Some(message);
            true
        }
    }
}
