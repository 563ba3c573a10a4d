//! The registry of open streams: each stream publishes who it is (node, peer, service) and,
//! per type, its subscription and ACK/NACK ledger, so `/status` can show them.
//!
//! Streams write on protocol events only (a request or a push), never on a timer, and a reader
//! takes a cloned copy, so the lock is held for a map insert or a clone at most.
//!
//! A closed stream leaves the open list and joins a short list of recently closed ones, with its
//! last state, so "why did my client drop off?" can still be answered after it left.

use std::{
    collections::{BTreeMap, VecDeque},
    fmt,
    net::SocketAddr,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
    time::SystemTime,
};

use serde::Serialize;

use crate::{net::identity::PeerIdentity, protocol::subscription::TypeStatus};

/// SotW or Delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Sotw,
    Delta,
}

/// How a stream reached us: the protocol variant and the gRPC service (`ads`, or a per-type
/// service's name such as `clusters` or `endpoints`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamKind {
    pub variant: Variant,
    pub service: &'static str,
}

impl StreamKind {
    pub const ADS_SOTW: StreamKind = StreamKind {
        variant: Variant::Sotw,
        service: "ads",
    };
    pub const ADS_DELTA: StreamKind = StreamKind {
        variant: Variant::Delta,
        service: "ads",
    };
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let variant = match self.variant {
            Variant::Sotw => "sotw",
            Variant::Delta => "delta",
        };
        write!(f, "{}-{variant}", self.service)
    }
}

/// One open stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamStatus {
    pub id: u64,
    pub peer: Option<SocketAddr>,
    /// The verified client certificate's names (mTLS).
    pub identity: Option<Arc<PeerIdentity>>,
    /// From the first request's `node`; `None` until the first request arrives.
    pub node_id: Option<String>,
    pub kind: StreamKind,
    pub connected_since: SystemTime,
    /// By type URL.
    pub types: BTreeMap<String, TypeStatus>,
}

/// A stream that ended, as it was when it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedStream {
    pub stream: StreamStatus,
    pub disconnected_at: SystemTime,
}

/// How many closed streams are remembered. Enough to see a client flap or a fleet's last few
/// departures; bounded because a reconnect loop must not grow server memory.
pub const RECENTLY_CLOSED: usize = 32;

#[derive(Debug, Default)]
struct Streams {
    open: BTreeMap<u64, StreamStatus>,
    /// Oldest first; at most [`RECENTLY_CLOSED`].
    closed: VecDeque<ClosedStream>,
}

/// Shared by every stream of one server. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    streams: Arc<Mutex<Streams>>,
    next_id: Arc<AtomicU64>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a new stream; it stays listed until the returned guard is dropped.
    pub fn open(
        &self,
        kind: StreamKind,
        peer: Option<SocketAddr>,
        identity: Option<Arc<PeerIdentity>>,
    ) -> StreamEntry {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let status = StreamStatus {
            id,
            peer,
            identity,
            node_id: None,
            kind,
            connected_since: SystemTime::now(),
            types: BTreeMap::new(),
        };
        self.lock().open.insert(id, status);
        StreamEntry {
            registry: self.clone(),
            id,
        }
    }

    /// A copy of every open stream, by stream id.
    pub fn streams(&self) -> Vec<StreamStatus> {
        self.lock().open.values().cloned().collect()
    }

    /// A copy of one open stream.
    pub fn stream(&self, id: u64) -> Option<StreamStatus> {
        self.lock().open.get(&id).cloned()
    }

    /// The last [`RECENTLY_CLOSED`] streams that ended, most recent first.
    pub fn recently_closed(&self) -> Vec<ClosedStream> {
        self.lock().closed.iter().rev().cloned().collect()
    }

    /// Number of open streams.
    pub fn len(&self) -> usize {
        self.lock().open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Streams> {
        // A panic while holding this lock leaves plain data behind; keep serving it.
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A stream's handle on its registry entry; dropping it removes the entry.
#[derive(Debug)]
pub struct StreamEntry {
    registry: Registry,
    id: u64,
}

impl StreamEntry {
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn set_node(&self, node_id: &str) {
        if let Some(s) = self.registry.lock().open.get_mut(&self.id) {
            s.node_id = Some(node_id.to_string());
        }
    }

    /// Replaces the status of the given types.
    pub fn update(&self, types: impl IntoIterator<Item = TypeStatus>) {
        let mut streams = self.registry.lock();
        if let Some(s) = streams.open.get_mut(&self.id) {
            for status in types {
                s.types.insert(status.type_url.clone(), status);
            }
        }
    }
}

impl Drop for StreamEntry {
    fn drop(&mut self) {
        let mut streams = self.registry.lock();
        let Some(stream) = streams.open.remove(&self.id) else {
            return;
        };
        if streams.closed.len() == RECENTLY_CLOSED {
            streams.closed.pop_front();
        }
        let disconnected_at = SystemTime::now();
        streams.closed.push_back(ClosedStream {
            stream,
            disconnected_at,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_listed_until_their_entry_drops() {
        let registry = Registry::new();
        let a = registry.open(StreamKind::ADS_SOTW, None, None);
        let b = registry.open(StreamKind::ADS_DELTA, "127.0.0.1:1".parse().ok(), None);
        assert_ne!(a.id(), b.id());
        a.set_node("node-a");
        a.update([TypeStatus {
            type_url: "t".into(),
            wildcard: true,
            names: Default::default(),
            last_sent: None,
            last_acked: None,
            last_nack: None,
            held_hash: None,
        }]);
        let seen = registry.stream(a.id()).unwrap();
        assert_eq!(seen.node_id.as_deref(), Some("node-a"));
        assert!(seen.types["t"].wildcard);
        assert_eq!(b.id(), registry.streams()[1].id);
        assert_eq!(StreamKind::ADS_DELTA.to_string(), "ads-delta");
        drop(a);
        assert_eq!(registry.len(), 1);
        drop(b);
        assert!(registry.is_empty());
        let closed = registry.recently_closed();
        assert_eq!(closed.len(), 2, "closed streams are remembered");
        assert_eq!(closed[0].stream.id, 2, "most recent first");
        assert_eq!(closed[1].stream.node_id.as_deref(), Some("node-a"));
    }

    #[test]
    fn recently_closed_is_bounded() {
        let registry = Registry::new();
        for _ in 0..RECENTLY_CLOSED + 5 {
            drop(registry.open(StreamKind::ADS_SOTW, None, None));
        }
        let closed = registry.recently_closed();
        assert_eq!(closed.len(), RECENTLY_CLOSED);
        assert_eq!(closed[0].stream.id, (RECENTLY_CLOSED + 5) as u64);
    }
}
