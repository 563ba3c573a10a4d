//! The CSDS table of `docs/status.md`, one ledger state at a time, driven by the real stream
//! machines.

use crate::protocol::machine::StreamMachine;
use crate::protocol::now::tests::now;
use std::{sync::Arc, time::SystemTime};

use xdsloop_proto::{
    csds::{ClientResourceStatus as Client, ConfigStatus as Config},
    discovery::DeltaDiscoveryRequest,
    envoy::envoy::r#type::matcher::v3::{NodeMatcher, StringMatcher, string_matcher::MatchPattern},
    type_url::{CLUSTER, ENDPOINT},
};

use super::*;
use crate::{
    admin::registry::StreamKind,
    protocol::{delta::DeltaStream, sotw::SotwStream},
    test_support::{error, node, snapshot, sotw},
};

fn stream(id: u64, node: &str, kind: StreamKind, types: Vec<TypeStatus>) -> StreamStatus {
    StreamStatus {
        id,
        peer: None,
        identity: None,
        node_id: Some(node.to_string()),
        kind,
        connected_since: SystemTime::now(),
        types: types.into_iter().map(|t| (t.type_url.clone(), t)).collect(),
        recent: Default::default(),
        faults_fired: 0,
        violations: Default::default(),
    }
}

/// (name, config_status, client_status, version_info, holds xds_config) of every entry.
fn rows(response: &ClientStatusResponse) -> Vec<(String, Config, Client, String, bool)> {
    let entries = response.config.iter().flat_map(|c| &c.generic_xds_configs);
    entries
        .map(|e| {
            let config = Config::try_from(e.config_status).unwrap();
            let client = Client::try_from(e.client_status).unwrap();
            let holds = e.xds_config.is_some();
            (
                e.name.clone(),
                config,
                client,
                e.version_info.clone(),
                holds,
            )
        })
        .collect()
}

fn all() -> ClientStatusRequest {
    ClientStatusRequest::default()
}

struct Sotw {
    machine: SotwStream,
    statuses: BTreeMap<String, TypeStatus>,
}

impl Sotw {
    fn new(snapshot: Arc<Snapshot>) -> Self {
        Self {
            machine: SotwStream::new(1, snapshot),
            statuses: BTreeMap::new(),
        }
    }

    fn take(&mut self) {
        for status in self.machine.take_status() {
            self.statuses.insert(status.type_url.clone(), status);
        }
    }

    fn ask(&mut self, request: xdsloop_proto::discovery::DiscoveryRequest) -> String {
        let out = self.machine.on_request_decoded(request, now());
        self.take();
        out.last().map(|r| r.nonce.clone()).unwrap_or_default()
    }

    fn csds(&self, snapshot: &Snapshot) -> ClientStatusResponse {
        let types = self.statuses.values().cloned().collect();
        let streams = [stream(1, "node-1", StreamKind::ADS_SOTW, types)];
        build(snapshot, &streams, &all()).unwrap()
    }
}

#[test]
fn s17_csds_maps_each_sotw_ledger_state() {
    let v1 = snapshot(1, &[(ENDPOINT, &[("a", "1")])]);
    let version1 = v1.base[ENDPOINT].version.clone();
    let mut s = Sotw::new(v1.clone());
    let nonce = s.ask(sotw(ENDPOINT, &["a", "ghost"], "", ""));
    let pending = rows(&s.csds(&v1));
    assert_eq!(
        pending,
        [
            (
                "a".into(),
                Config::Stale,
                Client::Requested,
                String::new(),
                false
            ),
            (
                "ghost".into(),
                Config::NotSent,
                Client::DoesNotExist,
                String::new(),
                false
            ),
        ]
    );
    s.ask(sotw(ENDPOINT, &["a", "ghost"], &version1, &nonce));
    let synced = s.csds(&v1);
    let row = (
        "a".into(),
        Config::Synced,
        Client::Acked,
        version1.clone(),
        true,
    );
    assert_eq!(rows(&synced)[0], row);
    let entry = &synced.config[0].generic_xds_configs[0];
    let any = entry.xds_config.as_ref().unwrap();
    assert_eq!(any.value, v1.base[ENDPOINT].resources["a"].bytes.to_vec());
    assert!(entry.last_updated.is_some());

    // The fixtures moved on and the push has not gone out: the client still holds v1.
    let v2 = snapshot(2, &[(ENDPOINT, &[("a", "2")])]);
    let row = (
        "a".into(),
        Config::NotSent,
        Client::Acked,
        version1.clone(),
        false,
    );
    assert_eq!(rows(&s.csds(&v2))[0], row);
    let pushed = s.machine.on_snapshot_decoded(v2.clone(), now());
    s.take();
    let row = (
        "a".into(),
        Config::Stale,
        Client::Acked,
        version1.clone(),
        false,
    );
    assert_eq!(
        rows(&s.csds(&v2))[0],
        row,
        "sent, unanswered: v1 still held"
    );

    let mut nack = sotw(ENDPOINT, &["a", "ghost"], &version1, &pushed[0].nonce);
    nack.error_detail = error("bad endpoint");
    s.ask(nack);
    let nacked = s.csds(&v2);
    let row = ("a".into(), Config::Error, Client::Nacked, version1, false);
    assert_eq!(rows(&nacked)[0], row);
    let failure = nacked.config[0].generic_xds_configs[0]
        .error_state
        .clone()
        .unwrap();
    assert_eq!(failure.details, "bad endpoint");
    assert_eq!(failure.version_info, v2.base[ENDPOINT].version);
    let rejected = failure.failed_configuration.unwrap();
    assert_eq!(
        rejected.value,
        v2.base[ENDPOINT].resources["a"].bytes.to_vec()
    );
}

#[test]
fn s17_csds_wildcard_lists_every_served_resource_and_contents_can_be_left_out() {
    let snap = snapshot(1, &[(CLUSTER, &[("a", "1"), ("b", "1")])]);
    let mut s = Sotw::new(snap.clone());
    let nonce = s.ask(sotw(CLUSTER, &[], "", ""));
    let version = snap.base[CLUSTER].version.clone();
    s.ask(sotw(CLUSTER, &[], &version, &nonce));
    let names: Vec<String> = rows(&s.csds(&snap)).into_iter().map(|r| r.0).collect();
    assert_eq!(names, ["a", "b"]);
    let types = s.statuses.values().cloned().collect();
    let streams = [stream(1, "node-1", StreamKind::ADS_SOTW, types)];
    let request = ClientStatusRequest {
        exclude_resource_contents: true,
        ..Default::default()
    };
    let bare = build(&snap, &streams, &request).unwrap();
    assert!(rows(&bare).iter().all(|r| r.1 == Config::Synced && !r.4));
}

#[test]
fn s17_csds_delta_reports_each_resource_version() {
    let snap = snapshot(1, &[(CLUSTER, &[("a", "h-a"), ("b", "h-b")])]);
    let mut machine = DeltaStream::new(1, snap.clone());
    let subscribe = DeltaDiscoveryRequest {
        node: node("node-1"),
        type_url: CLUSTER.into(),
        resource_names_subscribe: vec!["a".into(), "b".into()],
        ..Default::default()
    };
    let nonce = machine.on_request_decoded(subscribe, now())[0]
        .nonce
        .clone();
    let ack = DeltaDiscoveryRequest {
        type_url: CLUSTER.into(),
        response_nonce: nonce,
        ..Default::default()
    };
    machine.on_request_decoded(ack, now());
    let streams = [stream(
        1,
        "node-1",
        StreamKind::ADS_DELTA,
        machine.take_status(),
    )];
    let versions: Vec<(String, String)> = rows(&build(&snap, &streams, &all()).unwrap())
        .into_iter()
        .map(|r| (r.0, r.3))
        .collect();
    assert_eq!(
        versions,
        [("a".into(), "h-a".into()), ("b".into(), "h-b".into())]
    );
}

#[test]
fn s17_csds_one_config_per_node_filtered_by_node_matchers() {
    let snap = snapshot(1, &[(CLUSTER, &[("a", "1")])]);
    let mut one = Sotw::new(snap.clone());
    one.ask(sotw(CLUSTER, &["a"], "", ""));
    let cds = one.statuses[CLUSTER].clone();
    let mut unnamed = stream(9, "x", StreamKind::ADS_SOTW, vec![]);
    unnamed.node_id = None;
    let streams = [
        stream(1, "grpc-1", StreamKind::ADS_SOTW, vec![cds.clone()]),
        stream(2, "envoy-1", StreamKind::ADS_SOTW, vec![cds.clone()]),
        stream(3, "grpc-1", StreamKind::ADS_DELTA, vec![cds]),
        unnamed,
    ];
    let nodes = |r: &ClientStatusResponse| -> Vec<(String, usize)> {
        let node = |c: &ClientConfig| c.node.as_ref().unwrap().id.clone();
        r.config
            .iter()
            .map(|c| (node(c), c.generic_xds_configs.len()))
            .collect()
    };
    let everyone = build(&snap, &streams, &all()).unwrap();
    assert_eq!(
        nodes(&everyone),
        [("envoy-1".into(), 1), ("grpc-1".into(), 2)]
    );
    let grpc = ClientStatusRequest {
        node_matchers: vec![NodeMatcher {
            node_id: Some(StringMatcher {
                match_pattern: Some(MatchPattern::Prefix("grpc-".into())),
                ignore_case: false,
            }),
            node_metadatas: vec![],
        }],
        ..Default::default()
    };
    assert_eq!(
        nodes(&build(&snap, &streams, &grpc).unwrap()),
        [("grpc-1".into(), 2)]
    );
}
