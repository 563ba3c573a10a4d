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
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use notify::{
    Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _,
    event::{AccessKind, AccessMode, ModifyKind},
};
use tokio::sync::mpsc;

/// What one notify event means for the fixture directory at `root`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Not about the fixtures.
    Ignore,
    /// Something below the directory changed: reload it.
    Reload,
    /// The directory itself (or its parent) was created, removed or renamed, or notify lost
    /// track (queue overflow, error): set the watches up again, then reload.
    Rewatch,
}

pub fn classify(root: &Path, event: &notify::Result<Event>) -> Signal {
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
    } else if event.paths.iter().any(|p| p.starts_with(root)) {
        Signal::Reload
    } else {
        // A sibling of the directory, seen through the parent's watch.
        Signal::Ignore
    }
}

/// Whether an event may mean a file's content changed. notify reports opens and read-only
/// closes; a reload's own reads cause them, so reacting would reload forever. A close after
/// writing is a real change. inotify cannot tell atime updates from chmod, and reading a file
/// may update its atime: content changes come with their own events.
pub fn touches_content(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        _ => true,
    }
}

/// The notify watcher and what it watches. Dropping it stops the notify thread.
pub struct WatchedRoot {
    root: PathBuf,
    notifier: RecommendedWatcher,
    rewatch: Arc<AtomicBool>,
    identity: Option<Identity>,
    /// The parent as it was when its watch was set up; `None` if it is not watched.
    parent: Option<Identity>,
}

impl WatchedRoot {
    /// Watches `root` (absolute) and its parent; every relevant event is one message on
    /// `signals`. The channel holds one message: a reload reads the whole directory, so one
    /// pending signal says all there is to say and further ones are dropped.
    pub fn start(root: PathBuf, signals: mpsc::Sender<()>) -> Result<Self, notify::Error> {
        let rewatch = Arc::new(AtomicBool::new(false));
        let handler = {
            let (root, rewatch) = (root.clone(), rewatch.clone());
            move |event: notify::Result<Event>| match classify(&root, &event) {
                Signal::Ignore => {}
                signal => {
                    if signal == Signal::Rewatch {
                        rewatch.store(true, Ordering::SeqCst);
                    }
                    // Full: a signal is already pending. Closed: the watcher is stopping.
                    let _ = signals.try_send(());
                }
            }
        };
        let mut notifier = notify::recommended_watcher(handler)?;
        notifier.watch(&root, RecursiveMode::Recursive)?;
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
            identity,
            parent,
        })
    }

    /// Before a reload: if the directory was replaced, watch the new one. Cheap when nothing
    /// happened (one `stat`); re-watching walks the directory tree, which only happens after
    /// the directory itself was swapped. Err: this watcher cannot follow the directory any
    /// more, and says why.
    pub fn refresh(&mut self) -> Result<(), String> {
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
        if !flagged && now == self.identity {
            return Ok(());
        }
        // The old watches may already be gone with the old directory; that error is expected.
        let _ = self.notifier.unwatch(&self.root);
        match self.notifier.watch(&self.root, RecursiveMode::Recursive) {
            Ok(()) => {
                tracing::info!(dir = %self.root.display(), "watching the fixture directory again");
                self.identity = now;
                Ok(())
            }
            Err(e) => Err(format!("cannot watch {} again: {e}", self.root.display())),
        }
    }
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
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, Flag, MetadataKind, RemoveKind, RenameMode};

    fn event(kind: EventKind, path: &str) -> notify::Result<Event> {
        Ok(Event::new(kind).add_path(PathBuf::from(path)))
    }

    #[test]
    fn changes_below_the_directory_reload() {
        let root = Path::new("/srv/fixtures");
        let modify = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        let create = EventKind::Create(CreateKind::Folder);
        let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::To));
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        for kind in [modify, create, renamed, closed] {
            let signal = classify(root, &event(kind, "/srv/fixtures/sub/a.yaml"));
            assert_eq!(signal, Signal::Reload, "{kind:?}");
        }
        let sibling = event(modify, "/srv/fixtures-old/a.yaml");
        assert_eq!(classify(root, &sibling), Signal::Ignore);
    }

    #[test]
    fn the_reloads_own_reads_are_ignored() {
        let root = Path::new("/srv/fixtures");
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        let read = EventKind::Access(AccessKind::Close(AccessMode::Read));
        assert_eq!(
            classify(root, &event(open, "/srv/fixtures/a.yaml")),
            Signal::Ignore
        );
        assert_eq!(
            classify(root, &event(read, "/srv/fixtures")),
            Signal::Ignore
        );
        let attrib = EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any));
        let signal = classify(root, &event(attrib, "/srv/fixtures/a.yaml"));
        assert_eq!(signal, Signal::Ignore);
    }

    #[test]
    fn replacing_the_directory_or_losing_events_rewatches() {
        let root = Path::new("/srv/fixtures");
        let removed = EventKind::Remove(RemoveKind::Folder);
        let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::To));
        assert_eq!(
            classify(root, &event(removed, "/srv/fixtures")),
            Signal::Rewatch
        );
        assert_eq!(
            classify(root, &event(renamed, "/srv/fixtures")),
            Signal::Rewatch
        );
        assert_eq!(
            classify(root, &event(removed, "/srv")),
            Signal::Rewatch,
            "the parent removed"
        );
        let overflow = Ok(Event::new(EventKind::Other).set_flag(Flag::Rescan));
        assert_eq!(classify(root, &overflow), Signal::Rewatch);
        let error = Err(notify::Error::generic("inotify failed"));
        assert_eq!(classify(root, &error), Signal::Rewatch);
    }

    #[test]
    fn a_gone_directory_names_the_parent_watch_it_relied_on() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("live");
        std::fs::create_dir(&root).unwrap();
        let (tx, _rx) = mpsc::channel(1);
        let mut watched = WatchedRoot::start(root.clone(), tx).unwrap();
        std::fs::remove_dir(&root).unwrap();
        assert_eq!(watched.refresh(), Ok(()), "the parent will show its return");
        // A parent that could not be watched (no permission, or `/`) was never relied on.
        watched.parent = None;
        let error = watched.refresh().unwrap_err();
        assert!(error.ends_with("live is gone, and its parent is not watched for its return"));
        drop(base);
        watched.parent = Some((0, 0));
        let error = watched.refresh().unwrap_err();
        assert!(
            error.ends_with("live is gone, and so is the parent directory watched for its return")
        );
    }
}
