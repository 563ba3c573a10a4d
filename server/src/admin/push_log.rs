//! One INFO line per push while many streams are open: "generation 7: 2,000 streams, all
//! ACKed in 73 ms". Past [`chatter::CHATTY_STREAMS`] the per-stream lines (push, ACK) are at
//! DEBUG, and this line says what they would have: how the fleet took the new snapshot.
//!
//! After each new snapshot, the streams are tallied (each by its worst type, as `/status`
//! judges it: ACKed, NACKed, still waiting) whenever the registry moved, at most every
//! [`POLL`], until none waits, a newer snapshot comes, or [`SETTLE`] passes. While few
//! streams are open nothing runs: their own lines tell it.

use std::{
    borrow::Borrow,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::{sync::watch, task::JoinHandle};
use tracing::info;

use crate::{
    admin::registry::{Registry, StreamStatus},
    admin::status::{SyncState, sync_state},
    protocol::chatter,
    snapshot::Snapshot,
};

/// How often the streams are tallied while a push settles.
pub(crate) const POLL: Duration = Duration::from_millis(50);
/// How long a push may take to settle before the line says what is still waiting.
pub(crate) const SETTLE: Duration = Duration::from_secs(30);

/// Streams by their worst type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub streams: usize,
    pub acked: usize,
    pub nacked: usize,
    pub waiting: usize,
}

/// How the streams stand on `snapshot`.
pub(crate) fn tally<S: Borrow<StreamStatus>>(streams: &[S], snapshot: &Snapshot) -> Tally {
    let mut tally = Tally {
        streams: streams.len(),
        ..Tally::default()
    };
    for stream in streams {
        let stream = stream.borrow();
        let node = stream.node_id.as_deref().unwrap_or_default();
        let states = stream.types.values().map(|status| {
            let current = snapshot.get(node, &status.type_url).map(AsRef::as_ref);
            sync_state(status, current, stream.kind.variant)
        });
        let worst = states.fold(SyncState::Synced, |worst, s| match (worst, s) {
            (SyncState::Nacked, _) | (_, SyncState::Nacked) => SyncState::Nacked,
            (SyncState::Synced, s) => s,
            (w, _) => w,
        });
        match worst {
            SyncState::Synced => tally.acked += 1,
            SyncState::Nacked => tally.nacked += 1,
            SyncState::Pending | SyncState::Stale => tally.waiting += 1,
        }
    }
    tally
}

/// Why a tally is the last one of its push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// No stream waits any more.
    Settled,
    /// [`SETTLE`] passed.
    TimedOut,
    /// A newer snapshot came first.
    Superseded,
}

/// The line for generation `generation`.
pub(crate) fn line(generation: u64, tally: Tally, took: Duration, end: End) -> String {
    let ms = took.as_millis();
    let streams = thousands(tally.streams);
    let (acked, nacked, waiting) = (
        thousands(tally.acked),
        thousands(tally.nacked),
        thousands(tally.waiting),
    );
    match end {
        End::Settled if tally.nacked == 0 => {
            format!("generation {generation}: {streams} streams, all ACKed in {ms} ms")
        }
        End::Settled => format!(
            "generation {generation}: {streams} streams, {acked} ACKed and {nacked} NACKed in \
             {ms} ms"
        ),
        End::TimedOut => format!(
            "generation {generation}: {streams} streams, {acked} ACKed, {nacked} NACKed, \
             {waiting} still waiting after {ms} ms"
        ),
        End::Superseded => format!(
            "generation {generation}: {streams} streams, {acked} ACKed, {nacked} NACKed, \
             {waiting} still waiting when the next generation came ({ms} ms)"
        ),
    }
}

/// `2,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Follows `snapshots` until their sender is gone.
pub(crate) fn spawn(
    registry: Registry,
    snapshots: watch::Receiver<Arc<Snapshot>>,
) -> JoinHandle<()> {
    tokio::spawn(run(registry, snapshots))
}

async fn run(registry: Registry, mut snapshots: watch::Receiver<Arc<Snapshot>>) {
    let mut pending = false;
    loop {
        if !pending && snapshots.changed().await.is_err() {
            return;
        }
        let snapshot = snapshots.borrow_and_update().clone();
        pending = false;
        if chatter::per_stream_at_info() {
            continue;
        }
        let started = Instant::now();
        let mut seen = None;
        let (tally, end) = loop {
            tokio::time::sleep(POLL).await;
            if snapshots.has_changed().unwrap_or(false) {
                pending = true;
            }
            let moved = registry.generation();
            if seen == Some(moved) && !pending && started.elapsed() < SETTLE {
                continue;
            }
            seen = Some(moved);
            let (streams, current) = (registry.shared_streams(), snapshot.clone());
            // Thousands of streams make this milliseconds of CPU: off the runtime threads.
            let counted = tokio::task::spawn_blocking(move || tally(&streams, &current)).await;
            let Ok(counted) = counted else {
                return;
            };
            if counted.waiting == 0 {
                break (counted, End::Settled);
            }
            if pending {
                break (counted, End::Superseded);
            }
            if started.elapsed() >= SETTLE {
                break (counted, End::TimedOut);
            }
        };
        info!(
            "{}",
            line(snapshot.generation, tally, started.elapsed(), end)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        admin::registry::StreamKind,
        protocol::subscription::{Ledger, Subscription},
        test_support::snapshot,
    };
    use xdsloop_proto::type_url::CLUSTER;

    #[test]
    fn lines_say_how_the_fleet_took_the_push() {
        let tally = |acked, nacked, waiting| Tally {
            streams: acked + nacked + waiting,
            acked,
            nacked,
            waiting,
        };
        let ms = Duration::from_millis(73);
        assert_eq!(
            line(7, tally(2_000, 0, 0), ms, End::Settled),
            "generation 7: 2,000 streams, all ACKed in 73 ms"
        );
        assert_eq!(
            line(7, tally(1_990, 10, 0), ms, End::Settled),
            "generation 7: 2,000 streams, 1,990 ACKed and 10 NACKed in 73 ms"
        );
        assert_eq!(
            line(8, tally(1_500, 0, 500), ms, End::TimedOut),
            "generation 8: 2,000 streams, 1,500 ACKed, 0 NACKed, 500 still waiting after 73 ms"
        );
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }

    #[test]
    fn streams_count_by_their_worst_type() {
        let current = snapshot(3, &[(CLUSTER, &[("web", "1")])]);
        let resources = current.get("", CLUSTER).unwrap().clone();
        let registry = Registry::new();
        let (acked, nacked, waiting) = (
            registry.open(StreamKind::ADS_SOTW, None, None),
            registry.open(StreamKind::ADS_SOTW, None, None),
            registry.open(StreamKind::ADS_SOTW, None, None),
        );
        let status = |answer: Option<bool>| {
            let mut sub = Subscription::default();
            sub.interest.replace::<&str>(&[]);
            let mut ledger = Ledger::default();
            ledger.record_sent(&resources.version, "n1", 1, std::time::SystemTime::now());
            match answer {
                Some(true) => ledger.record_ack(&resources.version, std::time::SystemTime::now()),
                Some(false) => {
                    ledger.record_nack("bad", std::time::SystemTime::now());
                }
                None => {}
            }
            sub.ledger = ledger;
            let hash = crate::admin::status::view_hash(
                &sub.status(CLUSTER, None),
                Some(&resources),
                crate::admin::registry::Variant::Sotw,
            );
            sub.status(CLUSTER, Some(hash))
        };
        acked.update([status(Some(true))]);
        nacked.update([status(Some(false))]);
        waiting.update([status(None)]);
        let counted = tally(&registry.shared_streams(), &current);
        assert_eq!(
            counted,
            Tally {
                streams: 3,
                acked: 1,
                nacked: 1,
                waiting: 1
            }
        );
    }
}
