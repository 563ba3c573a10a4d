//! The per-type services (CDS, EDS, LDS, RDS, SRDS, VHDS, SDS, RTDS, ECDS) through the whole
//! server (`app::start` over real fixture files), with Envoy's generated tonic clients:
//! initial config, edits pushed as new versions, the implicit type URL, the rejected foreign
//! type, unary Fetch, the registry's transport, and a restart on the same port.

use std::net::SocketAddr;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DiscoveryRequest},
    envoy::envoy::service::{
        cluster::v3::cluster_discovery_service_client::ClusterDiscoveryServiceClient,
        endpoint::v3::endpoint_discovery_service_client::EndpointDiscoveryServiceClient,
        extension::v3::extension_config_discovery_service_client::ExtensionConfigDiscoveryServiceClient,
        listener::v3::listener_discovery_service_client::ListenerDiscoveryServiceClient,
        route::v3::{
            route_discovery_service_client::RouteDiscoveryServiceClient,
            scoped_routes_discovery_service_client::ScopedRoutesDiscoveryServiceClient,
            virtual_host_discovery_service_client::VirtualHostDiscoveryServiceClient,
        },
        runtime::v3::runtime_discovery_service_client::RuntimeDiscoveryServiceClient,
        secret::v3::secret_discovery_service_client::SecretDiscoveryServiceClient,
    },
    type_url::{
        CLUSTER, ENDPOINT, EXTENSION_CONFIG, LISTENER, ROUTE, RUNTIME, SCOPED_ROUTE, SECRET,
        VIRTUAL_HOST,
    },
};
use xdsloop_server::status::Variant;

use crate::harness::*;

/// The first fixture generation: one resource of each of CDS/EDS/LDS/RDS.
fn core_files(generation: u32) -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "clusters.json",
            vec![cluster_with_timeout("web", generation)],
        ),
        ("endpoints.json", vec![endpoints("web", 8000 + generation)]),
        (
            "listeners.json",
            vec![listener("ingress", 10000 + generation)],
        ),
        (
            "routes.json",
            vec![route("local", &format!("web-{generation}"))],
        ),
    ]
}

fn other_files() -> Vec<(&'static str, Vec<Value>)> {
    vec![(
        "others.json",
        vec![
            json!({"@type": SECRET, "name": "tls"}),
            json!({"@type": RUNTIME, "name": "rtds", "layer": {"feature": true}}),
            json!({"@type": SCOPED_ROUTE, "name": "scope", "route_configuration_name": "local",
                "key": {"fragments": [{"string_key": "a"}]}}),
            json!({"@type": VIRTUAL_HOST, "name": "local/vh", "domains": ["*"]}),
            json!({"@type": EXTENSION_CONFIG, "name": "ext"}),
        ],
    )]
}

/// Opens a SotW stream on the per-type service named like `/status` names it.
async fn sotw(addr: SocketAddr, service: &str, node: &str) -> SotwClient {
    let channel = channel(addr).await;
    // Tests send a few requests at a time.
    let (requests, rx) = mpsc::channel(16);
    let rx = ReceiverStream::new(rx);
    let opened = match service {
        "clusters" => {
            let mut client = ClusterDiscoveryServiceClient::new(channel);
            client.stream_clusters(rx).await
        }
        "endpoints" => {
            let mut client = EndpointDiscoveryServiceClient::new(channel);
            client.stream_endpoints(rx).await
        }
        "listeners" => {
            let mut client = ListenerDiscoveryServiceClient::new(channel);
            client.stream_listeners(rx).await
        }
        "routes" => {
            let mut client = RouteDiscoveryServiceClient::new(channel);
            client.stream_routes(rx).await
        }
        "scoped-routes" => {
            let mut client = ScopedRoutesDiscoveryServiceClient::new(channel);
            client.stream_scoped_routes(rx).await
        }
        "secrets" => {
            let mut client = SecretDiscoveryServiceClient::new(channel);
            client.stream_secrets(rx).await
        }
        "runtime" => {
            let mut client = RuntimeDiscoveryServiceClient::new(channel);
            client.stream_runtime(rx).await
        }
        "extension-configs" => {
            let mut client = ExtensionConfigDiscoveryServiceClient::new(channel);
            client.stream_extension_configs(rx).await
        }
        other => panic!("no SotW service {other}"),
    };
    let responses = opened.expect("stream opens").into_inner();
    SotwClient::from_parts(node, requests, responses)
}

/// Opens a Delta stream on a per-type service.
async fn delta(addr: SocketAddr, service: &str, node: &str) -> DeltaClient {
    let channel = channel(addr).await;
    let (requests, rx) = mpsc::channel(16);
    let rx = ReceiverStream::new(rx);
    let opened = match service {
        "endpoints" => {
            let mut client = EndpointDiscoveryServiceClient::new(channel);
            client.delta_endpoints(rx).await
        }
        "clusters" => {
            let mut client = ClusterDiscoveryServiceClient::new(channel);
            client.delta_clusters(rx).await
        }
        "virtual-hosts" => {
            let mut client = VirtualHostDiscoveryServiceClient::new(channel);
            client.delta_virtual_hosts(rx).await
        }
        other => panic!("no Delta service {other} in these tests"),
    };
    let responses = opened.expect("stream opens").into_inner();
    DeltaClient::from_parts(node, requests, responses)
}

/// (service, type URL, names to ask for).
const CORE: [(&str, &str, &[&str]); 4] = [
    ("clusters", CLUSTER, &[]),
    ("endpoints", ENDPOINT, &["web"]),
    ("listeners", LISTENER, &[]),
    ("routes", ROUTE, &["local"]),
];

#[tokio::test]
async fn sotw_per_type_streams_serve_their_type_and_push_each_edit() {
    let server = FixtureServer::start(&core_files(1)).await;
    let mut streams = Vec::new();
    for (i, (service, url, names)) in CORE.into_iter().enumerate() {
        let mut client = sotw(server.addr(), service, "node-1").await;
        // Half the clients omit the type URL, as singleton-API clients may.
        let asked = if i % 2 == 0 { "" } else { url };
        client.request(asked, names, "", "").await;
        let first = client.recv().await;
        assert_eq!(
            first.type_url, url,
            "{service}: the response names its type"
        );
        assert_eq!(names_in(&first).len(), 1, "{service}");
        assert_eq!(
            first.version_info,
            server.snapshot().base[url].version,
            "{service}: the same version ADS serves"
        );
        client
            .request(asked, names, &first.version_info, &first.nonce)
            .await;
        streams.push((service, url, names, client, first));
    }
    let streams_seen = registry_until(server.registry(), "four per-type streams", |s| {
        s.len() == 4 && s.iter().all(|s| s.node_id.is_some())
    })
    .await;
    let mut services: Vec<&str> = streams_seen.iter().map(|s| s.kind.service).collect();
    services.sort();
    assert_eq!(services, ["clusters", "endpoints", "listeners", "routes"]);
    assert!(streams_seen.iter().all(|s| s.kind.variant == Variant::Sotw));

    for (name, resources) in core_files(2) {
        server.edit(name, &resources).await;
    }
    for (service, url, names, client, first) in &mut streams {
        let pushed = client.recv().await;
        assert_eq!(pushed.type_url, *url);
        assert_ne!(
            pushed.version_info, first.version_info,
            "{service}: new version"
        );
        assert_eq!(pushed.version_info, server.snapshot().base[*url].version);
        assert_eq!(names_in(&pushed).len(), 1);
        client.ack(&pushed, names).await;
    }
    server.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_other_per_type_services_serve_their_type_with_the_type_url_omitted() {
    let server = FixtureServer::start(&other_files()).await;
    let services = [
        ("secrets", SECRET, "tls"),
        ("runtime", RUNTIME, "rtds"),
        ("scoped-routes", SCOPED_ROUTE, "scope"),
        ("extension-configs", EXTENSION_CONFIG, "ext"),
    ];
    for (service, url, name) in services {
        let mut client = sotw(server.addr(), service, "node-1").await;
        let first = client.subscribe("", &[]).await;
        assert_eq!(first.type_url, url, "{service}");
        assert_eq!(names_in(&first), [name], "{service}");
    }
    // VHDS has only a Delta stream.
    let mut vhds = delta(server.addr(), "virtual-hosts", "node-1").await;
    vhds.change("", &[], &[], "").await;
    let first = vhds.recv().await;
    assert_eq!(first.type_url, VIRTUAL_HOST);
    assert_eq!(delta_names(&first), ["local/vh"]);
    server.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_request_for_another_type_ends_the_per_type_stream_with_invalid_argument() {
    let server = FixtureServer::start(&core_files(1)).await;
    let mut cds = sotw(server.addr(), "clusters", "node-1").await;
    cds.request(LISTENER, &[], "", "").await;
    let status = within("the stream's error", cds.try_recv())
        .await
        .expect_err("a foreign type is rejected");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("clusters"),
        "{}",
        status.message()
    );
    assert!(status.message().contains(LISTENER), "{}", status.message());

    let mut eds = delta(server.addr(), "endpoints", "node-1").await;
    let request = DeltaDiscoveryRequest {
        type_url: CLUSTER.into(),
        ..Default::default()
    };
    eds.send(request).await;
    let status = within("the Delta stream's error", eds.try_recv())
        .await
        .expect_err("a foreign type is rejected");
    assert_eq!(status.code(), Code::InvalidArgument);

    // Other streams are unaffected (S12).
    let mut lds = sotw(server.addr(), "listeners", "node-1").await;
    assert_eq!(names_in(&lds.subscribe(LISTENER, &[]).await), ["ingress"]);
    server.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn delta_per_type_stream_sends_changes_and_shows_its_service() {
    let server = FixtureServer::start(&core_files(1)).await;
    let mut eds = delta(server.addr(), "endpoints", "node-1").await;
    eds.change("", &["web", "ghost"], &[], "").await;
    let first = eds.recv().await;
    assert_eq!(first.type_url, ENDPOINT);
    assert_eq!(delta_names(&first), ["web"]);
    assert_eq!(first.removed_resources, ["ghost"]);
    eds.ack(&first).await;
    let streams = registry_until(server.registry(), "the Delta ACK", |s| {
        s.iter().any(|s| {
            s.types
                .get(ENDPOINT)
                .is_some_and(|t| t.last_acked.is_some())
        })
    })
    .await;
    assert_eq!(streams[0].kind.service, "endpoints");
    assert_eq!(streams[0].kind.variant, Variant::Delta);
    assert_eq!(streams[0].kind.to_string(), "endpoints-delta");

    let (name, resources) = core_files(2).remove(1);
    server.edit(name, &resources).await;
    let pushed = eds.recv().await;
    assert_eq!(delta_names(&pushed), ["web"]);
    assert_ne!(pushed.resources[0].version, first.resources[0].version);
    assert!(pushed.removed_resources.is_empty());
    server.server.shutdown().await.unwrap();
}

fn fetch_request(version: &str) -> DiscoveryRequest {
    DiscoveryRequest {
        node: node("node-1"),
        version_info: version.to_string(),
        ..Default::default()
    }
}

#[tokio::test]
async fn fetch_clusters_answers_like_a_stream_and_the_current_version_is_not_modified() {
    let server = FixtureServer::start(&core_files(1)).await;
    let mut cds = ClusterDiscoveryServiceClient::new(channel(server.addr()).await);
    let fetched = cds.fetch_clusters(fetch_request("")).await.unwrap();
    let fetched = fetched.into_inner();
    assert_eq!(fetched.type_url, CLUSTER);
    assert_eq!(names_in(&fetched), ["web"]);
    let mut stream = sotw(server.addr(), "clusters", "node-1").await;
    let streamed = stream.subscribe(CLUSTER, &[]).await;
    assert_eq!(fetched.version_info, streamed.version_info);

    let current = cds
        .fetch_clusters(fetch_request(&fetched.version_info))
        .await;
    let status = current.expect_err("nothing new at the current version");
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(
        status.message().contains("not modified"),
        "{}",
        status.message()
    );

    let (name, resources) = core_files(2).remove(0);
    server.edit(name, &resources).await;
    let newer = cds
        .fetch_clusters(fetch_request(&fetched.version_info))
        .await
        .expect("a new version is answered")
        .into_inner();
    assert_ne!(newer.version_info, fetched.version_info);
    assert_eq!(names_in(&newer), ["web"]);

    let mut wrong = fetch_request("");
    wrong.type_url = LISTENER.into();
    let status = cds.fetch_clusters(wrong).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    server.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_per_type_stream_can_resume_after_the_server_restarts_on_the_same_port() {
    let server = FixtureServer::start(&core_files(1)).await;
    let mut cds = sotw(server.addr(), "clusters", "node-1").await;
    let before = cds.subscribe("", &[]).await;
    let mut server = server.restart().await;
    // The resuming request echoes the old server's nonce, which C11 says to clear: the judge
    // flags it (C4.unknown-nonce), and the server serves the stream all the same.
    server.allow_violations();
    let ended = within("the old stream to end", cds.try_recv()).await;
    assert!(
        !matches!(ended, Ok(Some(_))),
        "no response after shutdown: {ended:?}"
    );
    let mut resumed = sotw(server.addr(), "clusters", "node-1").await;
    resumed
        .request("", &[], &before.version_info, &before.nonce)
        .await;
    let after = resumed.recv().await;
    assert_eq!(names_in(&after), ["web"]);
    assert_eq!(
        after.version_info, before.version_info,
        "content-hash versions survive restarts"
    );
    server.server.shutdown().await.unwrap();
}
