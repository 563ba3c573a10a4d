//! The fleet's minimal readers against the full Envoy encodings.

use super::*;
use xdsloop_proto::envoy::envoy::config::cluster::v3 as full_cluster;
use xdsloop_proto::envoy::envoy::config::listener::v3 as full_listener;
use xdsloop_proto::envoy::envoy::extensions::filters::network::http_connection_manager::v3 as hcm;
use xdsloop_proto::envoy::google::protobuf::Any;

fn full_eds_cluster(name: &str, service: &str) -> full_cluster::Cluster {
    use full_cluster::cluster::{ClusterDiscoveryType, DiscoveryType, EdsClusterConfig};
    full_cluster::Cluster {
        name: name.into(),
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
        eds_cluster_config: Some(EdsClusterConfig {
            service_name: service.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn sotw_view_reads_the_real_encoding_in_place_and_rejects_a_truncated_one() {
    use xdsloop_proto::discovery::DiscoveryResponse;
    use xdsloop_proto::envoy::envoy::config::core::v3::ControlPlane;
    let full = DiscoveryResponse {
        version_info: "v1".into(),
        resources: vec![
            Any {
                type_url: "t".into(),
                value: b"one".to_vec(),
            },
            Any {
                type_url: "t".into(),
                value: full_eds_cluster("web", "").encode_to_vec(),
            },
        ],
        canary: true,
        type_url: "t".into(),
        nonce: "n-1".into(),
        control_plane: Some(ControlPlane {
            identifier: "cp".into(),
        }),
        ..Default::default()
    };
    let bytes = full.encode_to_vec();
    let view = SotwView::parse(&bytes).unwrap();
    assert_eq!(
        (view.version_info, view.type_url, view.nonce),
        ("v1", "t", "n-1")
    );
    let values: Vec<&[u8]> = view.resources.iter().map(|r| r.value).collect();
    assert_eq!(values, [b"one".as_slice(), &full.resources[1].value]);
    assert_eq!(name_in_place(view.resources[1].value).unwrap(), b"web");
    assert!(SotwView::parse(&bytes[..bytes.len() - 1]).is_err());
    // Parts split between fields parse in place; a split inside a field is refused.
    // version_info (2 + 2 bytes), then the first resource (2 + its length).
    let first = 4 + 2 + full.resources[0].encoded_len();
    let (a, b) = bytes.split_at(first);
    let parts = SotwView::parse_parts([a, b]).unwrap();
    assert_eq!((parts.resources.len(), parts.nonce), (2, "n-1"));
    let (a, b) = bytes.split_at(first + 3);
    assert!(SotwView::parse_parts([a, b]).is_err());
}

#[test]
fn cluster_ref_reads_the_eds_name_from_the_real_encoding() {
    let eds = |name, service| {
        let bytes = full_eds_cluster(name, service).encode_to_vec();
        let cluster = ClusterRef::parse(&bytes).unwrap();
        (
            cluster.name.to_string(),
            cluster.eds_name.map(str::to_string),
        )
    };
    assert_eq!(eds("web", ""), ("web".into(), Some("web".into())));
    assert_eq!(
        eds("web", "web-svc"),
        ("web".into(), Some("web-svc".into()))
    );
    let static_cluster = full_cluster::Cluster {
        name: "static".into(),
        ..Default::default()
    };
    let bytes = static_cluster.encode_to_vec();
    let parsed = ClusterRef::parse(&bytes).unwrap();
    assert_eq!((parsed.name, parsed.eds_name), ("static", None));
    // A custom cluster type after `type: EDS` replaces it (one oneof).
    let mut custom = full_eds_cluster("c", "").encode_to_vec();
    let custom_type = full_cluster::Cluster {
        cluster_discovery_type: Some(full_cluster::cluster::ClusterDiscoveryType::ClusterType(
            Default::default(),
        )),
        ..Default::default()
    };
    custom.extend(custom_type.encode_to_vec());
    assert_eq!(ClusterRef::parse(&custom).unwrap().eds_name, None);
    let truncated = &bytes[..bytes.len() - 1];
    assert!(ClusterRef::parse(truncated).is_err());
    assert!(ClusterRef::parse(&[0x0a, 0x01, 0xff]).is_err()); // name not UTF-8
}

#[test]
fn minimal_listener_finds_rds_names_in_chains_and_api_listener() {
    let manager = |route: &str| Any {
        type_url: HCM_TYPE_URL.into(),
        value: hcm::HttpConnectionManager {
            route_specifier: Some(hcm::http_connection_manager::RouteSpecifier::Rds(
                hcm::Rds {
                    route_config_name: route.into(),
                    ..Default::default()
                },
            )),
            ..Default::default()
        }
        .encode_to_vec(),
    };
    let chain = |route: &str| full_listener::FilterChain {
        filters: vec![full_listener::Filter {
            name: "hcm".into(),
            config_type: Some(full_listener::filter::ConfigType::TypedConfig(manager(
                route,
            ))),
        }],
        ..Default::default()
    };
    let listener = full_listener::Listener {
        name: "ingress".into(),
        filter_chains: vec![chain("a")],
        default_filter_chain: Some(chain("b")),
        api_listener: Some(full_listener::ApiListener {
            api_listener: Some(manager("c")),
        }),
        ..Default::default()
    };
    let minimal = Listener::decode(listener.encode_to_vec().as_slice()).unwrap();
    assert_eq!(minimal.name, "ingress");
    assert_eq!(minimal.route_names(), vec!["a", "b", "c"]);
}
