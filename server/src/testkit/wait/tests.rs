use std::{sync::Arc, time::SystemTime};

use xdsloop_proto::type_url::CLUSTER;

use super::*;
use crate::{
    admin::registry::StreamKind,
    protocol::{
        facts::{Listed, Names, ResponseFacts, TypeName},
        kind::Variant,
        subscription::{Acked, Change, Subscription},
    },
};

fn event(stream: u64, what: What) -> Arc<WireEvent> {
    crate::test_support::wire_event(stream, 0, Some("n1"), what)
}

fn response(stream: u64, version: &str, nonce: &str) -> Arc<WireEvent> {
    event(
        stream,
        What::Response(Box::new(ResponseFacts {
            type_url: TypeName::of(CLUSTER),
            variant: Variant::Delta,
            version: version.into(),
            nonce: nonce.into(),
            resources: Listed::default(),
            removed: Listed::default(),
            bytes: 0,
            fault: None,
            bodies: None,
            heartbeat: false,
        })),
    )
}

/// A Delta request: it carries no version of its own.
fn request(stream: u64, verdict: Verdict, nonce: &str) -> Arc<WireEvent> {
    event(
        stream,
        What::Request(Box::new(RequestFacts {
            type_url: TypeName::of(CLUSTER),
            verdict,
            first_for_type: false,
            change: Change::None,
            wildcard: false,
            earlier_had_type: false,
            version: "".into(),
            nonce: nonce.into(),
            error: None,
            has_node: true,
            names: Names::Sotw(Listed::default()),
        })),
    )
}

fn ack_query(version: Option<&str>, from: usize) -> Query<'_> {
    Query {
        node: "n1",
        type_url: CLUSTER,
        want: Want::Ack(version),
        from: Mark(from),
    }
}

fn acked(found: Option<Found>) -> Option<(u64, String)> {
    match found? {
        Found::Ack(ack) => Some((ack.stream, ack.version)),
        Found::Nack(_) | Found::Violation(_) => None,
    }
}

#[test]
fn an_ack_takes_its_version_from_the_response_it_answers() {
    let kept = Kept {
        events: vec![
            response(1, "sys-1", "1-1"),
            response(2, "sys-9", "2-1"),
            response(1, "sys-2", "1-2"),
            request(1, Verdict::Ack, "1-2"),
        ],
        lost: 0,
    };
    let registry = Registry::new();
    let found = lookup(&ack_query(Some("sys-2"), 0), &kept, &registry);
    assert_eq!(acked(found), Some((1, "sys-2".into())));
    let other = lookup(&ack_query(Some("sys-1"), 0), &kept, &registry);
    assert_eq!(acked(other), None, "sys-1 was sent but never ACKed");
}

#[test]
fn since_a_mark_only_later_requests_count() {
    let kept = Kept {
        events: vec![response(1, "v1", "1-1"), request(1, Verdict::Ack, "1-1")],
        lost: 0,
    };
    let registry = Registry::new();
    assert!(lookup(&ack_query(None, 1), &kept, &registry).is_some());
    assert!(lookup(&ack_query(None, 2), &kept, &registry).is_none());
    assert!(lookup(&ack_query(None, 9), &kept, &registry).is_none());
}

#[test]
fn only_a_journal_that_lost_events_reads_the_ledgers() {
    let registry = Registry::new();
    let entry = registry.open(StreamKind::ADS_SOTW, None, None);
    entry.set_node("n1");
    let mut status = Subscription::default().status(CLUSTER, None);
    status.last_acked = Some(Acked {
        version: "v1".into(),
        nonce: "1-1".into(),
        at: SystemTime::UNIX_EPOCH,
    });
    entry.update([status]);
    let complete = Kept::default();
    assert!(lookup(&ack_query(Some("v1"), 0), &complete, &registry).is_none());
    let lossy = Kept {
        events: Vec::new(),
        lost: 3,
    };
    let found = lookup(&ack_query(Some("v1"), 0), &lossy, &registry);
    assert_eq!(acked(found), Some((entry.id(), "v1".into())));
    assert!(lookup(&ack_query(Some("v2"), 0), &lossy, &registry).is_none());
}
