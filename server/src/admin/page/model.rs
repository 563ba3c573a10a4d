//! What the page's grid shows, aggregated per node and type: one row per node, one cell per
//! type with the worst state over the node's streams (NACKED > STALE > PENDING > SYNCED), the
//! version served and the one held, plus totals, counters and the last reload. Pure: built
//! from copies of the registry's streams, the snapshot and the reload result, so the grid and
//! `/status` decide states with the same functions.

use std::{
    borrow::Borrow,
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use serde::Serialize;
use xdsloop_proto::type_url;

use crate::{
    admin::registry::{StreamStatus, stats::Counters},
    admin::status::{
        ReloadSummary, SyncState, scenario::ScenarioView, served_version, sync_state_with,
        view_hash,
    },
    replay::ReplayView,
    snapshot::Snapshot,
    snapshot::TypeResources,
};

/// One build of the grid. Rows are shared with the connections that sent them, so a
/// connection compares what it sent with what is new without copying either.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct PageModel {
    /// Moves on every rebuild.
    pub generation: u64,
    /// By node id (`""`: streams that did not name a node yet).
    #[serde(skip)]
    pub rows: BTreeMap<String, Arc<Row>>,
    /// Type aliases of the grid's columns, in make-before-break order.
    pub types: Vec<String>,
    pub totals: PageTotals,
    pub counters: Counters,
    /// `null` until the first load is known.
    pub reload: Option<ReloadSummary>,
    /// What the base fixtures serve per type (`alias`, version).
    pub serving: Vec<(String, String)>,
    /// The fault scenario in force, its rules and how often each fired; `null` when none is
    /// in force and none was refused.
    pub scenario: Option<ScenarioView>,
    /// The replay (`--replay`) and how far it got; `null` when the fixtures are served.
    pub replay: Option<ReplayView>,
}

/// Counts over open streams; states count (stream, type) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct PageTotals {
    pub nodes: usize,
    pub streams: usize,
    pub synced: usize,
    pub pending: usize,
    pub nacked: usize,
    pub stale: usize,
}

/// One node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Row {
    pub node: String,
    /// The node's open streams, by id.
    pub streams: Vec<StreamRef>,
    /// One per type any of its streams subscribed to, in column order.
    pub cells: Vec<Cell>,
    /// Conformance violations the judge found on its open streams.
    pub violations: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct StreamRef {
    pub id: u64,
    pub transport: String,
}

/// One node and type, over the node's streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Cell {
    #[serde(rename = "type")]
    pub alias: String,
    pub state: SyncState,
    /// The version the snapshot serves this node.
    pub served: String,
    /// The version the worst stream last ACKed (`null`: none yet).
    pub held: Option<String>,
    /// Streams of the node with this type.
    pub streams: usize,
    /// The worst stream, the one a click opens.
    pub stream: u64,
    /// The worst stream's rejection, verbatim, while it is NACKED.
    pub nack: Option<String>,
}

/// Worst first: the state that needs a reader's eye.
fn rank(state: SyncState) -> u8 {
    match state {
        SyncState::Nacked => 3,
        SyncState::Stale => 2,
        SyncState::Pending => 1,
        SyncState::Synced => 0,
    }
}

/// Builds generation `generation` of the grid from `streams` (copies, or the registry's shared
/// states).
pub(crate) fn build<S: Borrow<StreamStatus>>(
    generation: u64,
    streams: &[S],
    snapshot: &Snapshot,
    reload: Option<ReloadSummary>,
    counters: Counters,
) -> PageModel {
    let mut model = PageModel {
        generation,
        counters,
        reload,
        ..PageModel::default()
    };
    let mut urls: Vec<&str> = Vec::new();
    let mut hashes = ViewHashes::default();
    for stream in streams {
        add_stream(
            &mut model,
            stream.borrow(),
            snapshot,
            &mut urls,
            &mut hashes,
        );
    }
    urls.sort_by_key(|u| (type_url::order(u), *u));
    urls.dedup();
    model.types = urls.iter().map(|u| alias(u)).collect();
    for row in model.rows.values_mut() {
        let row = Arc::make_mut(row);
        row.cells.sort_by_key(|c| column(&model.types, &c.alias));
    }
    model.totals.nodes = model.rows.len();
    model.totals.streams = streams.len();
    let mut base: Vec<(&String, String)> = snapshot
        .base
        .iter()
        .map(|(url, t)| (url, t.version.clone()))
        .collect();
    base.sort_by_key(|(u, _)| (type_url::order(u), (*u).clone()));
    model.serving = base.into_iter().map(|(u, v)| (alias(u), v)).collect();
    model
}

fn alias(url: &str) -> String {
    type_url::short_name(url).to_string()
}

fn column(types: &[String], alias: &str) -> usize {
    types.iter().position(|t| t == alias).unwrap_or(usize::MAX)
}

/// What each subscription would be served, hashed once per build: a fleet's streams share
/// their (interned) name lists and their snapshot types, and an EDS list can have thousands of
/// names. Keyed by those allocations' addresses, which live as long as the build.
#[derive(Default)]
struct ViewHashes(HashMap<(usize, usize, bool), u64>);

fn add_stream<'a>(
    model: &mut PageModel,
    stream: &'a StreamStatus,
    snapshot: &Snapshot,
    urls: &mut Vec<&'a str>,
    hashes: &mut ViewHashes,
) {
    let node = stream.node_id.clone().unwrap_or_default();
    let row = model.rows.entry(node.clone()).or_insert_with(|| {
        Arc::new(Row {
            node: node.clone(),
            streams: Vec::new(),
            cells: Vec::new(),
            violations: 0,
        })
    });
    let row = Arc::make_mut(row);
    row.violations += stream.violations.count;
    row.streams.push(StreamRef {
        id: stream.id,
        transport: stream.kind.to_string(),
    });
    for status in stream.types.values() {
        urls.push(&status.type_url);
        let current = snapshot.get(&node, &status.type_url).map(AsRef::as_ref);
        let key = (
            current.map_or(0, |c| c as *const TypeResources as usize),
            status.names.as_ptr() as usize,
            status.wildcard,
        );
        let hash = || {
            *hashes
                .0
                .entry(key)
                .or_insert_with(|| view_hash(status, current, stream.kind.variant))
        };
        let state = sync_state_with(status, current, stream.kind.variant, hash);
        let totals = &mut model.totals;
        *match state {
            SyncState::Synced => &mut totals.synced,
            SyncState::Pending => &mut totals.pending,
            SyncState::Nacked => &mut totals.nacked,
            SyncState::Stale => &mut totals.stale,
        } += 1;
        let cell = Cell {
            alias: alias(&status.type_url),
            state,
            served: served_version(current),
            held: status.last_acked.as_ref().map(|a| a.version.clone()),
            streams: 1,
            stream: stream.id,
            nack: (state == SyncState::Nacked)
                .then(|| status.last_nack.as_ref().map(|n| n.message.clone()))
                .flatten(),
        };
        merge_cell(&mut row.cells, cell);
    }
}

/// Adds one stream's cell to the row: the worst stream speaks for the node.
fn merge_cell(cells: &mut Vec<Cell>, cell: Cell) {
    let Some(existing) = cells.iter_mut().find(|c| c.alias == cell.alias) else {
        cells.push(cell);
        return;
    };
    let streams = existing.streams + 1;
    if rank(cell.state) > rank(existing.state) {
        *existing = cell;
    }
    existing.streams = streams;
}

#[cfg(test)]
mod tests;
