//! Symlinks under the fixture directory that lead out of it. The loader follows every link, so
//! what such a link points at is served; its edits happen outside the watched tree, where no
//! watch of the directory sees them. This finds those links, so [`super::events::WatchedRoot`]
//! watches where they lead: a linked directory through the directory's own recursive watch
//! (notify follows links while it walks, but only links present when it walks), a linked file
//! through its parent directory, which inotify needs (a rename over a file replaces its inode).

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use xdsloop_proto::Format;

use crate::config::fixtures::is_ignored;

/// How deep the scan goes, as the loader's walk (a link cycle must end).
const MAX_DEPTH: usize = 32;

/// The links leading out of one fixture directory, as they were at the last scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Links {
    /// Each such link (its path under the directory) and where it leads (canonical).
    found: BTreeSet<(PathBuf, PathBuf)>,
    /// The directories that hold linked files (canonical): watched non-recursively.
    file_parents: BTreeSet<PathBuf>,
}

impl Links {
    /// The links under `root` whose target lies outside it. Hidden and editor-leftover names
    /// are skipped as the loader skips them; dangling links are the loader's to report.
    pub(super) fn scan(root: &Path) -> Self {
        let mut links = Self::default();
        if let Ok(canonical_root) = std::fs::canonicalize(root) {
            links.walk(root, &canonical_root, 0);
        }
        links
    }

    fn walk(&mut self, dir: &Path, canonical_root: &Path, depth: usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if depth >= MAX_DEPTH || is_ignored(&entry.file_name()) {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                self.walk(&path, canonical_root, depth + 1);
                continue;
            }
            if !kind.is_symlink() {
                continue;
            }
            let Ok(target) = std::fs::canonicalize(&path) else {
                continue;
            };
            if target.starts_with(canonical_root) {
                // Inside: its target is watched (and walked) where it is.
                continue;
            }
            if target.is_dir() {
                // Links inside the linked directory may lead elsewhere again.
                self.walk(&path, canonical_root, depth + 1);
            } else if let Some(parent) = target.parent() {
                self.file_parents.insert(parent.to_path_buf());
            }
            self.found.insert((path, target));
        }
    }

    /// Directories to watch non-recursively for the linked files.
    pub(super) fn file_parents(&self) -> impl Iterator<Item = &Path> {
        self.file_parents.iter().map(PathBuf::as_path)
    }

    /// Whether an event about `path` may be about a linked file: a fixture name in a directory
    /// that holds one. A sibling of the linked file is reloaded for too, which changes nothing.
    pub(super) fn reads(&self, path: &Path) -> bool {
        let in_parent = path.parent().is_some_and(|p| self.file_parents.contains(p));
        let fixture = path.file_name().is_some_and(|n| !is_ignored(n));
        in_parent && fixture && Format::from_path(path).is_some()
    }

    /// Whether `path` was a link leading out, at the last scan.
    pub(super) fn is_link(&self, path: &Path) -> bool {
        self.found.iter().any(|(link, _)| link == path)
    }

    /// How many links lead out.
    pub(super) fn len(&self) -> usize {
        self.found.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn only_links_that_leave_the_directory_are_found_with_where_they_lead() {
        let top = tempfile::tempdir().unwrap();
        let (fx, ext) = (top.path().join("fx"), top.path().join("ext"));
        std::fs::create_dir_all(fx.join("sub")).unwrap();
        std::fs::create_dir_all(ext.join("dir")).unwrap();
        std::fs::write(ext.join("a.yaml"), "").unwrap();
        std::fs::write(fx.join("sub/in.yaml"), "").unwrap();
        let link =
            |target: &str, at: &str| std::os::unix::fs::symlink(target, fx.join(at)).unwrap();
        link("../ext/a.yaml", "a.yaml");
        link("../../ext/dir", "sub/linked");
        link("sub/in.yaml", "inside.yaml");
        link("../ext/missing.yaml", "dangling.yaml");
        link("../ext/a.yaml", ".hidden.yaml");

        let links = Links::scan(&fx);
        let ext = std::fs::canonicalize(&ext).unwrap();
        let found: Vec<_> = links.found.iter().cloned().collect();
        assert_eq!(
            found,
            [
                (fx.join("a.yaml"), ext.join("a.yaml")),
                (fx.join("sub/linked"), ext.join("dir")),
            ]
        );
        assert_eq!(links.file_parents().collect::<Vec<_>>(), [ext.as_path()]);
        assert!(links.reads(&ext.join("a.yaml")));
        assert!(!links.reads(&ext.join("a.txt")), "not a fixture name");
        assert!(
            !links.reads(&ext.join("dir/x.yaml")),
            "the directory link is watched by walking"
        );
        assert_eq!(
            Links::scan(&fx.join("sub")).len(),
            1,
            "from a sub-directory"
        );
    }
}
