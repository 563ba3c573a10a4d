//! What the client tells the outside: [`Event`]s to one subscription (Envoy's subscription
//! callbacks) and [`Report`]s to anyone observing the whole client (the CLI, tests).

use std::time::{Duration, SystemTime};

use xdsloop_proto::discovery::Any;
pub use xdsloop_transcript::Step;

use crate::config::SourceKind;
use crate::config::Variant;
use crate::core::request::Outgoing;
use crate::core::store::{Applied, Diff};
use crate::core::stream::{StreamEnd, StreamInfo};

/// Delivered to one subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// SotW: every held resource this subscription wants, and the type's version.
    Sotw {
        /// The type URL.
        type_url: String,
        /// The type's version (`version_info`).
        version: String,
        /// Every held resource this subscription wants.
        resources: Vec<Applied>,
    },
    /// Delta: what changed for this subscription, with the system version.
    Delta {
        /// The type URL.
        type_url: String,
        /// The response's `system_version_info`.
        system_version: String,
        /// Resources added or changed.
        added: Vec<Applied>,
        /// Names removed.
        removed: Vec<String>,
    },
    /// An update could not be applied; the last good config stays.
    Failed {
        /// The type URL.
        type_url: String,
        /// Why (Envoy's `ConfigUpdateFailureReason`).
        reason: Failure,
    },
    /// Requested resources that don't exist: not received within the timeout, or (Delta)
    /// named in `removed_resources` without ever being held.
    Missing {
        /// The type URL.
        type_url: String,
        /// The names that do not exist.
        names: Vec<String>,
    },
}

/// Why an update failed (Envoy's `ConfigUpdateFailureReason`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The response was NACKed with this reason.
    Rejected(String),
    /// The stream broke; the client reconnects on its own.
    ConnectionFailure(String),
}

/// ACK or NACK. Where the source has no ACK channel (`file`) the verdict stays local and is
/// shown as ACCEPTED / REJECTED; over REST a NACK is local too (the next poll carries the last
/// accepted version, as Envoy's REST client does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted and applied.
    Ack,
    /// Rejected with this message (the NACK's `error_detail`); nothing applied.
    Nack(String),
}

/// One response handled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateReport {
    /// When it was handled.
    pub at: SystemTime,
    /// SotW or Delta.
    pub mode: Variant,
    /// The config source the response came from.
    pub source: SourceKind,
    /// The type URL.
    pub type_url: String,
    /// The response's version (`version_info`, or Delta's `system_version_info`).
    pub version: String,
    /// The response's nonce, echoed in the ACK or NACK.
    pub nonce: String,
    /// ACK or NACK.
    pub verdict: Verdict,
    /// What changed in the store (empty on a NACK: nothing was applied).
    pub diff: Diff,
}

/// Connection lifecycle, for display.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectionReport {
    /// Connecting, the `attempt`th time since the last success.
    Connecting {
        /// The server's address.
        server: String,
        /// Attempts since the last success, from 1.
        attempt: u32,
    },
    /// The connection is up.
    Connected {
        /// The server's address.
        server: String,
    },
    /// The connection could not be made.
    ConnectFailed {
        /// The server's address.
        server: String,
        /// Why, with its causes.
        reason: String,
    },
    /// The stream ended.
    StreamClosed {
        /// Why.
        reason: String,
    },
    /// Waiting before the next attempt.
    BackingOff {
        /// How long.
        delay: Duration,
        /// The attempt that comes after.
        attempt: u32,
    },
    /// File source: watching this file (there is no server and no ACK channel).
    Watching {
        /// The watched file.
        path: String,
    },
}

/// Observed by anyone watching the whole client.
#[derive(Clone, Debug, PartialEq)]
pub enum Report {
    /// A response handled: applied and ACKed, or NACKed.
    Update(UpdateReport),
    /// Requested names that do not exist (C14): not-found timer, or a Delta removal.
    NotFound {
        /// When.
        at: SystemTime,
        /// The type URL.
        type_url: String,
        /// The names.
        names: Vec<String>,
    },
    /// Held resources whose TTL lapsed without a heartbeat (C17): removed from the store.
    Expired {
        /// When.
        at: SystemTime,
        /// The type URL.
        type_url: String,
        /// The names removed.
        names: Vec<String>,
    },
    /// A response that only refreshed TTLs (C17): ACKed, nothing applied, not an update.
    Heartbeat {
        /// When.
        at: SystemTime,
        /// The type URL.
        type_url: String,
        /// The resources whose TTL it refreshed.
        names: Vec<String>,
    },
    /// A request went on the wire.
    Sent(Box<SentReport>),
    /// A response arrived, before it is checked or applied. Only when the client was asked for
    /// these ([`crate::config::ReceivedReports`]): building one decodes every resource's name.
    Received(Box<ReceivedReport>),
    /// A stream opened: every type it carries is (re)subscribed on it next.
    StreamOpened(StreamInfo),
    /// A stream ended; [`ConnectionReport`]s say what the client does about it.
    StreamClosed {
        /// The stream.
        stream: StreamInfo,
        /// How it ended.
        end: StreamEnd,
    },
    /// Connection lifecycle (connecting, connected, backing off, ...).
    Connection(ConnectionReport),
    /// Every subscribed type has answered and every requested name is held or missing. It
    /// covers the watches registered at that moment: a later watch makes the client pending
    /// again, and `Synced` comes again once that one is in too. Watches subscribed together
    /// ([`crate::Client::subscribe_all`]) are all covered by the first one.
    Synced,
}

/// A request on the wire, with the step of the loop it takes.
#[derive(Clone, Debug, PartialEq)]
pub struct SentReport {
    /// The [`StreamInfo::id`] of the stream it went on.
    pub stream: u64,
    /// What the client meant by it, first-hand: `Subscribe` (the type's first request),
    /// `Resubscribe` (its first on a new stream after an earlier one carried it), `Update`
    /// (the interest changed), `Ack` or `Nack` (the one reply a response gets, C4).
    pub step: Step,
    pub request: Outgoing,
}

/// A response as it arrived (see [`Report::Received`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ReceivedReport {
    /// The [`StreamInfo::id`] of the stream it came on.
    pub stream: u64,
    pub mode: Variant,
    pub type_url: String,
    /// `version_info`, or Delta's `system_version_info`.
    pub version: String,
    pub nonce: String,
    /// Every resource it carries whose name could be read, in the order they came.
    pub resources: Vec<ReceivedResource>,
    /// Delta's `removed_resources`.
    pub removed: Vec<String>,
    /// Resources whose name could not be read (they make the response a NACK).
    pub undecodable: u32,
    /// The encoded size of the response.
    pub bytes: usize,
}

impl ReceivedReport {
    /// Only heartbeats (C17): it refreshes TTLs and changes nothing.
    pub fn is_heartbeat(&self) -> bool {
        let mut resources = self.resources.iter();
        self.removed.is_empty() && resources.len() > 0 && resources.all(|r| r.heartbeat)
    }
}

/// One resource of a received response.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceivedResource {
    pub name: String,
    /// Delta: the resource's own version. SotW resources have none.
    pub version: Option<String>,
    /// The resource itself, when bodies were asked for.
    pub body: Option<Any>,
    /// A `Resource` wrapper without `resource`: a heartbeat for `name` (C17).
    pub heartbeat: bool,
}
