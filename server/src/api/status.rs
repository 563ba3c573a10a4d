//! What the server knows about its streams: the live [`Registry`] of open and recently
//! closed streams with their per-type state, the `/status` document built from it
//! (`docs/status.md`), and [`remote`], which reads that document from a running server.
pub use crate::admin::registry::stats::{Counters, RecorderView};
pub use crate::admin::registry::timeline::Timeline;
pub use crate::admin::registry::violations::Violations;
pub use crate::admin::registry::{ClosedStream, Registry, StreamKind, StreamStatus, Variant};
pub use crate::admin::status::events::RecentEvent;
pub use crate::admin::status::net::{CertView, HandshakeFailureView, LimitsView, TlsStatusView};
pub use crate::admin::status::scenario::{FiringView, OutageView, RuleView, ScenarioView};
pub use crate::admin::status::violations::{ViolationView, ViolationsView};
pub use crate::admin::status::{
    AckedView, FaultMarkView, FaultView, HeartbeatView, HeldView, InProgressView, NackView,
    OverlaySummary, ReloadSummary, SentView, SnapshotSummary, StatusDocument, StreamView,
    SyncState, Totals, TypeSummary, TypeView, WatcherView, WithheldView, remote, sync_state, table,
};
pub use crate::net::identity::PeerIdentity;
pub use crate::protocol::subscription::{
    Acked, Exchange, HeldBack, Nacked, Sent, TypeStatus, Withheld,
};
pub use crate::protocol::ttl::HeartbeatStatus;
pub use crate::protocol::wire::Touched;
pub use crate::replay::{Failure as ReplayFailure, Replay, ReplayView};
pub use crate::snapshot::names::SharedNames;
