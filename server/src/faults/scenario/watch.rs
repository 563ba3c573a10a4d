//! `--scenario FILE`: read it at start (a bad file is a start-up error), then reload it after
//! every edit. A bad edit is refused with `FILE:line:col: ...` in the log and `/status`, and
//! the scenario in force stays.
//!
//! The file's directory is watched, not the file: editors save by writing a temporary file and
//! renaming it over the old one, which ends a watch on the file itself.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::{sync::mpsc, task::JoinHandle, time::Instant};
use tracing::{info, warn};

use super::{
    installed::{Origin, Scenarios},
    model::Scenario,
};
use crate::config::watch::{
    debounce::{Debounce, Step},
    touches_content,
};

/// Follows one scenario file until dropped.
#[derive(Debug)]
pub(crate) struct ScenarioWatcher {
    _notify: RecommendedWatcher,
    task: JoinHandle<()>,
}

impl Drop for ScenarioWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads and checks the scenario at `path` and its text, or says why it cannot
/// (`path:line:col: ...`).
pub(crate) fn read(path: &Path) -> Result<(Scenario, String), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read the scenario: {e}", path.display()))?;
    let scenario = Scenario::from_yaml(&text).map_err(|e| located(path, &e))?;
    Ok((scenario, text))
}

/// Reads `path` into `scenarios`, or says why it cannot (`path:line:col: ...`).
pub(crate) fn load(scenarios: &Scenarios, path: &Path) -> Result<(), String> {
    let (scenario, text) = read(path)?;
    let rules = scenario.rules.len();
    let installed = scenarios
        .install(scenario, Origin::File, Some(path.to_path_buf()), Some(text))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    info!(path = %path.display(), rules, generation = installed.generation,
        "scenario loaded (rule counters start at 0)");
    Ok(())
}

fn located(path: &Path, error: &super::ParseError) -> String {
    format!("{}:{error}", path.display())
}

/// Loads `path` (an error if it is unreadable or invalid) and reloads it after every change.
pub(crate) fn start(
    scenarios: Scenarios,
    path: PathBuf,
    quiet: Duration,
) -> Result<ScenarioWatcher, String> {
    load(&scenarios, &path)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(ToOwned::to_owned);
    let (tx, rx) = mpsc::channel(16);
    let mut notify = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // The reload's own read of the file makes inotify report an open and a read-only
        // close: taken for changes, every reload would cause the next one.
        let ours = match &event {
            Ok(event) => {
                touches_content(event)
                    && event.paths.iter().any(|p| p.file_name() == name.as_deref())
            }
            Err(_) => true,
        };
        if ours {
            let _ = tx.try_send(());
        }
    })
    .map_err(|e| format!("{}: cannot watch the scenario: {e}", path.display()))?;
    notify
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|e| format!("{}: cannot watch the scenario: {e}", dir.display()))?;
    let task = tokio::spawn(follow(scenarios, path, rx, quiet));
    Ok(ScenarioWatcher {
        _notify: notify,
        task,
    })
}

async fn follow(
    scenarios: Scenarios,
    path: PathBuf,
    mut events: mpsc::Receiver<()>,
    quiet: Duration,
) {
    let mut debounce = Debounce::new(quiet);
    loop {
        let deadline = debounce.deadline();
        tokio::select! {
            event = events.recv() => match event {
                // The scenario watch does not tell complete writes apart: the full quiet period.
                Some(()) => debounce.on_event(Instant::now().into_std(), Step::Unknown),
                None => return,
            },
            () = until(deadline) => {
                debounce.fire();
                if let Err(error) = load(&scenarios, &path) {
                    warn!(path = %path.display(), %error,
                        "scenario rejected; the one in force stays");
                    scenarios.reject(Origin::File, error);
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

#[cfg(test)]
mod tests;
