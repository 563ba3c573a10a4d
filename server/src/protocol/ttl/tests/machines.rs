//! The stream machines with TTL'd resources: what goes on the wire, and when.

use crate::protocol::machine::{MachineHooks, StreamMachine};
use crate::protocol::now::tests::now;
use std::{collections::BTreeMap, sync::Arc};

use crate::protocol::now::Now;

use bytes::Bytes;
use prost::Message;
use xdsloop_proto::{
    Resource,
    discovery::{DeltaDiscoveryRequest, DiscoveryRequest, DiscoveryResponse, WireResource},
    type_url::{CLUSTER, ENDPOINT},
    wrapper::RESOURCE_WRAPPER,
};

use super::*;
use crate::{
    protocol::{delta::DeltaStream, sotw::SotwStream},
    snapshot::Snapshot,
    snapshot::TypeResources,
    test_support::{error, sotw},
};

/// A type's resources: `(name, content version, ttl in seconds)`.
fn resources(type_url: &str, list: &[(&str, &str, Option<u64>)]) -> Arc<TypeResources> {
    let map: BTreeMap<String, Arc<Resource>> = list
        .iter()
        .map(|(name, version, ttl)| {
            let resource = Resource {
                type_url: type_url.to_string(),
                name: name.to_string(),
                bytes: Bytes::from(format!("{name}@{version}")),
                version: version.to_string(),
                ttl: ttl.map(Duration::from_secs),
            };
            (name.to_string(), Arc::new(resource))
        })
        .collect();
    Arc::new(TypeResources::new(map, None))
}

fn snapshot(generation: u64, types: &[(&str, Arc<TypeResources>)]) -> Arc<Snapshot> {
    let base = types
        .iter()
        .map(|(url, t)| (url.to_string(), t.clone()))
        .collect();
    Arc::new(Snapshot {
        generation,
        base,
        overlays: BTreeMap::new(),
    })
}

fn eds(list: &[(&str, &str, Option<u64>)]) -> Arc<Snapshot> {
    snapshot(1, &[(ENDPOINT, resources(ENDPOINT, list))])
}

/// A request from a node advertising `features`.
fn asking(mut request: DiscoveryRequest, features: &[&str]) -> DiscoveryRequest {
    let node = request.node.as_mut().unwrap();
    node.client_features = features.iter().map(|f| f.to_string()).collect();
    request
}

const BOTH: &[&str] = &[RESOURCE_IN_SOTW, SUPPORTS_TTL];

/// Each `Any` of a SotW response: (type URL, wrapper name, has resource, ttl seconds).
fn entries(response: &DiscoveryResponse) -> Vec<(String, String, bool, Option<i64>)> {
    let decode = |any: &xdsloop_proto::discovery::Any| {
        if any.type_url != RESOURCE_WRAPPER {
            let name = String::from_utf8(any.value.clone()).unwrap();
            return (any.type_url.clone(), name, true, None);
        }
        let wrapper = WireResource::decode(any.value.as_slice()).unwrap();
        let ttl = wrapper.ttl.map(|d| d.seconds);
        (
            any.type_url.clone(),
            wrapper.name,
            wrapper.resource.is_some(),
            ttl,
        )
    };
    response.resources.iter().map(decode).collect()
}

/// A SotW stream that subscribed to `names` of EDS and ACKed the first response at `now`.
fn acked(snapshot: Arc<Snapshot>, features: &[&str], at: Now) -> (SotwStream, DiscoveryResponse) {
    let mut stream = SotwStream::new(1, snapshot);
    let first =
        stream.on_request_decoded(asking(sotw(ENDPOINT, &["a", "b"], "", ""), features), at);
    let first = first[0].clone();
    let ack = sotw(ENDPOINT, &["a", "b"], &first.version_info, &first.nonce);
    assert!(stream.on_request_decoded(ack, at).is_empty());
    assert!(stream.on_tick(at).is_empty(), "scheduled, not due");
    (stream, first)
}

fn tick(stream: &mut SotwStream, at: Now) -> Vec<DiscoveryResponse> {
    stream.on_tick(at).iter().map(|r| r.to_message()).collect()
}

#[test]
fn s14_sotw_wraps_ttl_resources_only_for_clients_that_unwrap_them() {
    let snap = eds(&[("a", "1", Some(30)), ("b", "1", None)]);
    let t0 = now();
    let (_, wrapped) = acked(snap.clone(), &[RESOURCE_IN_SOTW], t0);
    assert_eq!(
        entries(&wrapped),
        [
            (RESOURCE_WRAPPER.into(), "a".into(), true, Some(30)),
            (ENDPOINT.into(), "b@1".into(), true, None),
        ]
    );
    let inner = WireResource::decode(wrapped.resources[0].value.as_slice()).unwrap();
    let any = inner.resource.unwrap();
    assert_eq!(
        (any.type_url.as_str(), &any.value[..]),
        (ENDPOINT, &b"a@1"[..])
    );
    let (_, bare) = acked(snap, &[], t0);
    let bare: Vec<String> = entries(&bare).into_iter().map(|e| e.0).collect();
    assert_eq!(
        bare,
        [ENDPOINT, ENDPOINT],
        "no wrapper for a client that cannot unwrap one"
    );
}

#[test]
fn s15_sotw_heartbeat_at_a_third_of_the_ttl_with_the_same_version() {
    let snap = eds(&[("a", "1", Some(30)), ("b", "1", None)]);
    let t0 = now();
    let (mut stream, first) = acked(snap, BOTH, t0);
    assert_eq!(
        stream.next_deadline(),
        Some((t0 + Duration::from_secs(10)).at)
    );
    assert!(tick(&mut stream, t0 + Duration::from_secs(9)).is_empty());
    let beat = tick(&mut stream, t0 + Duration::from_secs(10)).remove(0);
    assert_eq!(
        beat.version_info, first.version_info,
        "a heartbeat keeps the version"
    );
    assert_ne!(beat.nonce, first.nonce);
    let wrapper = (RESOURCE_WRAPPER.into(), "a".into(), false, Some(30));
    assert_eq!(
        entries(&beat),
        [wrapper],
        "EDS: only the TTL'd resource, without its body"
    );
    assert_eq!(
        stream.next_deadline(),
        Some((t0 + Duration::from_secs(20)).at),
        "the next is due a third of the TTL after this one was sent, answered or not"
    );

    let status = stream.take_status().remove(0);
    let pushed = status.last_sent.clone().unwrap();
    assert_eq!(pushed.nonce, first.nonce, "a heartbeat is not a push");
    assert_eq!(
        status
            .heartbeats
            .as_ref()
            .map(|h| (h.sent, h.ttl_resources)),
        Some((1, 1))
    );
    let ack = sotw(ENDPOINT, &["a", "b"], &beat.version_info, &beat.nonce);
    assert!(stream.on_request_decoded(ack, now()).is_empty());
    let status = stream.take_status().remove(0);
    let last_acked = status.last_acked.unwrap();
    assert_eq!(
        last_acked.nonce, first.nonce,
        "nor is its ACK an ACK of a push"
    );
    let later = t0 + Duration::from_secs(15);
    assert!(tick(&mut stream, later).is_empty());
    assert_eq!(
        stream.next_deadline(),
        Some((t0 + Duration::from_secs(20)).at),
        "its answer does not move the schedule"
    );
}

#[test]
fn s15_a_request_answering_a_heartbeat_is_not_stale() {
    let snap = eds(&[("a", "1", Some(30)), ("b", "1", None), ("c", "1", None)]);
    let t0 = now();
    let (mut stream, first) = acked(snap, BOTH, t0);
    let beat = tick(&mut stream, t0 + Duration::from_secs(10)).remove(0);
    let widened = sotw(ENDPOINT, &["a", "b", "c"], &first.version_info, &beat.nonce);
    let answer = stream.on_request_decoded(widened, now());
    assert_eq!(answer.len(), 1, "the new name is answered");
    let mut nack = sotw(ENDPOINT, &["a", "b", "c"], &first.version_info, &beat.nonce);
    nack.error_detail = error("no heartbeats please");
    assert!(
        stream.on_request_decoded(nack, now()).is_empty(),
        "an old heartbeat nonce is stale"
    );
}

#[test]
fn s15_a_heartbeat_answer_is_an_ack_to_observers_and_leaves_the_push_ledger_alone() {
    use crate::protocol::subscription::Verdict;
    let snap = eds(&[("a", "1", Some(30)), ("b", "1", None)]);
    let t0 = now();
    let (mut stream, first) = acked(snap, BOTH, t0);
    let before = stream.ledger(ENDPOINT).cloned().unwrap();
    let beat = tick(&mut stream, t0 + Duration::from_secs(10)).remove(0);
    let ack = sotw(ENDPOINT, &["a", "b"], &first.version_info, &beat.nonce);
    assert!(stream.on_request_decoded(ack, now()).is_empty());
    assert_eq!(
        stream.exchange().verdict,
        Verdict::Ack,
        "the tap, counters and transcript see an ACK"
    );
    let after = stream.ledger(ENDPOINT).unwrap();
    assert_eq!(
        (&after.last_sent, &after.last_acked),
        (&before.last_sent, &before.last_acked),
        "the ledger keeps the last push and its ACK"
    );
    // The loop ticks after every request: that schedules the next one, a third of the TTL on.
    assert!(tick(&mut stream, t0 + Duration::from_secs(10)).is_empty());
    let next = tick(&mut stream, t0 + Duration::from_secs(20));
    assert_eq!(next.len(), 1, "answered: the next heartbeat is due");
}

#[test]
fn s15_no_heartbeat_without_the_client_feature() {
    let snap = eds(&[("a", "1", Some(30))]);
    let t0 = now();
    for features in [&[RESOURCE_IN_SOTW][..], &[SUPPORTS_TTL][..], &[]] {
        let (mut stream, _) = acked(snap.clone(), features, t0);
        assert!(stream.next_deadline().is_none(), "{features:?}");
        assert!(tick(&mut stream, t0 + Duration::from_secs(3600)).is_empty());
    }
}

#[test]
fn s15_sotw_full_state_heartbeat_lists_every_resource() {
    let cds = resources(CLUSTER, &[("a", "1", Some(15)), ("b", "1", None)]);
    let mut stream = SotwStream::new(1, snapshot(1, &[(CLUSTER, cds)]));
    let first = stream
        .on_request_decoded(asking(sotw(CLUSTER, &[], "", ""), BOTH), now())
        .remove(0);
    stream.on_request_decoded(sotw(CLUSTER, &[], &first.version_info, &first.nonce), now());
    let t0 = now();
    stream.on_tick(t0);
    let beat = tick(&mut stream, t0 + Duration::from_secs(5)).remove(0);
    let names: Vec<(String, bool)> = entries(&beat).into_iter().map(|e| (e.1, e.2)).collect();
    assert_eq!(
        names,
        [("a".into(), false), ("b".into(), false)],
        "nothing looks deleted"
    );
}

fn delta_request(subscribe: &[&str], nonce: &str) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        node: crate::test_support::node("node-1").map(|mut n| {
            n.client_features = vec![SUPPORTS_TTL.into()];
            n
        }),
        type_url: CLUSTER.into(),
        resource_names_subscribe: subscribe.iter().map(|s| s.to_string()).collect(),
        response_nonce: nonce.into(),
        ..Default::default()
    }
}

#[test]
fn s14_s15_s16_delta_carries_ttls_heartbeats_and_lets_removed_resources_expire() {
    let cds =
        |list: &[(&str, &str, Option<u64>)]| snapshot(1, &[(CLUSTER, resources(CLUSTER, list))]);
    let mut stream = DeltaStream::new(1, cds(&[("a", "1", Some(30)), ("b", "1", None)]));
    let first = stream
        .on_request_decoded(delta_request(&["a", "b"], ""), now())
        .remove(0);
    let ttls: Vec<(String, Option<i64>)> = first
        .resources
        .iter()
        .map(|r| (r.name.clone(), r.ttl.map(|d| d.seconds)))
        .collect();
    assert_eq!(ttls, [("a".into(), Some(30)), ("b".into(), None)]);
    stream.on_request_decoded(delta_request(&[], &first.nonce), now());
    let t0 = now();
    assert!(stream.on_tick(t0).is_empty());
    let beat = stream
        .on_tick(t0 + Duration::from_secs(10))
        .remove(0)
        .to_message();
    let sent: Vec<(String, String, bool)> = beat
        .resources
        .iter()
        .map(|r| (r.name.clone(), r.version.clone(), r.resource.is_some()))
        .collect();
    assert_eq!(
        sent,
        [("a".into(), "1".into(), false)],
        "the held version, no body"
    );
    assert_eq!(beat.system_version_info, first.system_version_info);
    stream.on_request_decoded(delta_request(&[], &beat.nonce), now());

    let gone = stream.on_snapshot_decoded(cds(&[("b", "2", None)]), now());
    assert_eq!(gone.len(), 1, "b changed");
    assert!(
        gone[0].removed_resources.is_empty(),
        "a TTL'd resource is left to expire"
    );
    stream.on_request_decoded(delta_request(&[], &gone[0].nonce), now());
    let t1 = t0 + Duration::from_secs(30);
    assert!(
        stream.on_tick(t1).is_empty() && stream.next_deadline().is_none(),
        "heartbeats stop"
    );
}

#[test]
fn s16_delta_heartbeats_stop_when_the_last_ttl_resource_leaves_without_a_push() {
    let cds =
        |list: &[(&str, &str, Option<u64>)]| snapshot(1, &[(CLUSTER, resources(CLUSTER, list))]);
    let mut stream = DeltaStream::new(1, cds(&[("a", "1", Some(30)), ("b", "1", None)]));
    let first = stream
        .on_request_decoded(delta_request(&[], ""), now())
        .remove(0);
    stream.on_request_decoded(delta_request(&[], &first.nonce), now());
    let t0 = now();
    assert!(stream.on_tick(t0).is_empty());
    // Only the TTL'd resource leaves: nothing is sent (it is left to expire, S16).
    let gone = stream.on_snapshot_decoded(cds(&[("b", "1", None)]), now());
    assert!(
        gone.is_empty(),
        "nothing changed that the client is told: {gone:?}"
    );
    let beats = stream.on_tick(t0 + Duration::from_secs(10));
    assert!(
        beats.is_empty(),
        "no heartbeat for a type whose client holds nothing TTL'd: {beats:?}"
    );
    assert!(stream.next_deadline().is_none(), "heartbeats stop");
}
