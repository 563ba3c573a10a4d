//! The fleet is a second implementation of the client protocol (see the module docs); these
//! tests hold it to the library's answers. Each case is one response, given encoded to a fleet
//! node and decoded to the library's mux, both subscribed the same way (parent type wildcard,
//! dependents followed): they must ACK or NACK alike and follow the same dependent names.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use prost::{Message, Name};
use xdsloop_proto::discovery::{
    Any, DeltaDiscoveryResponse, DiscoveryResponse, Node as WireNode, WireResource,
};
use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_proto::envoy::envoy::config::cluster::v3::cluster::{
    ClusterDiscoveryType, CustomClusterType, DiscoveryType, EdsClusterConfig,
};
use xdsloop_proto::envoy::envoy::config::endpoint::v3::ClusterLoadAssignment;
use xdsloop_proto::envoy::envoy::config::listener::v3::{
    ApiListener, Filter, FilterChain, Listener, filter::ConfigType,
};
use xdsloop_proto::envoy::envoy::config::route::v3::RouteConfiguration;
use xdsloop_proto::envoy::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, Rds, http_connection_manager::RouteSpecifier,
};
use xdsloop_proto::type_url::{self, CLUSTER, ENDPOINT, LISTENER, ROUTE};

use super::inspect::Kind;
use super::node::{Node, Rules};
use crate::config::Variant;
use crate::core::deps;
use crate::core::mux::{Mux, MuxConfig};
use crate::core::request::Outgoing;
use crate::core::watch_map::Interest;

/// What one implementation answered to a response.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    ack: bool,
    /// The dependent type's names after the response, if its subscription changed.
    dependents: Option<BTreeSet<String>>,
}

/// A library mux and a fleet node, subscribed alike.
struct Both {
    mux: Mux,
    node: Node,
}

impl Both {
    /// Subscribed to `parent` by wildcard, following its dependents (`child`).
    fn new(mode: Variant, parent: &str, child: &str) -> Self {
        let mut config = MuxConfig::new(mode, WireNode::default());
        config.follow_deps = true;
        let mut mux = Mux::new(config);
        mux.add_watch(1, parent, Interest::Wildcard, Instant::now());
        mux.on_stream_start(Instant::now());
        mux.take_output();
        let rules = Rules {
            mode,
            types: vec![parent.to_string(), child.to_string()],
            nack: Vec::new(),
            names: Default::default(),
        };
        let mut node = Node::new("n1".into(), Arc::new(rules));
        node.on_stream_start();
        Self { mux, node }
    }

    /// Both answers (library, fleet) to a SotW response of `type_url` holding `resources`.
    fn sotw(&mut self, type_url: &str, resources: Vec<Any>) -> (Answer, Answer) {
        let response = DiscoveryResponse {
            version_info: "v1".into(),
            resources,
            type_url: type_url.into(),
            nonce: "1".into(),
            ..Default::default()
        };
        let encoded = Bytes::from(response.encode_to_vec());
        let (now, at) = (Instant::now(), SystemTime::now());
        self.mux.on_sotw_response(response, now, at);
        (self.client_answer(type_url), self.fleet_answer(encoded))
    }

    /// Both answers to a Delta response of `type_url`: `(name, resource)` added, `removed`.
    fn delta(&mut self, type_url: &str, added: Vec<(&str, Any)>, removed: &[&str]) -> [Answer; 2] {
        let resources = added.into_iter().map(|(name, any)| WireResource {
            name: name.into(),
            version: "1".into(),
            resource: Some(any),
            ..Default::default()
        });
        let response = DeltaDiscoveryResponse {
            system_version_info: "v1".into(),
            resources: resources.collect(),
            type_url: type_url.into(),
            removed_resources: removed.iter().map(|n| n.to_string()).collect(),
            nonce: "1".into(),
            ..Default::default()
        };
        let encoded = Bytes::from(response.encode_to_vec());
        let (now, at) = (Instant::now(), SystemTime::now());
        self.mux.on_delta_response(response, now, at);
        [self.client_answer(type_url), self.fleet_answer(encoded)]
    }

    fn client_answer(&mut self, type_url: &str) -> Answer {
        let requests = self.mux.take_output().requests;
        let reply = requests.iter().find(|r| r.type_url() == type_url);
        let child = requests.iter().find(|r| r.type_url() != type_url);
        Answer {
            ack: reply.expect("one ACK or NACK").error().is_none(),
            dependents: child.map(names),
        }
    }

    fn fleet_answer(&mut self, encoded: Bytes) -> Answer {
        let handled = self.node.on_response(encoded).expect("decodable");
        let outcome = handled.outcome.expect("a subscribed type");
        let child = handled.requests.get(1).map(|r| r.to_outgoing());
        Answer {
            ack: outcome.verdict.is_ok(),
            dependents: child.as_ref().map(names),
        }
    }
}

/// The names a request asks for: SotW's full list, Delta's first subscription.
fn names(request: &Outgoing) -> BTreeSet<String> {
    let names = match request {
        Outgoing::Sotw(r) => &r.resource_names,
        Outgoing::Delta(r) => &r.resource_names_subscribe,
    };
    names.iter().cloned().collect()
}

fn any(type_url: &str, value: Vec<u8>) -> Any {
    Any {
        type_url: type_url.into(),
        value,
    }
}

fn cluster(name: &str, kind: Option<ClusterDiscoveryType>, service: &str) -> Any {
    let cluster = Cluster {
        name: name.into(),
        cluster_discovery_type: kind,
        eds_cluster_config: Some(EdsClusterConfig {
            service_name: service.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    any(CLUSTER, cluster.encode_to_vec())
}

fn of_type(t: DiscoveryType) -> Option<ClusterDiscoveryType> {
    Some(ClusterDiscoveryType::Type(t as i32))
}

/// Every way a cluster can (or cannot) name an EDS resource.
fn clusters() -> Vec<Any> {
    let custom = Some(ClusterDiscoveryType::ClusterType(CustomClusterType {
        name: "custom".into(),
        ..Default::default()
    }));
    // `type` and `cluster_type` are one oneof: the one last on the wire wins.
    let custom_last = {
        let mut bytes = cluster("custom-last", of_type(DiscoveryType::Eds), "").value;
        bytes.extend(cluster("custom-last", custom.clone(), "").value);
        any(CLUSTER, bytes)
    };
    let eds_last = {
        let mut bytes = cluster("eds-last", custom.clone(), "").value;
        bytes.extend(cluster("eds-last", of_type(DiscoveryType::Eds), "").value);
        any(CLUSTER, bytes)
    };
    vec![
        cluster("web", of_type(DiscoveryType::Eds), ""),
        cluster("api", of_type(DiscoveryType::Eds), "api-svc"),
        cluster("dns", of_type(DiscoveryType::StrictDns), "not-followed"),
        cluster("static", None, ""),
        cluster("custom", custom, ""),
        custom_last,
        eds_last,
    ]
}

fn hcm(route: Option<&str>) -> Any {
    let route_specifier = match route {
        Some(name) => RouteSpecifier::Rds(Rds {
            route_config_name: name.into(),
            ..Default::default()
        }),
        None => RouteSpecifier::RouteConfig(RouteConfiguration::default()),
    };
    let manager = HttpConnectionManager {
        route_specifier: Some(route_specifier),
        ..Default::default()
    };
    any(&HttpConnectionManager::type_url(), manager.encode_to_vec())
}

fn chain(config: Any) -> FilterChain {
    FilterChain {
        filters: vec![Filter {
            name: "filter".into(),
            config_type: Some(ConfigType::TypedConfig(config)),
        }],
        ..Default::default()
    }
}

/// Every place a listener can (or cannot) name an RDS resource.
fn listeners() -> Vec<Any> {
    let listener = |name: &str, build: &dyn Fn(&mut Listener)| {
        let mut listener = Listener {
            name: name.into(),
            ..Default::default()
        };
        build(&mut listener);
        any(LISTENER, listener.encode_to_vec())
    };
    let tcp_proxy = any("type.googleapis.com/envoy.tcp_proxy.v3.TcpProxy", vec![]);
    vec![
        listener("chains", &|l| {
            l.filter_chains = vec![chain(hcm(Some("r1")))]
        }),
        listener("default", &|l| {
            l.default_filter_chain = Some(chain(hcm(Some("r2"))))
        }),
        listener("api", &|l| {
            l.api_listener = Some(ApiListener {
                api_listener: Some(hcm(Some("r3"))),
            })
        }),
        listener("inline", &|l| l.filter_chains = vec![chain(hcm(None))]),
        listener("empty", &|l| l.filter_chains = vec![chain(hcm(Some("")))]),
        listener("tcp", &|l| l.filter_chains = vec![chain(tcp_proxy.clone())]),
    ]
}

/// The name in a cluster's or listener's body (Delta sends it beside the body too).
fn name_of(resource: &Any) -> String {
    let bytes = resource.value.as_slice();
    match resource.type_url.as_str() {
        CLUSTER => Cluster::decode(bytes).unwrap().name,
        LISTENER => Listener::decode(bytes).unwrap().name,
        other => panic!("no name for {other}"),
    }
}

fn set(names: &[&str]) -> Option<BTreeSet<String>> {
    Some(names.iter().map(|n| n.to_string()).collect())
}

#[test]
fn c12_fleet_and_client_follow_the_same_dependent_names() {
    for mode in [Variant::Sotw, Variant::Delta] {
        let cases = [
            (
                CLUSTER,
                ENDPOINT,
                clusters(),
                set(&["api-svc", "eds-last", "web"]),
            ),
            (LISTENER, ROUTE, listeners(), set(&["r1", "r2", "r3"])),
        ];
        for (parent, child, resources, expected) in cases {
            let mut both = Both::new(mode, parent, child);
            let (client, fleet) = match mode {
                Variant::Sotw => both.sotw(parent, resources),
                Variant::Delta => {
                    let names: Vec<String> = resources.iter().map(name_of).collect();
                    let added = names.iter().map(String::as_str).zip(resources).collect();
                    both.delta(parent, added, &[]).into()
                }
            };
            assert_eq!(client, fleet, "{mode:?} {parent}");
            assert_eq!(client.dependents, expected, "{mode:?} {parent}");
        }
    }
}

#[test]
fn c6_fleet_and_client_accept_and_reject_the_same_sotw_responses() {
    let eds = || cluster("web", of_type(DiscoveryType::Eds), "");
    let cases: Vec<(&str, Vec<Any>, bool)> = vec![
        ("valid", vec![eds(), cluster("api", None, "")], true),
        (
            "another type inside",
            vec![eds(), any(LISTENER, vec![])],
            false,
        ),
        ("duplicate names", vec![eds(), eds()], false),
        (
            "undecodable",
            vec![any(CLUSTER, vec![0x0a, 0x05, b'a'])],
            false,
        ),
        ("no name", vec![cluster("", None, "")], false),
        ("empty", vec![], true),
    ];
    for (case, resources, ack) in cases {
        let mut both = Both::new(Variant::Sotw, CLUSTER, ENDPOINT);
        let (client, fleet) = both.sotw(CLUSTER, resources);
        assert_eq!(client, fleet, "{case}");
        assert_eq!(client.ack, ack, "{case}");
    }
}

#[test]
fn c6_fleet_and_client_accept_and_reject_the_same_delta_responses() {
    let eds = || cluster("web", of_type(DiscoveryType::Eds), "");
    /// (case, added, removed, accepted)
    type Case<'a> = (&'a str, Vec<(&'a str, Any)>, Vec<&'a str>, bool);
    let cases: Vec<Case<'_>> = vec![
        ("valid", vec![("web", eds())], vec!["gone"], true),
        (
            "added and removed",
            vec![("web", eds())],
            vec!["web"],
            false,
        ),
        (
            "another type inside",
            vec![("l", any(LISTENER, vec![]))],
            vec![],
            false,
        ),
        (
            "duplicate names",
            vec![("web", eds()), ("web", eds())],
            vec![],
            false,
        ),
        (
            "undecodable",
            vec![("x", any(CLUSTER, vec![0x0a, 0x05]))],
            vec![],
            false,
        ),
    ];
    for (case, added, removed, ack) in cases {
        let mut both = Both::new(Variant::Delta, CLUSTER, ENDPOINT);
        let [client, fleet] = both.delta(CLUSTER, added, &removed);
        assert_eq!(client, fleet, "{case}");
        assert_eq!(client.ack, ack, "{case}");
    }
}

#[test]
fn the_fleet_reads_only_what_it_follows_by_design() {
    // An endpoint resource whose name is fine but whose `endpoints` field (2) is not a
    // message: the library decodes every resource (C6) and NACKs; the fleet reads names and
    // dependents only, so it ACKs. Documented in the fleet's module docs.
    let mut both = Both::new(Variant::Sotw, CLUSTER, ENDPOINT);
    both.sotw(
        CLUSTER,
        vec![cluster("web", of_type(DiscoveryType::Eds), "")],
    );
    let mut bad = ClusterLoadAssignment {
        cluster_name: "web".into(),
        ..Default::default()
    }
    .encode_to_vec();
    bad.extend([0x12, 0x02, 0xff, 0xff]);
    let (client, fleet) = both.sotw(ENDPOINT, vec![any(ENDPOINT, bad)]);
    assert!(!client.ack && fleet.ack, "{client:?} {fleet:?}");
}

#[test]
fn every_type_drives_the_same_dependent_type_in_both() {
    let custom = "type.googleapis.com/my.Custom";
    for url in type_url::ORDERED
        .iter()
        .map(|(_, url)| *url)
        .chain([custom])
    {
        let fleet = Kind::of(url).child();
        let library = deps::child_of(url).map(Kind::of);
        assert_eq!(fleet, library, "{url}");
    }
}

#[test]
fn c12_a_fleet_refuses_a_dependent_type_without_its_parent() {
    let with = |types: &[&str]| {
        let mut config = super::FleetConfig::new("127.0.0.1:1", 1);
        config.types = types.iter().map(|t| t.to_string()).collect();
        config.rules().map(|_| ()).map_err(|e| e.to_string())
    };
    assert!(with(&[CLUSTER, ENDPOINT]).is_ok());
    assert!(with(&[LISTENER, ROUTE, CLUSTER]).is_ok());
    let error = with(&[ENDPOINT]).unwrap_err();
    assert!(error.contains("eds needs cds"), "{error}");
    let error = with(&[CLUSTER, ROUTE]).unwrap_err();
    assert!(error.contains("rds needs lds"), "{error}");
}
