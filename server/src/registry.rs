//! The registry of open streams: each stream publishes who it is (node, peer, transport) and,
//! per type, its subscription and ACK/NACK ledger, so `/status` can show them.
//!
//! Streams write on protocol events only (a request or a push), never on a timer, and a reader
//! takes a cloned copy, so the lock is held for a map insert or a clone at most.

use std::{
    collections::BTreeMap,
    fmt,
    net::SocketAddr,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
    time::SystemTime,
};

use serde::Serialize;

use crate::subscription::{Acked, Nacked, Sent};

/// SotW or Delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Sotw,
    Delta,
}

/// How a stream reached us: the protocol variant and the gRPC service (`ads`, or a per-type
/// service alias such as `cds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Transport {
    pub variant: Variant,
    pub service: &'static str,
}

impl Transport {
    pub const ADS_SOTW: Transport = Transport {
        variant: Variant::Sotw,
        service: "ads",
    };
    pub const ADS_DELTA: Transport = Transport {
        variant: Variant::Delta,
        service: "ads",
    };
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let variant = match self.variant {
            Variant::Sotw => "sotw",
            Variant::Delta => "delta",
        };
        write!(f, "{}-{variant}", self.service)
    }
}

/// One type's subscription on one stream, as `/status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TypeStatus {
    pub type_url: String,
    pub wildcard: bool,
    /// Explicitly subscribed names (without `*`).
    pub names: Vec<String>,
    pub last_sent: Option<Sent>,
    pub last_acked: Option<Acked>,
    pub last_nack: Option<Nacked>,
}

/// One open stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamStatus {
    pub id: u64,
    pub peer: Option<SocketAddr>,
    /// From the first request's `node`; `None` until the first request arrives.
    pub node_id: Option<String>,
    pub transport: Transport,
    pub connected_since: SystemTime,
    /// By type URL.
    pub types: BTreeMap<String, TypeStatus>,
}

/// Shared by every stream of one server. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    streams: Arc<Mutex<BTreeMap<u64, StreamStatus>>>,
    next_id: Arc<AtomicU64>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a new stream; it stays listed until the returned guard is dropped.
    pub fn open(&self, transport: Transport, peer: Option<SocketAddr>) -> StreamEntry {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let status = StreamStatus {
            id,
            peer,
            node_id: None,
            transport,
            connected_since: SystemTime::now(),
            types: BTreeMap::new(),
        };
        self.lock().insert(id, status);
        StreamEntry {
            registry: self.clone(),
            id,
        }
    }

    /// A copy of every open stream, by stream id.
    pub fn streams(&self) -> Vec<StreamStatus> {
        self.lock().values().cloned().collect()
    }

    /// A copy of one stream.
    pub fn stream(&self, id: u64) -> Option<StreamStatus> {
        self.lock().get(&id).cloned()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, StreamStatus>> {
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
        if let Some(s) = self.registry.lock().get_mut(&self.id) {
            s.node_id = Some(node_id.to_string());
        }
    }

    /// Replaces the status of the given types.
    pub fn update(&self, types: impl IntoIterator<Item = TypeStatus>) {
        let mut streams = self.registry.lock();
        if let Some(s) = streams.get_mut(&self.id) {
            for status in types {
                s.types.insert(status.type_url.clone(), status);
            }
        }
    }
}

impl Drop for StreamEntry {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_listed_until_their_entry_drops() {
        let registry = Registry::new();
        let a = registry.open(Transport::ADS_SOTW, None);
        let b = registry.open(Transport::ADS_DELTA, "127.0.0.1:1".parse().ok());
        assert_ne!(a.id(), b.id());
        a.set_node("node-a");
        a.update([TypeStatus {
            type_url: "t".into(),
            wildcard: true,
            names: vec![],
            last_sent: None,
            last_acked: None,
            last_nack: None,
        }]);
        let seen = registry.stream(a.id()).unwrap();
        assert_eq!(seen.node_id.as_deref(), Some("node-a"));
        assert!(seen.types["t"].wildcard);
        assert_eq!(b.id(), registry.streams()[1].id);
        assert_eq!(Transport::ADS_DELTA.to_string(), "ads-delta");
        drop(a);
        assert_eq!(registry.len(), 1);
        drop(b);
        assert!(registry.is_empty());
    }
}
