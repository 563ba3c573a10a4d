//! `GET /events`: the grid as server-sent events. The first event (`grid`) is the whole grid
//! as this connection's filter sees it; each later one (`diff`) carries only the rows that
//! changed since what *this connection* last sent, the removed ones, and the totals. A
//! connection builds its next event only when hyper asks for more, so a slow browser gets
//! fewer, bigger diffs and nothing queues for it.

use std::{collections::HashMap, convert::Infallible, sync::Arc};

use axum::response::sse::Event;
use futures::{Stream, StreamExt, stream};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::model::{PageModel, PageTotals, Row};
use crate::admin::{
    registry::stats::Counters,
    status::{ReloadSummary, scenario::ScenarioView},
};
use crate::replay::ReplayView;

/// The most rows an event carries: beyond that the page asks for a filter.
pub(crate) const MAX_ROWS: usize = 500;

/// `?node=GLOB&types=cds,eds`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Filter {
    /// Node ids matching this glob (`*` any run, `?` one character); all when absent.
    pub node: Option<String>,
    /// Comma-separated type aliases; all when absent.
    pub types: Option<String>,
}

impl Filter {
    fn wants_node(&self, node: &str) -> bool {
        match self.node.as_deref() {
            None | Some("") => true,
            Some(glob) => glob_match(glob.as_bytes(), node.as_bytes()),
        }
    }

    fn wants_type(&self, alias: &str) -> bool {
        match self.types.as_deref() {
            None | Some("") => true,
            Some(list) => list.split(',').any(|t| t.trim() == alias),
        }
    }

    /// The row as this filter shows it: `None` when no cell of it is wanted.
    fn row(&self, row: &Arc<Row>) -> Option<Arc<Row>> {
        if !self.wants_node(&row.node) {
            return None;
        }
        if self.types.as_deref().is_none_or(str::is_empty) {
            return Some(row.clone());
        }
        let mut kept = Row::clone(row);
        kept.cells.retain(|c| self.wants_type(&c.alias));
        Some(Arc::new(kept))
    }
}

/// `*` matches any run of characters, `?` one; everything else itself.
pub(crate) fn glob_match(glob: &[u8], text: &[u8]) -> bool {
    match (glob.split_first(), text.split_first()) {
        (None, None) => true,
        (Some((b'*', rest)), _) => {
            glob_match(rest, text) || (!text.is_empty() && glob_match(glob, &text[1..]))
        }
        (Some((b'?', g)), Some((_, t))) => glob_match(g, t),
        (Some((g, gs)), Some((t, ts))) => g == t && glob_match(gs, ts),
        _ => false,
    }
}

/// One event's body.
#[derive(Debug, Serialize)]
pub(crate) struct GridEvent<'a> {
    pub generation: u64,
    /// Every row (`grid`) or the rows that changed (`diff`).
    #[serde(serialize_with = "shared_rows")]
    pub rows: Vec<Arc<Row>>,
    /// Node ids no longer shown.
    pub removed: Vec<String>,
    /// Rows the filter matched beyond [`MAX_ROWS`].
    pub truncated: usize,
    pub types: &'a [String],
    pub totals: &'a PageTotals,
    pub counters: &'a Counters,
    pub reload: Option<&'a ReloadSummary>,
    pub serving: &'a [(String, String)],
    pub scenario: Option<&'a ScenarioView>,
    /// While a recording is replayed (`--replay`): which, and how far it got.
    pub replay: Option<&'a ReplayView>,
}

fn shared_rows<S: serde::Serializer>(rows: &[Arc<Row>], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(rows.iter().map(|r| &**r))
}

/// What one connection last sent, to diff against.
#[derive(Debug, Default)]
pub(crate) struct Connection {
    filter: Filter,
    sent: HashMap<String, Arc<Row>>,
    started: bool,
}

impl Connection {
    pub(crate) fn new(filter: Filter) -> Self {
        Self {
            filter,
            ..Self::default()
        }
    }

    /// The next event's name and body for `model`, and remembers it as sent.
    pub(crate) fn next<'m>(&mut self, model: &'m PageModel) -> (&'static str, GridEvent<'m>) {
        let shown: Vec<Arc<Row>> = model
            .rows
            .values()
            .filter_map(|row| self.filter.row(row))
            .collect();
        let truncated = shown.len().saturating_sub(MAX_ROWS);
        let mut rows = Vec::new();
        let mut now = HashMap::with_capacity(shown.len().min(MAX_ROWS));
        for row in shown.into_iter().take(MAX_ROWS) {
            let same = self.sent.get(&row.node).is_some_and(|r| **r == *row);
            if !same || !self.started {
                rows.push(row.clone());
            }
            now.insert(row.node.clone(), row);
        }
        let mut removed: Vec<String> = self
            .sent
            .keys()
            .filter(|node| !now.contains_key(*node))
            .cloned()
            .collect();
        removed.sort();
        let name = if self.started { "diff" } else { "grid" };
        self.started = true;
        self.sent = now;
        let event = GridEvent {
            generation: model.generation,
            rows,
            removed,
            truncated,
            types: &model.types,
            totals: &model.totals,
            counters: &model.counters,
            reload: model.reload.as_ref(),
            serving: &model.serving,
            scenario: model.scenario.as_ref(),
            replay: model.replay.as_ref(),
        };
        (name, event)
    }
}

/// The SSE stream of one page: the grid now, then a diff whenever the model moved and the
/// browser has read the previous event.
pub(crate) fn events(
    models: watch::Receiver<Arc<PageModel>>,
    filter: Filter,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let state = (models, Connection::new(filter), true);
    stream::unfold(state, |(mut models, mut connection, first)| async move {
        if !first && models.changed().await.is_err() {
            return None;
        }
        let model = models.borrow_and_update().clone();
        let (name, body) = connection.next(&model);
        let event = Event::default().event(name).json_data(&body);
        let event = event.unwrap_or_else(|e| Event::default().event("error").data(e.to_string()));
        Some((event, (models, connection, false)))
    })
    .map(Ok)
}
