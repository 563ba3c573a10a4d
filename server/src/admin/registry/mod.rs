//! The registry of open streams: each stream publishes who it is (node, peer, service) and,
//! per type, its subscription and ACK/NACK ledger, so `/status` can show them.
//!
//! Streams write on protocol events only (a request or a push), never on a timer, and a reader
//! takes a cloned copy, so the lock is held for a map insert or a clone at most.
//!
//! A closed stream leaves the open list and joins a short list of recently closed ones, with its
//! last state, so "why did my client drop off?" can still be answered after it left.
//!
//! The registry is also where a stream's observers meet it:
//! - [`timeline`]: each stream's last few events, appended in the same critical section as its
//!   status;
//! - [`bus`]: every stream's events as they happen, for listeners (recorder, tests, page);
//! - [`stats`]: server-wide counters, and the recorder's progress;
//! - [`lineage`]: what each node's earlier streams had (subscribe vs resubscribe);
//! - [`violations`]: what the conformance judge found on each stream.

pub(crate) mod bus;
pub(crate) mod lineage;
pub(crate) mod stats;
pub(crate) mod timeline;
pub(crate) mod violations;

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    net::SocketAddr,
    sync::{
        Arc, Mutex, MutexGuard, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    time::SystemTime,
};

use crate::net::identity::PeerIdentity;
pub use crate::protocol::kind::{StreamKind, Variant};
use crate::{judge::Violation, protocol::subscription::TypeStatus, replay::Replay, tap::WireEvent};
use bus::Bus;
use lineage::Lineage;
use stats::{Counters, RecorderStats, Tally};
use timeline::Timeline;
use violations::Violations;

/// One open stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamStatus {
    /// The stream's id, unique for the server's lifetime (what `/status` and transcripts name).
    pub id: u64,
    /// The client's address (`None` for an in-process stream).
    pub peer: Option<SocketAddr>,
    /// The verified client certificate's names (mTLS).
    pub identity: Option<Arc<PeerIdentity>>,
    /// From the first request's `node`; `None` until the first request arrives.
    pub node_id: Option<String>,
    /// The variant and service it came through.
    pub kind: StreamKind,
    /// When it opened.
    pub connected_since: SystemTime,
    /// By type URL.
    pub types: BTreeMap<String, TypeStatus>,
    /// Its last few events (empty with `--timeline-depth 0`).
    pub recent: Timeline,
    /// Scenario faults that fired on it.
    pub faults_fired: u64,
    /// What the conformance judge found on it.
    pub violations: Violations,
}

/// A stream that ended, as it was when it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedStream {
    /// The stream as it was at its end.
    pub stream: StreamStatus,
    /// When it ended.
    pub disconnected_at: SystemTime,
}

/// How many closed streams are remembered. Enough to see a client flap or a fleet's last few
/// departures; bounded because a reconnect loop must not grow server memory.
pub(crate) const RECENTLY_CLOSED: usize = 32;

#[derive(Debug, Default)]
struct Streams {
    /// Shared, so a reader copies pointers under the lock and the streams themselves after
    /// it: `/status` and the page never hold up a publishing stream for long.
    open: BTreeMap<u64, Arc<StreamStatus>>,
    /// Oldest first; at most [`RECENTLY_CLOSED`].
    closed: VecDeque<ClosedStream>,
    counters: Counters,
    /// Violations since start-up, by check.
    violations: BTreeMap<&'static str, u64>,
    lineage: Lineage,
    /// Moves whenever anything above does, so a reader can tell it has nothing new to read.
    generation: u64,
}

/// Shared by every stream of one server. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Registry {
    streams: Arc<Mutex<Streams>>,
    next_id: Arc<AtomicU64>,
    bus: Arc<Bus>,
    /// Events kept per stream; 0 turns timelines off.
    depth: usize,
    recorder: Arc<OnceLock<Arc<RecorderStats>>>,
    replay: Arc<OnceLock<Arc<Replay>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::with_timeline_depth(timeline::DEFAULT_DEPTH)
    }
}

impl Registry {
    /// An empty registry, keeping each stream's last [`timeline::DEFAULT_DEPTH`] events.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeping each stream's last `depth` events (0: none, nothing is built for them).
    pub fn with_timeline_depth(depth: usize) -> Self {
        Self {
            streams: Arc::default(),
            next_id: Arc::default(),
            bus: Arc::default(),
            depth,
            recorder: Arc::default(),
            replay: Arc::default(),
        }
    }

    /// Registers a new stream; it stays listed until the returned guard is dropped.
    pub(crate) fn open(
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
            recent: Timeline::default(),
            faults_fired: 0,
            violations: Violations::default(),
        };
        crate::protocol::chatter::opened();
        let mut streams = self.lock();
        streams.open.insert(id, Arc::new(status));
        streams.counters.streams_opened += 1;
        streams.generation += 1;
        StreamEntry {
            registry: self.clone(),
            id,
        }
    }

    /// A copy of every open stream, by stream id.
    pub fn streams(&self) -> Vec<StreamStatus> {
        let shared = self.shared_streams();
        shared.iter().map(|s| StreamStatus::clone(s)).collect()
    }

    /// Every open stream as it is now, by stream id, without copying them.
    pub(crate) fn shared_streams(&self) -> Vec<Arc<StreamStatus>> {
        self.lock().open.values().cloned().collect()
    }

    /// A copy of one open stream.
    pub fn stream(&self, id: u64) -> Option<StreamStatus> {
        let shared = self.lock().open.get(&id).cloned();
        shared.map(|s| StreamStatus::clone(&s))
    }

    /// The last 32 streams that ended, most recent first.
    pub fn recently_closed(&self) -> Vec<ClosedStream> {
        self.lock().closed.iter().rev().cloned().collect()
    }

    /// Number of open streams.
    pub fn len(&self) -> usize {
        self.lock().open.len()
    }

    /// No stream is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Moves on every change to the streams, their status, timelines or counters.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Totals since start-up.
    pub fn counters(&self) -> Counters {
        self.lock().counters
    }

    /// Adds what a stateless exchange did (a REST poll a scenario rule touched): it has no
    /// entry of its own to publish through.
    pub(crate) fn count(&self, tally: Tally) {
        let mut streams = self.lock();
        streams.generation += 1;
        streams.counters.add(tally);
    }

    /// Conformance violations since start-up, by check (`C5.nack-version`).
    pub fn violations(&self) -> BTreeMap<&'static str, u64> {
        self.lock().violations.clone()
    }

    /// Every stream's events from now on: [`Bus::listen`] to hear them.
    pub fn bus(&self) -> &Arc<Bus> {
        &self.bus
    }

    /// Events kept per stream.
    pub(crate) fn timeline_depth(&self) -> usize {
        self.depth
    }

    /// Registers the recorder's progress for `/status`; once per server.
    pub(crate) fn attach_recorder(&self, stats: Arc<RecorderStats>) {
        let _ = self.recorder.set(stats);
    }

    pub(crate) fn recorder(&self) -> Option<&Arc<RecorderStats>> {
        self.recorder.get()
    }

    /// Registers the replay (`--replay`) for `/status`; once per server.
    pub(crate) fn attach_replay(&self, replay: Arc<Replay>) {
        let _ = self.replay.set(replay);
    }

    /// The replay being served (`--replay`), if the server replays a recording.
    pub fn replay(&self) -> Option<&Arc<Replay>> {
        self.replay.get()
    }

    fn lock(&self) -> MutexGuard<'_, Streams> {
        // A panic while holding this lock leaves plain data behind; keep serving it.
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A stream's handle on its registry entry; dropping it removes the entry.
#[derive(Debug)]
pub(crate) struct StreamEntry {
    registry: Registry,
    id: u64,
}

/// What a stream publishes each time it handled something.
#[derive(Debug, Default)]
pub(crate) struct Publish {
    /// New status of the types that changed.
    pub types: Vec<TypeStatus>,
    /// Events for its timeline, oldest first (drained).
    pub events: Vec<Arc<WireEvent>>,
    /// What it did since it last published (reset).
    pub tally: Tally,
    /// What the conformance judge found since it last published (drained).
    pub violations: Vec<Arc<Violation>>,
}

impl StreamEntry {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Names the stream's node; returns the types that node's closed streams had.
    pub(crate) fn set_node(&self, node_id: &str) -> Arc<BTreeSet<String>> {
        let mut streams = self.registry.lock();
        streams.generation += 1;
        if let Some(s) = streams.open.get_mut(&self.id) {
            Arc::make_mut(s).node_id = Some(node_id.to_string());
        }
        streams.lineage.earlier_types(node_id)
    }

    /// Replaces the status of the given types.
    #[cfg(test)]
    pub(crate) fn update(&self, types: impl IntoIterator<Item = TypeStatus>) {
        self.publish(&mut Publish {
            types: types.into_iter().collect(),
            ..Publish::default()
        });
    }

    /// Stores `publish`'s status, timeline events and counts in one critical section, and
    /// leaves it empty for the next round.
    pub(crate) fn publish(&self, publish: &mut Publish) {
        let depth = self.registry.depth;
        let mut streams = self.registry.lock();
        streams.generation += 1;
        let faults = publish.tally.faults;
        streams.counters.add(std::mem::take(&mut publish.tally));
        for v in &publish.violations {
            *streams.violations.entry(v.check).or_default() += 1;
        }
        let Some(s) = streams.open.get_mut(&self.id) else {
            publish.violations.clear();
            return;
        };
        // Copies the stream only while a reader still holds the previous state.
        let s = Arc::make_mut(s);
        s.faults_fired += faults;
        for violation in publish.violations.drain(..) {
            s.violations.add(violation);
        }
        for status in publish.types.drain(..) {
            s.types.insert(status.type_url.clone(), status);
        }
        s.recent.extend(depth, publish.events.drain(..));
    }
}

impl Drop for StreamEntry {
    fn drop(&mut self) {
        let mut streams = self.registry.lock();
        let Some(stream) = streams.open.remove(&self.id) else {
            return;
        };
        crate::protocol::chatter::closed();
        streams.generation += 1;
        if let Some(node) = &stream.node_id {
            streams.lineage.closed(node, stream.types.keys());
        }
        if streams.closed.len() == RECENTLY_CLOSED {
            streams.closed.pop_front();
        }
        let disconnected_at = SystemTime::now();
        let stream = Arc::unwrap_or_clone(stream);
        streams.closed.push_back(ClosedStream {
            stream,
            disconnected_at,
        });
    }
}

#[cfg(test)]
mod tests;
