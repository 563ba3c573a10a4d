//! The naive server's resources: every fixture file under a directory (no per-node overlays),
//! re-read when the directory's content changes. With [`Bug::SkipBadFiles`] a file that does
//! not decode is skipped instead of keeping the last good set.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use tokio::{sync::watch, task::JoinHandle};
use xdsloop_proto::{Format, Resource, version::fnv1a};

use super::Bug;
use crate::harness::CODEC;

/// type URL → name → resource.
pub(super) type Set = BTreeMap<String, BTreeMap<String, Resource>>;

/// How often the directory is read again: the double polls, which is simple and sees every
/// kind of write (in place, by rename, several writes).
const POLL: Duration = Duration::from_millis(25);

/// How often [`Legal::Churn`](super::Legal::Churn) changes every resource.
const CHURN: Duration = Duration::from_millis(150);

/// Loads `dir` and keeps publishing it on change (never, with [`Bug::IgnoreEdits`]); with
/// `churn`, every resource also changes every [`CHURN`].
pub(super) fn watch(
    dir: PathBuf,
    bug: Bug,
    churn: bool,
) -> (watch::Receiver<Arc<Set>>, JoinHandle<()>) {
    let mut base = load(&dir, bug).expect("the naive server's fixtures load");
    let (tx, rx) = watch::channel(Arc::new(base.clone()));
    let task = tokio::spawn(async move {
        if bug == Bug::IgnoreEdits {
            // Keeps the sender: the streams go on serving the first set.
            std::future::pending::<()>().await;
        }
        let mut seen = content_hash(&dir);
        let mut tick = 0u64;
        let mut since_churn = Duration::ZERO;
        // The naive server has no file watcher: it reloads by polling its directory, the
        // simplest reload a real control plane might have.
        loop {
            tokio::time::sleep(POLL).await;
            since_churn += POLL;
            let now = content_hash(&dir);
            let reloaded = now != seen;
            if reloaded {
                seen = now;
                match load(&dir, bug) {
                    Ok(set) => base = set,
                    Err(_) => continue,
                }
            }
            let churned = churn && since_churn >= CHURN;
            if churned {
                since_churn = Duration::ZERO;
                tick += 1;
            }
            if reloaded || churned {
                let set = if churn {
                    churn_of(&base, tick)
                } else {
                    base.clone()
                };
                tx.send_replace(Arc::new(set));
            }
        }
    });
    (rx, task)
}

/// `set` with every resource changed: an unknown field (number 9999, the tick) appended to
/// its encoding, which every decoder keeps or skips, and a version of its own.
fn churn_of(set: &Set, tick: u64) -> Set {
    let mut out = set.clone();
    for resource in out.values_mut().flat_map(BTreeMap::values_mut) {
        let mut bytes = resource.bytes.to_vec();
        // Field 9999, wire type 0 (varint): the tag (9999 << 3), then the value.
        push_varint(&mut bytes, 9999 << 3);
        push_varint(&mut bytes, tick);
        resource.bytes = bytes.into();
        resource.version = format!("{}-churn{tick}", resource.version);
    }
    out
}

fn push_varint(bytes: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            bytes.push(byte);
            return;
        }
        bytes.push(byte | 0x80);
    }
}

/// Every fixture file decoded; an error names the file (the caller keeps the last good set).
pub(super) fn load(dir: &Path, bug: Bug) -> Result<Set, String> {
    let mut set = Set::new();
    for path in files(dir) {
        let Some(format) = Format::from_path(&path) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        match CODEC.decode_fixture(&text, format) {
            Ok(docs) => {
                for resource in docs.into_iter().flat_map(|d| d.resources) {
                    let by_type = set.entry(resource.type_url.clone()).or_default();
                    by_type.insert(resource.name.clone(), resource);
                }
            }
            Err(_) if bug == Bug::SkipBadFiles => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Ok(set)
}

/// Fixture candidates, recursively, hidden names skipped.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden {
            continue;
        }
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn content_hash(dir: &Path) -> u64 {
    let mut parts = Vec::new();
    for path in files(dir) {
        parts.push(path.to_string_lossy().into_owned().into_bytes());
        parts.push(std::fs::read(&path).unwrap_or_default());
    }
    let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    fnv1a(&slices)
}
