//! File-system events → "reload" signals, and keeping the notify watches on the fixture
//! directory alive when the directory itself is replaced.
//!
//! The directory is watched recursively (notify adds watches for sub-directories as they are
//! created or moved in) and its parent non-recursively: the parent's events are the only way to
//! learn that the directory was deleted and re-created, or that another directory (or a symlink)
//! was renamed into its place. Then the watches are set up again on the next reload.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, RwLock,
        atomic::{AtomicBool, Ordering},
    },
};

use notify::{
    Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _,
    event::{AccessKind, AccessMode, CreateKind, ModifyKind, RemoveKind, RenameMode},
};
use tokio::sync::mpsc;
use xdsloop_proto::Format;

use super::{debounce::Step, links::Links};
use crate::config::fixtures::is_ignored;

/// Steps queued for the watcher's loop. More than this pending means the loop is far behind;
/// further ones are dropped and the burst is treated as [`Step::Unknown`].
const QUEUED_STEPS: usize = 1024;

/// What one notify event means for the fixture directory at `root`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Signal {
    /// Not about the fixtures.
    Ignore,
    /// Something below the directory changed: reload it.
    Reload,
    /// The directory itself (or its parent) was created, removed or renamed, or notify lost
    /// track (queue overflow, error): set the watches up again, then reload.
    Rewatch,
}

pub(super) fn classify(root: &Path, links: &Links, event: &notify::Result<Event>) -> Signal {
    let event = match event {
        Ok(event) => event,
        Err(_) => return Signal::Rewatch,
    };
    if event.need_rescan() {
        return Signal::Rewatch;
    }
    if !touches_content(event) {
        return Signal::Ignore;
    }
    if event.paths.is_empty() {
        return Signal::Reload;
    }
    // The directory itself, or its parent (watched too), was created, removed or renamed: the
    // parent going means nothing would see the directory come back, which `refresh` reports.
    let root_or_above = matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
    ) && event.paths.iter().any(|p| root.starts_with(p));
    if root_or_above {
        Signal::Rewatch
    } else if event
        .paths
        .iter()
        .any(|p| p.starts_with(root) || links.reads(p))
    {
        Signal::Reload
    } else {
        // A sibling of the directory, seen through the parent's watch, or of a linked file.
        Signal::Ignore
    }
}

/// Whether an event may mean a file's content changed. notify reports opens and read-only
/// closes; a reload's own reads cause them, so reacting would reload forever. A close after
/// writing is a real change. inotify cannot tell atime updates from chmod, and reading a file
/// may update its atime: content changes come with their own events.
pub(crate) fn touches_content(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        _ => true,
    }
}

/// What a relevant event (not [`Signal::Ignore`]) says about each file it names, for the
/// debounce: whether the file is complete.
pub(super) fn steps(
    root: &Path,
    links: &Links,
    signal: Signal,
    event: &notify::Result<Event>,
) -> Vec<Step> {
    let event = match event {
        Ok(event) if signal == Signal::Reload && !event.paths.is_empty() => event,
        _ => return vec![Step::Unknown],
    };
    // A link made or removed changes what the loader reads, whatever its name: unknown
    // until the directory is read again (and the links scanned again).
    let link = |path: &PathBuf| {
        links.is_link(path) || std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink())
    };
    if matches!(event.kind, EventKind::Create(_) | EventKind::Remove(_))
        && event.paths.iter().any(link)
    {
        return vec![Step::Unknown];
    }
    let step = |path: &PathBuf, make: fn(PathBuf) -> Step| {
        if read_by_loader(root, path) || links.reads(path) {
            make(path.clone())
        } else {
            Step::Other
        }
    };
    let each = |make: fn(PathBuf) -> Step| -> Vec<Step> {
        event.paths.iter().map(|p| step(p, make)).collect()
    };
    match event.kind {
        // A new directory's first files may be written before notify watches it; a removed
        // one takes its files' events with it.
        EventKind::Create(CreateKind::Folder) | EventKind::Remove(RemoveKind::Folder) => {
            vec![Step::Unknown]
        }
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => each(Step::Done),
        EventKind::Modify(ModifyKind::Name(RenameMode::To)) => each(Step::Done),
        EventKind::Modify(ModifyKind::Name(RenameMode::From)) => each(Step::Gone),
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) if event.paths.len() == 2 => {
            vec![
                step(&event.paths[0], Step::Gone),
                step(&event.paths[1], Step::Done),
            ]
        }
        EventKind::Modify(ModifyKind::Name(_)) => vec![Step::Unknown],
        EventKind::Remove(_) => each(Step::Gone),
        EventKind::Create(_) | EventKind::Modify(_) => each(Step::Writing),
        _ => vec![Step::Unknown],
    }
}

/// Whether the loader reads `path` (below `root`): a fixture extension, and no hidden or
/// editor-leftover name on the way.
fn read_by_loader(root: &Path, path: &Path) -> bool {
    let Ok(relative) = path.strip_prefix(root) else {
        return false;
    };
    Format::from_path(relative).is_some()
        && !relative.components().any(|c| is_ignored(c.as_os_str()))
}

/// The notify watcher and what it watches. Dropping it stops the notify thread.
pub(super) struct WatchedRoot {
    root: PathBuf,
    notifier: RecommendedWatcher,
    rewatch: Arc<AtomicBool>,
    /// Set when a step could not be queued: the loop treats its burst as unknown.
    dropped: Arc<AtomicBool>,
    identity: Option<Identity>,
    /// The parent as it was when its watch was set up; `None` if it is not watched.
    parent: Option<Identity>,
    /// The links leading out of the directory, as last scanned (read by the event handler).
    links: Arc<RwLock<Links>>,
}

impl WatchedRoot {
    /// The channel for [`Self::start`].
    pub(super) fn channel() -> (mpsc::Sender<Step>, mpsc::Receiver<Step>) {
        mpsc::channel(QUEUED_STEPS)
    }

    /// Watches `root` (absolute) and its parent; every relevant event becomes one [`Step`]
    /// per file it names on `signals` (made by [`Self::channel`]).
    pub(super) fn start(root: PathBuf, signals: mpsc::Sender<Step>) -> Result<Self, notify::Error> {
        let rewatch = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicBool::new(false));
        let links = Arc::new(RwLock::new(Links::scan(&root)));
        let handler = {
            let (root, rewatch, dropped) = (root.clone(), rewatch.clone(), dropped.clone());
            let links = links.clone();
            move |event: notify::Result<Event>| {
                let links = links.read().unwrap_or_else(|e| e.into_inner());
                let signal = classify(&root, &links, &event);
                if signal == Signal::Ignore {
                    return;
                }
                if signal == Signal::Rewatch {
                    rewatch.store(true, Ordering::SeqCst);
                }
                for step in steps(&root, &links, signal, &event) {
                    // Full: the loop has plenty pending and learns that some were lost.
                    // Closed: the watcher is stopping.
                    if let Err(mpsc::error::TrySendError::Full(_)) = signals.try_send(step) {
                        dropped.store(true, Ordering::SeqCst);
                    }
                }
            }
        };
        let mut notifier = notify::recommended_watcher(handler)?;
        notifier.watch(&root, RecursiveMode::Recursive)?;
        let scanned = links.read().unwrap_or_else(|e| e.into_inner()).clone();
        watch_link_parents(&mut notifier, &scanned)?;
        let mut parent = None;
        if let Some(path) = root.parent() {
            // Best effort: without it, a replaced directory is only noticed if notify reports
            // the old one's removal, and a deleted one only by the supervisor's retries.
            match notifier.watch(path, RecursiveMode::NonRecursive) {
                Ok(()) => parent = identity(path),
                Err(e) => {
                    tracing::debug!(parent = %path.display(), error = %e, "cannot watch the fixture directory's parent");
                }
            }
        }
        let identity = identity(&root);
        Ok(Self {
            root,
            notifier,
            rewatch,
            dropped,
            identity,
            parent,
            links,
        })
    }

    /// Whether steps were dropped since the last call (the queue was full).
    pub(super) fn take_dropped(&self) -> bool {
        self.dropped.swap(false, Ordering::SeqCst)
    }

    /// Before a reload: if the directory was replaced, watch the new one. Cheap when nothing
    /// happened (one `stat`); re-watching walks the directory tree, which only happens after
    /// the directory itself was swapped. Err: this watcher cannot follow the directory any
    /// more, and says why.
    pub(super) fn refresh(&mut self) -> Result<(), String> {
        let flagged = self.rewatch.swap(false, Ordering::SeqCst);
        let now = identity(&self.root);
        if now.is_none() {
            // Missing: the reload reports it, and the parent's watch says when it is back,
            // unless the parent is gone (or replaced) too.
            let parent = self.root.parent().and_then(identity);
            if self.parent.is_some() && parent == self.parent {
                return Ok(());
            }
            let root = self.root.display();
            return Err(match self.parent {
                Some(_) => {
                    format!("{root} is gone, and so is the parent directory watched for its return")
                }
                None => format!("{root} is gone, and its parent is not watched for its return"),
            });
        }
        let links = Links::scan(&self.root);
        let relinked = *self.links.read().unwrap_or_else(|e| e.into_inner()) != links;
        if relinked {
            // notify follows the links it finds while walking the directory, so a new one
            // needs a new walk; a linked file's directory needs a watch of its own.
            let old = std::mem::replace(
                &mut *self.links.write().unwrap_or_else(|e| e.into_inner()),
                links.clone(),
            );
            for parent in old.file_parents() {
                let _ = self.notifier.unwatch(parent);
            }
            if !links.is_empty() {
                tracing::info!(dir = %self.root.display(), links = links.len(),
                    "watching where the symlinks leading out of the fixture directory point");
            }
        }
        if !flagged && !relinked && now == self.identity {
            return Ok(());
        }
        // The old watches may already be gone with the old directory; that error is expected.
        let _ = self.notifier.unwatch(&self.root);
        if let Err(e) = self.notifier.watch(&self.root, RecursiveMode::Recursive) {
            return Err(format!("cannot watch {} again: {e}", self.root.display()));
        }
        if !relinked {
            tracing::info!(dir = %self.root.display(), "watching the fixture directory again");
        }
        self.identity = now;
        let links = self.links.read().unwrap_or_else(|e| e.into_inner()).clone();
        watch_link_parents(&mut self.notifier, &links).map_err(|e| e.to_string())
    }
}

/// Watches the directories of the linked files `links` found (a file's own watch would be
/// lost when an editor renames a new file over it).
fn watch_link_parents(notifier: &mut RecommendedWatcher, links: &Links) -> notify::Result<()> {
    for parent in links.file_parents() {
        notifier
            .watch(parent, RecursiveMode::NonRecursive)
            .map_err(|e| {
                let why = format!(
                    "cannot watch {}, where a fixture symlink points: {e}",
                    parent.display()
                );
                notify::Error::generic(&why)
            })?;
    }
    Ok(())
}

/// Which directory a path currently names (device, inode), to notice it was replaced.
type Identity = (u64, u64);

#[cfg(unix)]
fn identity(path: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(path: &Path) -> Option<Identity> {
    // Without inodes only presence is known; replacements are caught by the Rewatch signal.
    std::fs::metadata(path).ok().map(|_| (0, 0))
}

#[cfg(test)]
mod tests;
