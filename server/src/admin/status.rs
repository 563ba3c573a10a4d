//! The `/status` document: the snapshot being served, the last reload, and for every open (and
//! recently closed) stream, per type, what was sent, ACKed and NACKed and the resulting
//! [`SyncState`]. Pure: built from copies of the snapshot, the reload result and the registry.
//!
//! Field names are part of the interface (documented in `docs/status.md`); `schema` changes
//! only if one is removed or changes meaning.

pub(crate) mod events;
pub(crate) mod net;
pub mod remote;
mod rfc3339;
pub(crate) mod scenario;
mod state;
mod summary;
pub mod table;
pub(crate) mod violations;

use std::{collections::BTreeMap, time::SystemTime};

use serde::{Deserialize, Serialize};
use xdsloop_proto::type_url;

use crate::{
    admin::registry::stats::{Counters, RecorderView},
    admin::registry::{ClosedStream, StreamStatus, Variant},
    config::watch::ReloadStatus,
    net::identity::PeerIdentity,
    protocol::{subscription::TypeStatus, wire::Touched},
    replay::ReplayView,
    snapshot::Snapshot,
    snapshot::TypeResources,
};
use events::RecentEvent;
pub use summary::{
    InProgressView, OverlaySummary, ReloadSummary, SnapshotSummary, TypeSummary, WatcherView,
};
pub(crate) use summary::{reload_summary, snapshot_summary};
use violations::ViolationsView;

pub(crate) use self::net::{LimitsView, TlsStatusView};
pub(crate) use self::state::{Answer, answer, served_version, sync_state_with, view_hash};
pub use self::state::{SyncState, sync_state};

/// The document's schema name; see `docs/status.md`.
pub(crate) const SCHEMA: &str = "xdsloop.status.v1";

/// The `/status` document: what the server serves and, per open and recently closed stream and
/// type, where the client stands (`docs/status.md` describes each field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusDocument {
    /// [`SCHEMA`]: `xdsloop.status.v1`.
    pub schema: String,
    /// When the server built the document.
    #[serde(with = "rfc3339")]
    pub generated_at: SystemTime,
    /// The snapshot being served: its generation and its resources by type.
    pub snapshot: SnapshotSummary,
    /// The latest fixture reload: its outcome and the one running now.
    pub reload: ReloadSummary,
    /// Streams and nodes by state.
    pub totals: Totals,
    /// Totals since the server started.
    #[serde(default)]
    pub counters: Counters,
    /// Conformance violations since the server started, by check (`C5.nack-version`); their
    /// total is `counters.violations`.
    #[serde(default)]
    pub violations: BTreeMap<String, u64>,
    /// The transcript recorder (`--record`), if one runs.
    #[serde(default)]
    pub recorder: Option<RecorderView>,
    /// The fault scenario in force (`docs/scenarios.md`).
    #[serde(default)]
    pub scenario: Option<scenario::ScenarioView>,
    /// The replay (`--replay`), if the server replays a recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayView>,
    /// Open streams, by stream id.
    pub streams: Vec<StreamView>,
    /// The last few streams that ended, most recent first, as they were when they ended.
    pub recently_closed: Vec<StreamView>,
    /// The xDS port's TLS: `null` when it is plaintext (or the document comes from a server
    /// embedded without its listener).
    #[serde(default)]
    pub tls: Option<TlsStatusView>,
    /// What one client may cost, and the connections open now.
    #[serde(default)]
    pub limits: Option<LimitsView>,
}

/// Counts over open streams; states count (stream, type) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Streams open now.
    pub open_streams: usize,
    /// (stream, type) pairs in `SYNCED`.
    pub synced: usize,
    /// (stream, type) pairs in `PENDING`.
    pub pending: usize,
    /// (stream, type) pairs in `NACKED`.
    pub nacked: usize,
    /// (stream, type) pairs in `STALE`.
    pub stale: usize,
}

/// One stream in `/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamView {
    /// The stream's id, as in transcripts and the log.
    pub id: u64,
    /// The client's address, as text.
    pub peer: Option<String>,
    /// The verified client certificate's names (mTLS); `null` without one.
    #[serde(default)]
    pub identity: Option<PeerIdentity>,
    /// `null` until the stream's first request names its node.
    pub node_id: Option<String>,
    /// `ads-sotw`, `ads-delta`, or `<service>-sotw` / `<service>-delta` for per-type services.
    pub transport: String,
    /// When it opened.
    #[serde(with = "rfc3339")]
    pub connected_since: SystemTime,
    /// Only for recently closed streams.
    #[serde(
        default,
        with = "rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub disconnected_at: Option<SystemTime>,
    /// In make-before-break order.
    pub types: Vec<TypeView>,
    /// The stream's last few events, oldest first, as transcript lines.
    #[serde(default)]
    pub recent: Vec<RecentEvent>,
    /// Scenario faults that fired on this stream (absent while none did).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub faults_fired: u64,
    /// What the conformance judge found on this stream.
    #[serde(default)]
    pub violations: ViolationsView,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One type on one stream in `/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeView {
    /// The full type URL.
    pub type_url: String,
    /// The short name (`cds`, `eds`, ...), `type` in the JSON.
    #[serde(rename = "type")]
    pub alias: String,
    /// Where the client stands for this type.
    pub state: SyncState,
    /// Subscribed to every resource of the type (`*`, or SotW's empty list).
    pub wildcard: bool,
    /// Explicitly subscribed names (without `*`), sorted.
    pub names: Vec<String>,
    /// The version the current snapshot serves this node for this type (SotW: the
    /// `version_info` this stream would be sent now).
    pub snapshot_version: String,
    /// The latest response sent for the type.
    pub last_sent: Option<SentView>,
    /// The latest response the client accepted.
    pub last_acked: Option<AckedView>,
    /// The latest response the client rejected, with its `error_detail`.
    pub last_nack: Option<NackView>,
    /// TTL'd resources the client holds and the heartbeats sent to keep them alive (S15);
    /// `null` when it holds none.
    #[serde(default)]
    pub heartbeats: Option<HeartbeatView>,
    /// The last response of this type a scenario rule touched.
    #[serde(default)]
    pub last_fault: Option<FaultView>,
    /// What a `withhold` rule left out of the latest response; absent when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<WithheldView>,
}

/// The heartbeats of one type's TTL'd resources (`TypeView::heartbeats`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatView {
    /// Resources with a TTL in the last push.
    pub ttl_resources: usize,
    /// Heartbeats sent.
    pub sent: u64,
    /// When the latest went out; `null` before the first.
    #[serde(with = "rfc3339::option")]
    pub last_at: Option<SystemTime>,
}

/// The latest response sent for a type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentView {
    /// Its `version_info` (Delta: `system_version_info`).
    pub version: String,
    /// Its nonce.
    pub nonce: String,
    /// Resources in the response (Delta: changed ones, not counting removals).
    pub resources: usize,
    /// When it was sent.
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    /// The scenario rule that changed, delayed or withheld it on its way out.
    #[serde(default)]
    pub fault: Option<FaultMarkView>,
    /// While a `delay` holds it back: not on the wire yet (`at` is then when it was decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<HeldView>,
}

/// A response a `delay` holds back, since when and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldView {
    /// When the `delay` took it.
    #[serde(with = "rfc3339")]
    pub since: SystemTime,
    /// When it goes out.
    #[serde(with = "rfc3339")]
    pub until: SystemTime,
    /// The stream ended while it was held: it never went out (the client never had it).
    #[serde(default)]
    pub never_sent: bool,
}

/// Resources a `withhold` rule left out of the latest response, and the rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithheldView {
    /// The rule's id.
    pub rule: String,
    /// The names left out.
    pub names: Vec<String>,
    /// Since when the client has been kept waiting for them (the first response of this
    /// stream that left them out).
    #[serde(with = "rfc3339")]
    pub waiting_since: SystemTime,
    /// How long that is, as of this document.
    pub waited_ms: u64,
}

/// Which scenario rule did what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultMarkView {
    /// The rule's id.
    pub rule: String,
    /// Its action, as the scenario file names it (`delay`, `withhold`, ...).
    pub action: String,
}

/// The latest fault that fired on a type without a response to carry its mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultView {
    /// The rule's id.
    pub rule: String,
    /// Its action, as the scenario file names it (`close`, `reset`, ...).
    pub action: String,
    /// When it fired.
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
}

/// The latest response a client accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckedView {
    /// Its version.
    pub version: String,
    /// Its nonce, as the client echoed it.
    pub nonce: String,
    /// When the ACK arrived.
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
}

/// The latest response a client rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NackView {
    /// The version the client rejected.
    pub version: String,
    /// Its nonce, as the client echoed it.
    pub nonce: String,
    /// The client's `error_detail.message`, verbatim (bounded to 4 KiB).
    pub message: String,
    /// When the NACK arrived.
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
}

/// Copies of everything the document is built from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inputs<'a> {
    pub snapshot: &'a Snapshot,
    pub reload: &'a ReloadStatus,
    pub open: &'a [StreamStatus],
    pub closed: &'a [ClosedStream],
    pub now: SystemTime,
}

/// Builds the document; with `node`, only streams of that node id are listed.
pub(crate) fn build(inputs: Inputs<'_>, node: Option<&str>) -> StatusDocument {
    let wanted = |s: &StreamStatus| node.is_none_or(|n| s.node_id.as_deref() == Some(n));
    let snapshot = inputs.snapshot;
    let streams: Vec<StreamView> = inputs
        .open
        .iter()
        .filter(|s| wanted(s))
        .map(|s| stream_view(snapshot, s, None))
        .collect();
    let recently_closed = inputs
        .closed
        .iter()
        .filter(|c| wanted(&c.stream))
        .map(|c| stream_view(snapshot, &c.stream, Some(c.disconnected_at)))
        .collect();
    StatusDocument {
        schema: SCHEMA.to_string(),
        generated_at: inputs.now,
        snapshot: snapshot_summary(snapshot),
        reload: reload_summary(inputs.reload),
        totals: totals(&streams),
        counters: Counters::default(),
        violations: BTreeMap::new(),
        recorder: None,
        scenario: None,
        replay: None,
        streams,
        recently_closed,
        tls: None,
        limits: None,
    }
}

fn totals(streams: &[StreamView]) -> Totals {
    let mut totals = Totals {
        open_streams: streams.len(),
        ..Totals::default()
    };
    for t in streams.iter().flat_map(|s| &s.types) {
        *match t.state {
            SyncState::Synced => &mut totals.synced,
            SyncState::Pending => &mut totals.pending,
            SyncState::Nacked => &mut totals.nacked,
            SyncState::Stale => &mut totals.stale,
        } += 1;
    }
    totals
}

/// One stream as the document lists it.
pub(crate) fn stream_view(
    snapshot: &Snapshot,
    stream: &StreamStatus,
    disconnected_at: Option<SystemTime>,
) -> StreamView {
    // A stream without a node is served the base fixtures, as node "".
    let node = stream.node_id.as_deref().unwrap_or_default();
    let mut types: Vec<TypeView> = stream
        .types
        .values()
        .map(|t| {
            let current = snapshot.get(node, &t.type_url).map(AsRef::as_ref);
            type_view(t, current, stream.kind.variant)
        })
        .collect();
    types.sort_by_key(|t| (type_url::order(&t.type_url), t.type_url.clone()));
    StreamView {
        id: stream.id,
        peer: stream.peer.map(|p| p.to_string()),
        identity: stream.identity.as_deref().cloned(),
        node_id: stream.node_id.clone(),
        transport: stream.kind.to_string(),
        connected_since: stream.connected_since,
        disconnected_at,
        types,
        recent: events::recent(&stream.recent),
        faults_fired: stream.faults_fired,
        violations: violations::view(&stream.violations),
    }
}

fn type_view(status: &TypeStatus, current: Option<&TypeResources>, variant: Variant) -> TypeView {
    let mut names = status.names.to_vec();
    names.sort();
    TypeView {
        type_url: status.type_url.clone(),
        alias: type_url::short_name(&status.type_url).to_string(),
        state: sync_state(status, current, variant),
        wildcard: status.wildcard,
        names,
        snapshot_version: served_version(current),
        last_sent: status.last_sent.as_ref().map(|s| SentView {
            version: s.version.clone(),
            nonce: s.nonce.clone(),
            resources: s.resources,
            at: s.at,
            fault: s.fault.as_ref().map(|m| FaultMarkView {
                rule: m.rule.to_string(),
                action: m.action.to_string(),
            }),
            held: s.held.map(|h| HeldView {
                since: h.since,
                until: h.until,
                never_sent: h.never_sent,
            }),
        }),
        last_acked: status.last_acked.as_ref().map(|a| AckedView {
            version: a.version.clone(),
            nonce: a.nonce.clone(),
            at: a.at,
        }),
        last_nack: status.last_nack.as_ref().map(|n| NackView {
            version: n.version.clone(),
            nonce: n.nonce.clone(),
            message: n.message.clone(),
            at: n.at,
        }),
        heartbeats: status.heartbeats.as_ref().map(|h| HeartbeatView {
            ttl_resources: h.ttl_resources,
            sent: h.sent,
            last_at: h.last_at,
        }),
        last_fault: status.last_fault.as_ref().map(fault_view),
        withheld: status
            .last_sent
            .as_ref()
            .and_then(|s| s.withheld.as_ref())
            .map(|w| WithheldView {
                rule: w.rule.to_string(),
                names: w.names.clone(),
                waiting_since: w.since,
                waited_ms: SystemTime::now()
                    .duration_since(w.since)
                    .unwrap_or_default()
                    .as_millis() as u64,
            }),
    }
}

fn fault_view(touched: &Touched) -> FaultView {
    FaultView {
        rule: touched.mark.rule.to_string(),
        action: touched.mark.action.to_string(),
        at: touched.at,
    }
}

#[cfg(test)]
mod tests;
