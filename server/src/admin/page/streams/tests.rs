//! A conversation reader that falls behind: it is told how much it lost and goes on with the
//! newest events; the streams that produced them never waited for it.

use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::watch;
use xdsloop_proto::discovery::DeltaDiscoveryRequest;

use super::*;
use crate::test_support::exchange;
use crate::{
    admin::registry::{Publish, Registry, StreamKind, bus::CAPACITY},
    protocol::{
        facts::TapRequest,
        subscription::{Change, Exchange, Verdict, delta_subscribes_wildcard},
    },
    tap::{CloseReason, Closed, Opened, What, WireEvent},
    test_support::snapshot,
};

fn event(stream: u64, seq: u32, what: What) -> Arc<WireEvent> {
    crate::test_support::wire_event(stream, seq, Some("n1"), what)
}

fn opened() -> What {
    What::Opened(Opened {
        kind: StreamKind::ADS_SOTW,
        peer: None,
    })
}

#[tokio::test]
async fn a_reader_that_falls_behind_gets_a_gap_then_the_newest_events() {
    let registry = Registry::new();
    let (_, snapshots) = watch::channel(snapshot(1, &[]));
    let sources = Sources {
        registry: registry.clone(),
        snapshots,
        reloads: None,
        scenarios: crate::faults::scenario::Scenarios::new(),
    };
    let entry = registry.open(StreamKind::ADS_SOTW, None, None);
    let id = entry.id();
    entry.publish(&mut Publish {
        events: vec![event(id, 1, opened())],
        ..Publish::default()
    });
    let mut reader = Box::pin(conversation(sources, id));
    let (name, first) = reader.next().await.unwrap();
    assert_eq!(
        (name, first["step"].as_str()),
        ("event", Some("established"))
    );
    assert_eq!(first["envoy"], Step::Established.envoy_call());
    assert_eq!(reader.next().await.unwrap().0, "head");

    // The reader does not read while the stream (and another) go on: sending never waits.
    let lost = 5;
    let bus = registry.bus();
    // With the closing event after them, `lost` more events than the bus keeps.
    let sent = CAPACITY + lost - 1;
    for seq in 0..sent as u32 {
        let (stream, seq) = if seq % 2 == 0 {
            (id, seq + 2)
        } else {
            (id + 1, seq)
        };
        bus.send(event(stream, seq, opened()));
    }
    let closed = What::Closed(Closed {
        reason: CloseReason::Client,
        status: None,
    });
    bus.send(event(id, u32::MAX, closed));

    let (name, gap) = reader.next().await.unwrap();
    assert_eq!((name, gap["lost"].as_u64()), ("gap", Some(lost as u64)));
    let mut seqs = Vec::new();
    loop {
        let (name, value) = reader.next().await.unwrap();
        if name == "head" {
            continue;
        }
        seqs.push(value["seq"].as_u64().unwrap());
        if value["step"] == "closed" {
            break;
        }
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order, no repeats");
    let kept = (lost..sent).filter(|i| i % 2 == 0).count() + 1;
    assert_eq!(
        seqs.len(),
        kept,
        "this stream's events after the gap, and its close"
    );
    assert_eq!(
        registry.bus().capture(),
        None,
        "its stream closed: the conversation stopped listening (and costing the streams)"
    );
}

/// A Delta request for clusters as the tap reports it once the machine judged it.
fn delta_request(subscribe: &[&str], nonce: &str, exchange: Exchange) -> Arc<WireEvent> {
    let request = DeltaDiscoveryRequest {
        type_url: xdsloop_proto::type_url::CLUSTER.to_string(),
        resource_names_subscribe: subscribe.iter().map(|n| n.to_string()).collect(),
        response_nonce: nonce.to_string(),
        ..DeltaDiscoveryRequest::default()
    };
    let mut facts = request.facts(Capture::Full);
    // What the Delta machine sets from the same request.
    let wildcard = delta_subscribes_wildcard(exchange.first_for_type, subscribe);
    facts.settle(
        Exchange {
            wildcard,
            ..exchange
        },
        false,
    );
    event(1, 2, What::Request(Box::new(facts)))
}

#[test]
fn a_delta_request_that_subscribes_the_wildcard_says_so_and_its_acks_do_not() {
    let wildcard = |e: &Arc<WireEvent>| page_event(e)["wildcard"].as_bool();
    let legacy = delta_request(&[], "", exchange(Verdict::Initial, true, Change::Widened));
    assert_eq!(
        wildcard(&legacy),
        Some(true),
        "a first request naming nothing is the legacy wildcard"
    );
    let ack = delta_request(&[], "1-1", exchange(Verdict::Ack, false, Change::None));
    assert_eq!(
        wildcard(&ack),
        Some(false),
        "an ACK names nothing too, and subscribes to nothing"
    );
    let named = delta_request(
        &["a"],
        "",
        exchange(Verdict::Initial, true, Change::Widened),
    );
    assert_eq!(wildcard(&named), Some(false));
    let star = delta_request(
        &["a", "*"],
        "",
        exchange(Verdict::Initial, false, Change::Widened),
    );
    assert_eq!(
        wildcard(&star),
        Some(true),
        "`*` is the wildcard on any request"
    );
}

/// The page events of SotW cluster requests as the machine judges them, one stream, in order.
fn sotw_conversation(requests: &[(&[&str], &str, &str)]) -> Vec<Value> {
    use crate::protocol::{
        machine::{MachineHooks, StreamMachine},
        now::tests::now,
        request::SotwRequest,
        sotw::SotwStream,
    };
    use crate::test_support::sotw;
    let cds = xdsloop_proto::type_url::CLUSTER;
    let mut machine = SotwStream::new(1, snapshot(1, &[(cds, &[("a", "1"), ("b", "1")])]));
    let mut events = Vec::new();
    for (seq, (names, version, nonce)) in requests.iter().enumerate() {
        let request = SotwRequest::from(sotw(cds, names, version, nonce));
        let mut facts = request.facts(Capture::Full);
        machine.on_request(request, now());
        facts.settle(machine.exchange(), false);
        events.push(page_event(&event(
            1,
            seq as u32 + 2,
            What::Request(Box::new(facts)),
        )));
    }
    events
}

#[test]
fn a_sotw_request_naming_nothing_is_the_wildcard_only_before_the_client_named_resources() {
    let wildcard = |e: &Value| e["wildcard"].as_bool();
    let legacy = sotw_conversation(&[(&[], "", ""), (&[], "1", "1-1")]);
    assert_eq!(
        legacy.iter().map(wildcard).collect::<Vec<_>>(),
        [Some(true), Some(true)],
        "a first request naming nothing is the legacy wildcard, and so are its ACKs"
    );
    let named = sotw_conversation(&[(&["a"], "", ""), (&[], "1", "1-1")]);
    assert_eq!(
        named.iter().map(wildcard).collect::<Vec<_>>(),
        [Some(false), Some(false)],
        "after naming resources, naming nothing unsubscribes from everything"
    );
    let star = sotw_conversation(&[(&["a"], "", ""), (&["*"], "1", "1-1")]);
    assert_eq!(
        wildcard(&star[1]),
        Some(true),
        "`*` is the wildcard on any request"
    );
}
