//! The status document built from the real (sans-I/O) stream machines' reports.

use crate::protocol::machine::StreamMachine;
use crate::protocol::now::tests::now;
use std::{path::PathBuf, sync::Arc, time::SystemTime};

use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DiscoveryResponse},
    type_url::{CLUSTER, ENDPOINT},
};

use super::*;
use crate::{
    admin::registry::{Registry, StreamEntry, StreamKind},
    protocol::delta::DeltaStream,
    protocol::sotw::SotwStream,
    test_support::{error, names, node, snapshot, sotw},
};

mod reload;
mod scenario;

fn reload_ok(snapshot: &Snapshot) -> ReloadStatus {
    ReloadStatus::ok(snapshot)
}

fn document(registry: &Registry, snapshot: &Snapshot, node: Option<&str>) -> StatusDocument {
    let reload = reload_ok(snapshot);
    let (open, closed) = (registry.streams(), registry.recently_closed());
    let now = SystemTime::now();
    let inputs = Inputs {
        snapshot,
        reload: &reload,
        open: &open,
        closed: &closed,
        now,
    };
    build(inputs, node)
}

fn state_of(doc: &StatusDocument, type_url: &str) -> SyncState {
    let types = doc.streams[0].types.iter();
    types
        .filter(|t| t.type_url == type_url)
        .map(|t| t.state)
        .next()
        .unwrap()
}

/// A SotW machine whose reports go to `registry`, as the stream loop does it.
struct Sotw {
    machine: SotwStream,
    entry: StreamEntry,
}

impl Sotw {
    fn open(registry: &Registry, snapshot: Arc<Snapshot>) -> Self {
        let entry = registry.open(StreamKind::ADS_SOTW, "127.0.0.1:5000".parse().ok(), None);
        let machine = SotwStream::new(entry.id(), snapshot);
        Self { machine, entry }
    }

    fn request(
        &mut self,
        request: xdsloop_proto::discovery::DiscoveryRequest,
    ) -> Vec<DiscoveryResponse> {
        let out = self.machine.on_request_decoded(request, now());
        self.report();
        out
    }

    fn push(&mut self, snapshot: Arc<Snapshot>) -> Vec<DiscoveryResponse> {
        let out = self.machine.on_snapshot_decoded(snapshot, now());
        self.report();
        out
    }

    fn report(&mut self) {
        if let Some(node) = self.machine.node_id() {
            self.entry.set_node(node);
        }
        self.entry.update(self.machine.take_status());
    }
}

#[test]
fn sotw_pending_synced_stale_nacked_follow_the_wire_and_the_snapshot() {
    let registry = Registry::new();
    let v1 = snapshot(1, &[(CLUSTER, &[("a", "1"), ("b", "1")])]);
    let mut stream = Sotw::open(&registry, v1.clone());
    let first = stream.request(sotw(CLUSTER, &[], "", "")).remove(0);
    assert_eq!(
        state_of(&document(&registry, &v1, None), CLUSTER),
        SyncState::Pending
    );

    stream.request(sotw(CLUSTER, &[], &first.version_info, &first.nonce));
    let doc = document(&registry, &v1, None);
    assert_eq!(state_of(&doc, CLUSTER), SyncState::Synced);
    let cds = &doc.streams[0].types[0];
    assert_eq!(cds.last_acked.as_ref().unwrap().version, first.version_info);
    assert_eq!(cds.snapshot_version, first.version_info);
    assert!(cds.wildcard);

    let v2 = snapshot(2, &[(CLUSTER, &[("a", "2"), ("b", "1")])]);
    assert_eq!(
        state_of(&document(&registry, &v2, None), CLUSTER),
        SyncState::Stale,
        "ACKed v1, the snapshot has moved on, the push is not out yet"
    );
    let second = stream.push(v2.clone()).remove(0);
    assert_eq!(
        state_of(&document(&registry, &v2, None), CLUSTER),
        SyncState::Pending
    );

    let mut nack = sotw(CLUSTER, &[], &first.version_info, &second.nonce);
    nack.error_detail = error("cluster a: bad timeout");
    assert!(stream.request(nack).is_empty(), "a NACK is not answered");
    let doc = document(&registry, &v2, None);
    let cds = &doc.streams[0].types[0];
    assert_eq!(cds.state, SyncState::Nacked);
    let rejected = cds.last_nack.as_ref().unwrap();
    assert_eq!(rejected.message, "cluster a: bad timeout");
    assert_eq!(rejected.version, second.version_info);
    assert_eq!(cds.last_acked.as_ref().unwrap().version, first.version_info);
    assert_eq!(doc.totals.nacked, 1);
}

#[test]
fn status_synced_only_when_current_version_acked() {
    let registry = Registry::new();
    let v1 = snapshot(1, &[(ENDPOINT, &[("a", "1"), ("b", "1")])]);
    let mut stream = Sotw::open(&registry, v1.clone());
    let first = stream.request(sotw(ENDPOINT, &["a"], "", "")).remove(0);
    stream.request(sotw(ENDPOINT, &["a"], &first.version_info, &first.nonce));
    assert_eq!(
        state_of(&document(&registry, &v1, None), ENDPOINT),
        SyncState::Synced
    );
    // Another resource changed: the type's version moved, but what this client asked for did
    // not, so nothing is owed to it and it is still in sync.
    let other = snapshot(2, &[(ENDPOINT, &[("a", "1"), ("b", "2")])]);
    assert_eq!(
        state_of(&document(&registry, &other, None), ENDPOINT),
        SyncState::Synced
    );
    assert!(stream.push(other).is_empty());
    // Its own resource changed: it is behind until that is pushed and ACKed.
    let v2 = snapshot(3, &[(ENDPOINT, &[("a", "2"), ("b", "2")])]);
    assert_eq!(
        state_of(&document(&registry, &v2, None), ENDPOINT),
        SyncState::Stale
    );
    let pushed = stream.push(v2.clone()).remove(0);
    assert_eq!(pushed.version_info, v2.base[ENDPOINT].version);
    assert_eq!(
        state_of(&document(&registry, &v2, None), ENDPOINT),
        SyncState::Pending
    );
    stream.request(sotw(ENDPOINT, &["a"], &pushed.version_info, &pushed.nonce));
    let doc = document(&registry, &v2, None);
    let eds = &doc.streams[0].types[0];
    assert_eq!(eds.state, SyncState::Synced);
    assert_eq!(eds.names.to_vec(), names(&["a"]));
    assert_eq!(
        eds.snapshot_version,
        eds.last_acked.as_ref().unwrap().version
    );
}

#[test]
fn status_unsubscribed_sotw_type_is_not_stale() {
    let registry = Registry::new();
    let v1 = snapshot(1, &[(ENDPOINT, &[("a", "1")])]);
    let mut stream = Sotw::open(&registry, v1.clone());
    let first = stream.request(sotw(ENDPOINT, &["a"], "", "")).remove(0);
    stream.request(sotw(ENDPOINT, &["a"], &first.version_info, &first.nonce));
    // The last cluster went: Envoy and gRPC then ask for no endpoints at all.
    let none = sotw(ENDPOINT, &[], &first.version_info, &first.nonce);
    assert!(stream.request(none).is_empty());
    let v2 = snapshot(2, &[(ENDPOINT, &[("a", "2")])]);
    assert!(
        stream.push(v2.clone()).is_empty(),
        "nothing is pushed to it"
    );
    let doc = document(&registry, &v2, None);
    assert_eq!(state_of(&doc, ENDPOINT), SyncState::Synced);
    assert_eq!(doc.totals.stale, 0);
}

fn delta(type_url: &str, subscribe: &[&str], nonce: &str) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        node: node("node-d"),
        type_url: type_url.to_string(),
        resource_names_subscribe: names(subscribe),
        response_nonce: nonce.to_string(),
        ..Default::default()
    }
}

#[test]
fn delta_states_compare_what_the_client_holds() {
    let registry = Registry::new();
    let v1 = snapshot(1, &[(ENDPOINT, &[("a", "1"), ("b", "1")])]);
    let entry = registry.open(StreamKind::ADS_DELTA, None, None);
    let mut machine = DeltaStream::new(entry.id(), v1.clone());
    let first = machine
        .on_request_decoded(delta(ENDPOINT, &["a", "missing"], ""), now())
        .remove(0);
    entry.set_node("node-d");
    entry.update(machine.take_status());
    assert_eq!(
        state_of(&document(&registry, &v1, None), ENDPOINT),
        SyncState::Pending
    );
    machine.on_request_decoded(delta(ENDPOINT, &[], &first.nonce), now());
    entry.update(machine.take_status());
    assert_eq!(
        state_of(&document(&registry, &v1, None), ENDPOINT),
        SyncState::Synced
    );

    let other_changed = snapshot(2, &[(ENDPOINT, &[("a", "1"), ("b", "2")])]);
    assert!(
        machine
            .on_snapshot_decoded(other_changed.clone(), now())
            .is_empty()
    );
    entry.update(machine.take_status());
    let doc = document(&registry, &other_changed, None);
    assert_eq!(state_of(&doc, ENDPOINT), SyncState::Synced);
    assert_eq!(doc.streams[0].transport, "ads-delta");

    let mine_changed = snapshot(3, &[(ENDPOINT, &[("a", "2"), ("b", "2")])]);
    assert_eq!(
        state_of(&document(&registry, &mine_changed, None), ENDPOINT),
        SyncState::Stale
    );
    let pushed = machine
        .on_snapshot_decoded(mine_changed.clone(), now())
        .remove(0);
    entry.update(machine.take_status());
    let mut nack = delta(ENDPOINT, &[], &pushed.nonce);
    nack.error_detail = error("endpoint a: no port");
    machine.on_request_decoded(nack, now());
    entry.update(machine.take_status());
    assert_eq!(
        state_of(&document(&registry, &mine_changed, None), ENDPOINT),
        SyncState::Nacked
    );
}

#[test]
fn node_filter_and_recently_closed_streams() {
    let registry = Registry::new();
    let v1 = snapshot(4, &[(CLUSTER, &[("a", "1")]), (ENDPOINT, &[("a", "1")])]);
    let mut kept = Sotw::open(&registry, v1.clone());
    kept.request(sotw(CLUSTER, &[], "", ""));
    kept.request(sotw(ENDPOINT, &["a"], "", ""));
    let other = registry.open(StreamKind::ADS_SOTW, None, None);
    other.set_node("node-2");
    let gone = registry.open(StreamKind::ADS_DELTA, None, None);
    gone.set_node("node-1");
    drop(gone);

    let doc = document(&registry, &v1, Some("node-1"));
    assert_eq!(doc.streams.len(), 1);
    assert_eq!(doc.streams[0].node_id.as_deref(), Some("node-1"));
    let order: Vec<&str> = doc.streams[0]
        .types
        .iter()
        .map(|t| t.alias.as_str())
        .collect();
    assert_eq!(order, ["cds", "eds"], "make-before-break order");
    assert_eq!(doc.totals.open_streams, 1);
    assert_eq!(doc.totals.pending, 2);
    assert_eq!(doc.recently_closed.len(), 1);
    assert!(doc.recently_closed[0].disconnected_at.is_some());
    assert_eq!(doc.snapshot.generation, 4);
    assert_eq!(doc.snapshot.resources, 2);
    assert_eq!(document(&registry, &v1, None).streams.len(), 2);
}

/// A document with one SotW stream whose CDS response was NACKed: every optional part set.
fn nacked_document() -> StatusDocument {
    let registry = Registry::new();
    let v1 = snapshot(1, &[(CLUSTER, &[("a", "1")])]);
    let mut stream = Sotw::open(&registry, v1.clone());
    let first = stream.request(sotw(CLUSTER, &[], "", "")).remove(0);
    let mut nack = sotw(CLUSTER, &[], "", &first.nonce);
    nack.error_detail = error("no");
    stream.request(nack);
    document(&registry, &v1, None)
}

/// An object's keys, sorted.
fn keys(value: &serde_json::Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

#[test]
fn json_field_names_are_the_documented_ones() {
    let json = serde_json::to_value(nacked_document()).unwrap();
    let top = [
        "counters",
        "generated_at",
        "limits",
        "recently_closed",
        "recorder",
        "reload",
        "scenario",
        "schema",
        "snapshot",
        "streams",
        "tls",
        "totals",
        "violations",
    ];
    assert_eq!(keys(&json), top);
    let stream = &json["streams"][0];
    let stream_keys = [
        "connected_since",
        "id",
        "identity",
        "node_id",
        "peer",
        "recent",
        "transport",
        "types",
        "violations",
    ];
    assert_eq!(keys(stream), stream_keys);
    let violations = ["by_check", "count", "last"];
    assert_eq!(keys(&stream["violations"]), violations);
    assert_eq!(stream["peer"], "127.0.0.1:5000");
    let cds = &stream["types"][0];
    let type_keys = [
        "heartbeats",
        "last_acked",
        "last_fault",
        "last_nack",
        "last_sent",
        "names",
        "snapshot_version",
        "state",
        "type",
        "type_url",
        "wildcard",
    ];
    assert_eq!(keys(cds), type_keys);
    assert_eq!(cds["state"], "NACKED");
    assert_eq!(
        keys(&cds["last_nack"]),
        ["at", "message", "nonce", "version"]
    );
    assert_eq!(
        keys(&cds["last_sent"]),
        ["at", "fault", "nonce", "resources", "version"]
    );
    let at = cds["last_sent"]["at"].as_str().unwrap();
    assert!(at.ends_with('Z'), "RFC 3339 UTC: {at}");
}

#[test]
fn json_round_trips() {
    let doc = nacked_document();
    let json = serde_json::to_value(&doc).unwrap();
    let back: StatusDocument = serde_json::from_value(json).unwrap();
    // Times are kept to the millisecond; everything else survives exactly.
    let nack = back.streams[0].types[0].last_nack.as_ref().unwrap();
    assert_eq!(nack.message, "no");
    assert_eq!(back.totals, doc.totals);
    assert_eq!(back.snapshot, doc.snapshot);
    assert_eq!(back.reload.watcher, doc.reload.watcher);
}
