//! The HTTP admin surface. By default its routes are served on the xDS port itself (which
//! already answers HTTP/1.1 next to gRPC), so every server started with its own `--listen`
//! has its own admin and nothing else to configure. [`Placement::Listener`] moves them to a
//! separate listener instead.
//! - `GET /status`: the [`crate::admin::status`] document (`?node=ID` lists one node's streams only);
//! - `GET /snapshot`: the resources being served, as proto3 JSON (`?node=ID`, `?type=cds`),
//!   secret values hidden unless the server runs with `--show-secrets`;
//! - `GET /`, `/events`, `/streams/{id}[/events]`: the live [`crate::admin::page`];
//! - `GET/PUT/DELETE /scenario`: the scenario in force ([`crate::admin::scenario`]);
//! - `GET /healthz`: `{"status":"ok"}` while the server runs and follows fixture changes;
//!   HTTP 503 `{"status":"unhealthy","error":...}` while the fixture watcher is down;
//! - gRPC `envoy.service.status.v3.ClientStatusDiscoveryService` ([`crate::admin::csds`]): the
//!   same ledger, for tools that speak CSDS.
//!
//! `/status`, `/snapshot` and CSDS show every client's configuration: they answer only the requests
//! [`crate::admin::access`] allows (loopback, the admin token, a verified client certificate).
//!
//! Handlers read copies: the newest snapshot and reload result from their `watch` channels and
//! the registry's stream list, so a slow HTTP client never holds anything streams need.

use std::{net::SocketAddr, sync::Arc, time::SystemTime};

use axum::{
    Json, Router,
    body::Bytes,
    extract::{DefaultBodyLimit, Query, State},
    http::{StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
    routing::{any, get, post},
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::watch;
use xdsloop_proto::{Codec, redact::Secrets, type_url};

use crate::{
    admin::access::{self, AdminAccess},
    admin::csds::service::Csds,
    admin::page::{self, Page, Sources},
    admin::registry::{self, Registry},
    admin::scenario,
    admin::shared_status::{self, SharedStatus},
    admin::status::{self, Inputs},
    config::watch::ReloadStatus,
    faults::scenario::Scenarios,
    net::Listening,
    snapshot::Snapshot,
    snapshot::TypeResources,
};

/// The admin routes' paths (and the page's, [`page::ROUTES`]).
pub(crate) const ROUTES: [&str; 5] = ["/status", "/snapshot", "/healthz", "/scenario", "/resync"];

/// Where the admin routes are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// On the xDS port, next to gRPC and REST-JSON.
    #[default]
    XdsPort,
    /// Only on a listener of their own (port 0 picks a free port).
    Listener(SocketAddr),
    /// Nowhere.
    Off,
}

/// What the admin handlers read. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Admin {
    registry: Registry,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    /// `None` when snapshots come from code rather than a fixture watcher: every "reload" is
    /// then reported as the current snapshot, loaded fine.
    reloads: Option<watch::Receiver<ReloadStatus>>,
    codec: Codec,
    access: AdminAccess,
    secrets: Secrets,
    /// The xDS port's listener, for the `tls` and `limits` parts of `/status`.
    listening: Option<Listening>,
    page: Page,
    scenarios: Scenarios,
    /// One `/status` build shared by concurrent requests.
    shared: SharedStatus,
}

impl Admin {
    pub(crate) fn new(
        registry: Registry,
        snapshots: watch::Receiver<Arc<Snapshot>>,
        reloads: Option<watch::Receiver<ReloadStatus>>,
        codec: Codec,
    ) -> Self {
        let page = Page::new(Sources {
            registry: registry.clone(),
            snapshots: snapshots.clone(),
            reloads: reloads.clone(),
            scenarios: Scenarios::new(),
        });
        Self {
            registry,
            snapshots,
            reloads,
            codec,
            access: AdminAccess::default(),
            secrets: Secrets::Hide,
            listening: None,
            page,
            scenarios: Scenarios::new(),
            shared: SharedStatus::default(),
        }
    }

    /// Serves and changes `scenarios` (`/scenario`, the `scenario` section of `/status`)
    /// rather than a scenario of its own that no stream follows.
    pub(crate) fn with_scenarios(mut self, scenarios: Scenarios) -> Self {
        self.page = Page::new(Sources {
            registry: self.registry.clone(),
            snapshots: self.snapshots.clone(),
            reloads: self.reloads.clone(),
            scenarios: scenarios.clone(),
        });
        self.scenarios = scenarios;
        self
    }

    /// Who may read `/status` and `/snapshot` (default: loopback peers only).
    pub(crate) fn with_access(mut self, access: AdminAccess) -> Self {
        self.access = access;
        self
    }

    /// Whether `/snapshot` shows secret values (`--show-secrets`).
    pub(crate) fn with_secrets(mut self, secrets: Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    pub(crate) fn with_listening(mut self, listening: Listening) -> Self {
        self.listening = Some(listening);
        self
    }

    /// The `/status` document as of now.
    pub(crate) fn status(&self, node: Option<&str>) -> status::StatusDocument {
        let (open, closed) = (self.registry.streams(), self.registry.recently_closed());
        self.status_of(&open, &closed, node)
    }

    /// What a shared `/status` build depends on, as of now.
    fn stamp(&self) -> shared_status::Stamp {
        shared_status::Stamp {
            registry: self.registry.generation(),
            snapshot: self.snapshots.borrow().generation,
        }
    }

    /// The document of these streams.
    fn status_of(
        &self,
        open: &[registry::StreamStatus],
        closed: &[registry::ClosedStream],
        node: Option<&str>,
    ) -> status::StatusDocument {
        let snapshot = self.snapshots.borrow().clone();
        let reload = match &self.reloads {
            Some(reloads) => reloads.borrow().clone(),
            None => ReloadStatus::ok(&snapshot),
        };
        let inputs = Inputs {
            snapshot: &snapshot,
            reload: &reload,
            open,
            closed,
            now: SystemTime::now(),
        };
        let mut document = status::build(inputs, node);
        document.counters = self.registry.counters();
        document.violations = status::violations::totals(&self.registry.violations());
        document.recorder = self.registry.recorder().map(|r| r.view());
        document.scenario = Some(status::scenario::view(&self.scenarios));
        document.replay = self.registry.replay().map(|r| r.view());
        if let Some(listening) = &self.listening {
            document.tls = status::net::tls(listening);
            document.limits = Some(status::net::limits(listening));
        }
        document
    }

    /// CSDS on the same data. It shows what `/status` shows, so it is served where the admin
    /// routes are (on the xDS port, or beside them on an `--admin` listener), under the same
    /// access rule, with secret values hidden as `/snapshot` hides them.
    pub(crate) fn csds(&self) -> Csds {
        Csds::new(self.registry.clone(), self.snapshots.clone())
            .with_access(self.access.clone())
            .with_display(self.codec.clone(), self.secrets)
    }

    /// The admin routes; `/healthz` answers everyone, the others only whom the access rule
    /// allows.
    pub(crate) fn router(self) -> Router {
        let guard = middleware::from_fn_with_state(self.access.clone(), access::require);
        let data = Router::new()
            .route("/status", get(get_status))
            .route("/snapshot", get(get_snapshot))
            .route(
                "/scenario",
                get(scenario::get_scenario)
                    .put(scenario::put_scenario)
                    .delete(scenario::delete_scenario)
                    .fallback(scenario::other_method)
                    .layer(DefaultBodyLimit::max(scenario::BODY_LIMIT)),
            )
            .route("/resync", post(scenario::post_resync))
            .with_state(self.clone())
            .merge(self.page.clone().router())
            .route_layer(guard);
        let open = Router::new()
            .route("/healthz", get(healthz))
            .with_state(self);
        data.merge(open)
    }
}

impl axum::extract::FromRef<Admin> for Scenarios {
    fn from_ref(admin: &Admin) -> Scenarios {
        admin.scenarios.clone()
    }
}

/// For the xDS port when the admin routes are elsewhere: they answer 404 with `reason` (where
/// the admin is), rather than the xDS port's generic "no endpoint here".
pub(crate) fn elsewhere(reason: String) -> Router {
    let reason = Arc::<str>::from(reason);
    let paths = ROUTES.iter().chain(page::ROUTES.iter());
    paths.fold(Router::new(), |router, path| {
        let reason = reason.clone();
        router.route(
            path,
            any(move || async move { (StatusCode::NOT_FOUND, reason.to_string()) }),
        )
    })
}

/// Unhealthy while xDS is not served (an `outage`, or a port that cannot be bound again after
/// one) and while the fixture watcher is down: the server still serves, but edits are not
/// picked up. A probe should hear about either rather than read `ok`.
async fn healthz(State(admin): State<Admin>) -> Response {
    let unhealthy = |error: String| {
        let body = json!({"status": "unhealthy", "error": error});
        (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
    };
    if let Some(outage) = admin.scenarios.outages().current() {
        return unhealthy(match outage.rebind {
            Some(failure) => format!(
                "xDS is not served: the outage (rule {}) is over, but the xDS listener cannot \
                 be bound again: {}",
                outage.rule, failure.error
            ),
            None => format!(
                "xDS is not served: an outage on purpose (rule {}, {}) closed the xDS listener",
                outage.rule, outage.trigger
            ),
        });
    }
    let watcher = match &admin.reloads {
        Some(reloads) => reloads.borrow().watcher.clone(),
        None => return Json(json!({"status": "ok"})).into_response(),
    };
    if watcher.ok {
        return Json(json!({"status": "ok"})).into_response();
    }
    unhealthy(format!(
        "the fixture watcher is down ({}); restarting it",
        watcher.error.as_deref().unwrap_or("no reason given")
    ))
}

#[derive(Debug, Deserialize)]
struct StatusQuery {
    node: Option<String>,
}

async fn get_status(State(admin): State<Admin>, Query(q): Query<StatusQuery>) -> Response {
    // Thousands of streams make a build milliseconds of CPU: concurrent requests share one,
    // built off the runtime threads that move xDS messages (see `shared_status`).
    let shared = admin.shared.clone();
    let json = match q.node {
        Some(node) => {
            let build = move || serde_json::to_vec(&admin.status(Some(&node))).map(Bytes::from);
            match shared.alone(build).await {
                Ok(built) => built.map_err(|e| e.to_string()),
                Err(e) => Err(e),
            }
        }
        None => {
            let stamp = admin.stamp();
            let head = shared_status::headless(admin.status_of(&[], &[], None));
            let build = move || admin.status(None);
            shared
                .document(stamp, head, build)
                .await
                .map(|(json, _)| json)
        }
    };
    match json {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

#[derive(Debug, Deserialize)]
struct SnapshotQuery {
    node: Option<String>,
    #[serde(rename = "type")]
    type_filter: Option<String>,
}

/// The `/snapshot` document.
#[derive(Debug, Serialize)]
struct SnapshotDocument {
    generation: u64,
    /// The node the types are merged for; `null` = the base set, with overlays listed apart.
    node_id: Option<String>,
    types: Vec<Value>,
    /// Only without `?node`: per node, the types its overlay replaces (merged with the base).
    overlays: Vec<Value>,
}

async fn get_snapshot(State(admin): State<Admin>, Query(q): Query<SnapshotQuery>) -> Response {
    let type_url = match q.type_filter.as_deref().map(type_url::resolve) {
        Some(None) => {
            let unknown = q.type_filter.unwrap_or_default();
            let error = format!(
                "unknown type {unknown:?}: use an alias (cds, eds, lds, rds, ...) or a type URL"
            );
            return (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response();
        }
        Some(Some(url)) => Some(url),
        None => None,
    };
    let snapshot = admin.snapshots.borrow().clone();
    let (codec, secrets) = (admin.codec.clone(), admin.secrets);
    // Decoding every resource to JSON is CPU work; keep it off the runtime threads.
    let built = tokio::task::spawn_blocking(move || {
        let shown = Shown { codec, secrets };
        Json(snapshot_document(
            &snapshot,
            &shown,
            q.node,
            type_url.as_deref(),
        ))
        .into_response()
    });
    match built.await {
        Ok(doc) => doc,
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// How resources are turned into JSON.
struct Shown {
    codec: Codec,
    secrets: Secrets,
}

fn snapshot_document(
    snapshot: &Snapshot,
    codec: &Shown,
    node: Option<String>,
    only: Option<&str>,
) -> SnapshotDocument {
    let wanted = |url: &str| only.is_none_or(|o| o == url);
    let mut urls: Vec<&str> = match &node {
        Some(node) => snapshot.type_urls(node).into_iter().collect(),
        None => snapshot.base.keys().map(String::as_str).collect(),
    };
    urls.retain(|u| wanted(u));
    urls.sort_by_key(|u| (type_url::order(u), *u));
    let node_id = node.as_deref().unwrap_or_default();
    let types = urls
        .iter()
        .filter_map(|url| snapshot.get(node_id, url).map(|t| type_json(codec, url, t)))
        .collect();
    let overlays = match node {
        Some(_) => Vec::new(),
        None => snapshot
            .overlays
            .iter()
            .map(|(node, types)| {
                let types: Vec<Value> = types
                    .iter()
                    .filter(|(url, _)| wanted(url))
                    .map(|(url, t)| type_json(codec, url, t))
                    .collect();
                json!({ "node_id": node, "types": types })
            })
            .collect(),
    };
    SnapshotDocument {
        generation: snapshot.generation,
        node_id: node,
        types,
        overlays,
    }
}

fn type_json(shown: &Shown, url: &str, t: &TypeResources) -> Value {
    let resources: Vec<Value> = t
        .resources
        .values()
        .map(
            |r| match shown.codec.to_json_with(url, &r.bytes, shown.secrets) {
                Ok(resource) => json!({"name": r.name, "version": r.version, "resource": resource}),
                // Served bytes came from the same pool; a failure here is a bug worth showing.
                Err(e) => json!({"name": r.name, "version": r.version, "error": e.to_string()}),
            },
        )
        .collect();
    json!({
        "type_url": url,
        "type": type_url::short_name(url),
        "version": t.version,
        "resources": resources,
    })
}
