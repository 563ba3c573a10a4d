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
        last_fault: None,
        held_hash: None,
        heartbeats: None,
        replayed: false,
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

fn closed_event(stream: u64, seq: u32) -> Arc<WireEvent> {
    use crate::tap::{CloseReason, Closed, What};
    Arc::new(WireEvent {
        at: SystemTime::now(),
        stream,
        seq,
        node: None,
        what: What::Closed(Closed {
            reason: CloseReason::Client,
            status: None,
        }),
    })
}

#[test]
fn publish_stores_events_and_counts_in_one_go_and_closed_streams_keep_their_timeline() {
    let registry = Registry::with_timeline_depth(2);
    let entry = registry.open(StreamKind::ADS_SOTW, None, None);
    let mut publish = Publish::default();
    publish
        .tally
        .request(crate::protocol::subscription::Verdict::Ack);
    publish.tally.responses = 3;
    publish.events = (1..=3).map(|seq| closed_event(entry.id(), seq)).collect();
    entry.publish(&mut publish);
    assert!(
        publish.events.is_empty() && publish.tally.is_empty(),
        "drained"
    );
    let counters = registry.counters();
    assert_eq!((counters.streams_opened, counters.requests), (1, 1));
    assert_eq!((counters.acks, counters.responses), (1, 3));
    let seqs = |s: &StreamStatus| s.recent.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(seqs(&registry.stream(entry.id()).unwrap()), [2, 3]);
    drop(entry);
    assert_eq!(seqs(&registry.recently_closed()[0].stream), [2, 3]);
}

#[test]
fn a_node_learns_the_types_of_its_closed_streams() {
    let registry = Registry::new();
    let first = registry.open(StreamKind::ADS_SOTW, None, None);
    assert!(first.set_node("n").is_empty(), "a new node had nothing");
    first.update([TypeStatus {
        type_url: "cds".into(),
        wildcard: true,
        names: Default::default(),
        last_sent: None,
        last_acked: None,
        last_nack: None,
        last_fault: None,
        held_hash: None,
        heartbeats: None,
        replayed: false,
    }]);
    let second = registry.open(StreamKind::ADS_SOTW, None, None);
    assert!(
        second.set_node("n").is_empty(),
        "the first stream is still open"
    );
    drop(first);
    let third = registry.open(StreamKind::ADS_SOTW, None, None);
    assert!(third.set_node("n").contains("cds"));
    assert!(third.set_node("m").is_empty(), "per node");
}
