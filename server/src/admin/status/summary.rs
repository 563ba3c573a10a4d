//! What `/status` says about the snapshot being served and the last reload.

use std::{collections::BTreeMap, sync::Arc, time::SystemTime};

use serde::{Deserialize, Serialize};
use xdsloop_proto::type_url;

use super::rfc3339;
use crate::{
    config::watch::{ReloadStatus, WatcherHealth},
    snapshot::Snapshot,
    snapshot::TypeResources,
};

/// The snapshot being served (`/status` `snapshot`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotSummary {
    /// Its fixture generation (1 for the first load).
    pub generation: u64,
    /// Resources in the base set plus every overlay.
    pub resources: usize,
    /// What every node is served, in make-before-break order.
    pub types: Vec<TypeSummary>,
    /// Per-node overlays: only the types an overlay changes, already merged with the base.
    pub overlays: Vec<OverlaySummary>,
}

/// One type of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeSummary {
    /// The full type URL.
    pub type_url: String,
    /// Short alias (`cds`, `eds`, ...) or the message name.
    #[serde(rename = "type")]
    pub alias: String,
    /// Its SotW `version_info`.
    pub version: String,
    /// How many resources.
    pub resources: usize,
}

/// One node's overlay (`nodes/<node-id>/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlaySummary {
    /// The node it is served to.
    pub node_id: String,
    /// The types it changes, merged with the base.
    pub types: Vec<TypeSummary>,
}

/// The latest fixture reload (`/status` `reload`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReloadSummary {
    /// Whether it was accepted.
    pub ok: bool,
    /// The generation being served (after a rejection: the last good one).
    pub generation: u64,
    /// The rejected file, when the rejection is about one file.
    pub file: Option<String>,
    /// Why it was rejected: `"<file>: <line or resource and field>: <problem>"`.
    pub error: Option<String>,
    /// When the latest reload finished.
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    /// How long the latest reload took.
    #[serde(default)]
    pub duration_ms: u64,
    /// Reloads finished since start-up, the first load included: it moves on every reload,
    /// also on one that changed nothing.
    #[serde(default)]
    pub count: u64,
    /// The reload running now; `null` when none is.
    #[serde(default)]
    pub in_progress: Option<InProgressView>,
    /// Whether fixture changes are being followed at all.
    #[serde(default)]
    pub watcher: WatcherView,
}

/// A reload that has started and not finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InProgressView {
    /// When it started.
    #[serde(with = "rfc3339")]
    pub since: SystemTime,
    /// The files being decoded (changed since the last good load); empty while the directory
    /// is still being read.
    pub files: Vec<String>,
}

/// [`WatcherHealth`] as the document shows it (times in RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatcherView {
    /// False while the watcher is down and being restarted: edits are not picked up.
    pub ok: bool,
    /// Why it went down.
    pub error: Option<String>,
    /// When it went down.
    #[serde(with = "rfc3339::option")]
    pub since: Option<SystemTime>,
    /// How many times a failed watcher was replaced by a working one.
    pub restarts: u64,
}

impl Default for WatcherView {
    /// What a server that does not report its watcher means: it is fine.
    fn default() -> Self {
        Self::from(&WatcherHealth::default())
    }
}

impl From<&WatcherHealth> for WatcherView {
    fn from(health: &WatcherHealth) -> Self {
        Self {
            ok: health.ok,
            error: health.error.clone(),
            since: health.since,
            restarts: health.restarts,
        }
    }
}

pub(crate) fn snapshot_summary(snapshot: &Snapshot) -> SnapshotSummary {
    let summarize = |types: &BTreeMap<String, Arc<TypeResources>>| {
        let mut list: Vec<TypeSummary> = types
            .iter()
            .map(|(url, t)| TypeSummary {
                type_url: url.clone(),
                alias: type_url::short_name(url).to_string(),
                version: t.version.clone(),
                resources: t.resources.len(),
            })
            .collect();
        list.sort_by_key(|t| (type_url::order(&t.type_url), t.type_url.clone()));
        list
    };
    SnapshotSummary {
        generation: snapshot.generation,
        resources: snapshot.resource_count(),
        types: summarize(&snapshot.base),
        overlays: snapshot
            .overlays
            .iter()
            .map(|(node, types)| OverlaySummary {
                node_id: node.clone(),
                types: summarize(types),
            })
            .collect(),
    }
}

pub(crate) fn reload_summary(reload: &ReloadStatus) -> ReloadSummary {
    ReloadSummary {
        ok: reload.ok,
        generation: reload.generation,
        file: reload.file.as_ref().map(|f| f.display().to_string()),
        error: reload.error.clone(),
        at: reload.at,
        duration_ms: u64::try_from(reload.took.as_millis()).unwrap_or(u64::MAX),
        count: reload.count,
        in_progress: reload.in_progress.as_ref().map(|p| InProgressView {
            since: p.since,
            files: p.files.iter().map(|f| f.display().to_string()).collect(),
        }),
        watcher: WatcherView::from(&reload.watcher),
    }
}
