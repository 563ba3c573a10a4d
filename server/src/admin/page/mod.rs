//! The live page: the fleet as a grid of nodes × types, and one stream's conversation.
//! - `GET /`: one HTML file with its CSS and JavaScript inline ([`PAGE`], compiled into the
//!   binary: nothing is fetched from anywhere else), in English or in the Chinese of the course
//!   lesson xdsloop grew from (a switch on the page, remembered, or `?lang=zh`), with the
//!   transcript crate's term table inlined ([`page_html`]);
//! - `GET /events?node=GLOB&types=cds,eds`: the grid as server-sent events ([`grid`]), fed by
//!   a model task that runs only while a page is open ([`hub`]);
//! - `GET /streams/{id}` and `GET /streams/{id}/events`: one stream's types and timeline
//!   ([`streams`]).
//!
//! Everything here reads copies (the registry's stream list, the newest snapshot and reload)
//! or listens on the bus; the xDS streams never wait for a page.

pub(crate) mod grid;
pub(crate) mod hub;
pub(crate) mod model;
pub(crate) mod streams;

use std::sync::{Arc, LazyLock};

use axum::{
    Json, Router,
    extract::{Path, Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response, Sse, sse::KeepAlive},
    routing::get,
};
use serde_json::json;
use tokio::sync::watch;

use crate::{
    admin::{
        registry::Registry,
        status::{ReloadSummary, reload_summary},
    },
    config::watch::ReloadStatus,
    faults::scenario::Scenarios,
    snapshot::Snapshot,
};

/// The page: HTML, CSS and JavaScript in one file, with a `/*TERMS*/` placeholder.
pub(crate) const PAGE: &str = include_str!("page.html");

/// The page as served: [`PAGE`] with the loop's words in both languages
/// ([`xdsloop_transcript::terms::page_table`]) in place of its placeholder, so the page names
/// steps and states exactly as `xdsloop-client --explain --lang` does.
pub(crate) fn page_html() -> &'static str {
    static HTML: LazyLock<String> = LazyLock::new(|| {
        let table = xdsloop_transcript::terms::page_table().to_string();
        // Inside <script>: no `</` may end the element early.
        PAGE.replace("/*TERMS*/", &table.replace("</", "<\\/"))
    });
    &HTML
}

/// The page's paths.
pub(crate) const ROUTES: [&str; 4] = ["/", "/events", "/streams/{id}", "/streams/{id}/events"];

/// What the page reads. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Sources {
    pub registry: Registry,
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// `None` when snapshots come from code: every reload is then the current snapshot.
    pub reloads: Option<watch::Receiver<ReloadStatus>>,
    /// The fault scenario in force, shown above the grid with its rules' fired counts.
    pub scenarios: Scenarios,
}

impl Sources {
    fn reload_summary(&self, snapshot: &Snapshot) -> ReloadSummary {
        let reload = match &self.reloads {
            Some(reloads) => reloads.borrow().clone(),
            None => ReloadStatus::ok(snapshot),
        };
        reload_summary(&reload)
    }
}

/// The page's routes and the grid's model task. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    sources: Sources,
    hub: hub::Hub,
}

impl Page {
    pub(crate) fn new(sources: Sources) -> Self {
        Self {
            sources,
            hub: hub::Hub::default(),
        }
    }

    #[cfg(test)]
    /// Whether the grid's model task runs (a page is open).
    pub(crate) fn is_live(&self) -> bool {
        self.hub.is_running()
    }

    pub(crate) fn router(self) -> Router {
        Router::new()
            .route("/", get(index))
            .route("/events", get(grid_events))
            .route("/streams/{id}", get(stream))
            .route("/streams/{id}/events", get(stream_events))
            .with_state(self)
    }
}

async fn index() -> Response {
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        // Inline script and style only: the page loads nothing from anywhere.
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             img-src 'self' data:",
        ),
    ];
    (headers, page_html()).into_response()
}

async fn grid_events(State(page): State<Page>, Query(filter): Query<grid::Filter>) -> Response {
    let models = page.hub.subscribe(&page.sources);
    Sse::new(grid::events(models, filter))
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn stream(State(page): State<Page>, Path(id): Path<u64>) -> Response {
    match streams::view(&page.sources, id) {
        Some(view) => Json(view).into_response(),
        None => not_found(id),
    }
}

async fn stream_events(State(page): State<Page>, Path(id): Path<u64>) -> Response {
    Sse::new(streams::events(page.sources, id))
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn not_found(id: u64) -> Response {
    let error = format!(
        "no stream {id}: not open and not among the recently closed (see /status for the ids)"
    );
    (StatusCode::NOT_FOUND, Json(json!({ "error": error }))).into_response()
}

#[cfg(test)]
mod tests;
