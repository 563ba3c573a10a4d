//! CSDS on both ends (S17, C18): the server's Client Status Discovery Service reads its
//! ACK/NACK ledger, each xdsloop-client serves its own, and the two agree resource by resource.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use xdsloop_server::testkit::poll_until;

use tonic::{Code, transport::Channel};
use xdsloop_client::csds::{self as client_csds, CsdsServer};
use xdsloop_client::{Client, Report, Source, Verdict};
use xdsloop_proto::csds::{
    ClientConfig, ClientResourceStatus, ClientStatusRequest, ClientStatusResponse, ConfigStatus,
};
use xdsloop_proto::envoy::envoy::service::status::v3::client_status_discovery_service_client::ClientStatusDiscoveryServiceClient;
use xdsloop_proto::envoy::envoy::r#type::matcher::v3::{
    NodeMatcher, StringMatcher, string_matcher::MatchPattern,
};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};
use xdsloop_server::app::Placement;
use xdsloop_server::testkit::TestServer;

use crate::client_nack::refuse_web_cluster_while;
use crate::client_support::*;

type Csds = ClientStatusDiscoveryServiceClient<Channel>;

async fn csds(addr: SocketAddr) -> Csds {
    let channel = Channel::from_shared(format!("http://{addr}")).unwrap();
    ClientStatusDiscoveryServiceClient::new(channel.connect().await.expect("CSDS connects"))
}

async fn fetch(addr: SocketAddr, request: ClientStatusRequest) -> ClientStatusResponse {
    let mut client = csds(addr).await;
    client
        .fetch_client_status(request)
        .await
        .expect("answered")
        .into_inner()
}

/// Per (type, name): (client_status, version_info, xds_config bytes).
type Held = BTreeMap<(String, String), (ClientResourceStatus, String, Option<Vec<u8>>)>;

fn held(config: &ClientConfig) -> Held {
    let entries = config.generic_xds_configs.iter();
    entries
        .map(|e| {
            let status = ClientResourceStatus::try_from(e.client_status).unwrap();
            let bytes = e.xds_config.as_ref().map(|a| a.value.clone());
            let key = (e.type_url.clone(), e.name.clone());
            (key, (status, e.version_info.clone(), bytes))
        })
        .collect()
}

fn node_config<'a>(response: &'a ClientStatusResponse, node: &str) -> Option<&'a ClientConfig> {
    let id = |c: &&ClientConfig| c.node.as_ref().is_some_and(|n| n.id == node);
    response.config.iter().find(id)
}

/// Polls the server's CSDS (an endpoint: no event to wait on) until `node` is SYNCED on every
/// resource of the four demo types.
async fn server_synced(addr: SocketAddr, node: &str) -> ClientConfig {
    let synced = poll_until(
        "the server's CSDS to show the node SYNCED",
        WAIT,
        async || {
            let response = fetch(addr, ClientStatusRequest::default()).await;
            let config = node_config(&response, node).ok_or(format!("{response:#?}"))?;
            let types: std::collections::BTreeSet<&str> = config
                .generic_xds_configs
                .iter()
                .map(|e| e.type_url.as_str())
                .collect();
            let synced = config.generic_xds_configs.iter().all(|e| {
                e.config_status == ConfigStatus::Synced as i32
                    && e.client_status == ClientResourceStatus::Acked as i32
            });
            match types.len() == 4 && synced {
                true => Ok(config.clone()),
                false => Err(format!("{config:#?}")),
            }
        },
    );
    synced.await.unwrap_or_else(|e| panic!("{e}"))
}

async fn client_with_csds(
    served: &FixtureServer,
    node: &str,
    source: Source,
) -> (Client, CsdsServer) {
    let mut config = config(served.addr(), source.clone());
    config.node.id = node.to_string();
    let (client, _) = demo_client(config).await;
    let listen = "127.0.0.1:0".parse().unwrap();
    let server = client_csds::serve(listen, client.status()).await.unwrap();
    (client, server)
}

#[tokio::test]
async fn s17_c18_server_and_client_csds_agree_sotw_and_delta() {
    let served = FixtureServer::demo().await;
    for (node, source) in [("sotw-1", Source::Ads), ("delta-1", Source::AdsDelta)] {
        let (client, csds_server) = client_with_csds(&served, node, source).await;
        let on_server = held(&server_synced(served.addr(), node).await);
        let answer = fetch(csds_server.addr(), ClientStatusRequest::default()).await;
        assert_eq!(
            answer.config.len(),
            1,
            "{node}: one ClientConfig, about itself"
        );
        assert_eq!(answer.config[0].client_scope, client_scope(node));
        let on_client = held(&answer.config[0]);
        assert_eq!(
            on_client.len(),
            6,
            "{node}: listener, route, 2 clusters, 2 endpoints"
        );
        assert_eq!(
            on_client, on_server,
            "{node}: the client holds what the server's ledger says"
        );
        assert!(
            on_client
                .values()
                .all(|(s, _, bytes)| { *s == ClientResourceStatus::Acked && bytes.is_some() })
        );
        csds_server.stop().await;
        client.stop().await;
    }
}

fn client_scope(node: &str) -> &'static str {
    if node.starts_with("delta") {
        "ads-delta"
    } else {
        "ads"
    }
}

#[tokio::test]
async fn s17_csds_node_matchers_and_the_stream_call() {
    let served = FixtureServer::demo().await;
    let (_a, _a_csds) = client_with_csds(&served, "grpc-a", Source::Ads).await;
    let (_b, _b_csds) = client_with_csds(&served, "envoy-b", Source::Ads).await;
    server_synced(served.addr(), "grpc-a").await;
    server_synced(served.addr(), "envoy-b").await;
    let matcher = |pattern| NodeMatcher {
        node_id: Some(StringMatcher {
            match_pattern: Some(pattern),
            ignore_case: true,
        }),
        node_metadatas: vec![],
    };
    let only = |pattern| ClientStatusRequest {
        node_matchers: vec![matcher(pattern)],
        ..Default::default()
    };
    let mut stream = csds(served.addr()).await;
    let requests = [
        only(MatchPattern::Prefix("GRPC-".into())),
        only(MatchPattern::Exact("envoy-b".into())),
        only(MatchPattern::Suffix("nobody".into())),
    ];
    let answers = stream
        .stream_client_status(futures::stream::iter(requests))
        .await
        .expect("the stream opens")
        .into_inner();
    let answers: Vec<Vec<String>> = tokio::time::timeout(WAIT, async {
        use futures::StreamExt;
        let all: Vec<_> = answers.take(3).collect().await;
        all.into_iter()
            .map(|a| {
                let a = a.expect("answered");
                a.config
                    .iter()
                    .map(|c| c.node.clone().unwrap().id)
                    .collect()
            })
            .collect()
    })
    .await
    .expect("three answers");
    assert_eq!(
        answers,
        [vec!["grpc-a"], vec!["envoy-b"], Vec::<&str>::new()]
    );

    let regex = ClientStatusRequest {
        node_matchers: vec![matcher(MatchPattern::SafeRegex(Default::default()))],
        ..Default::default()
    };
    let refused = csds(served.addr()).await.fetch_client_status(regex).await;
    let refused = refused.expect_err("a regex matcher is refused, not guessed");
    assert_eq!(refused.code(), Code::Unimplemented, "{refused:?}");
}

#[tokio::test]
async fn s17_csds_is_served_where_the_admin_routes_are() {
    let dir = tempfile::tempdir().unwrap();
    xdsloop_tests::copy_dir(&demo_dir(), dir.path());
    let admin_port = Placement::Listener("127.0.0.1:0".parse().unwrap());
    let server = TestServer::builder()
        .fixtures(dir.path())
        .configure(move |config| config.admin = admin_port)
        .start()
        .await
        .unwrap();
    let running = server.running().unwrap();
    let admin = running.admin_addr.expect("an admin listener");
    let answer = csds(admin)
        .await
        .fetch_client_status(ClientStatusRequest::default())
        .await;
    assert!(answer.is_ok(), "CSDS on the admin listener: {answer:?}");
    let mut xds_port = csds(running.addr).await;
    let refused = xds_port
        .fetch_client_status(ClientStatusRequest::default())
        .await;
    let refused = refused.expect_err("no admin data on the xDS port");
    assert_eq!(refused.code(), Code::Unimplemented);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn c18_client_csds_reports_nacked_with_the_last_good_config_and_not_found() {
    let served = FixtureServer::demo().await;
    let refuse = Arc::new(AtomicBool::new(false));
    let mut config = config(served.addr(), Source::Ads);
    config.validator = Some(refuse_web_cluster_while(&refuse));
    config.not_found_timeout = Duration::from_millis(200);
    let (client, mut reports) = demo_client(config).await;
    drain(
        client
            .subscribe(ENDPOINT, xdsloop_client::Interest::names(["ghost"]))
            .await
            .unwrap(),
    );
    report(&mut reports, |r| match r {
        Report::NotFound { names, .. } if names == &["ghost"] => Some(()),
        _ => None,
    })
    .await;
    let first = store_where(&client, |s| s.holds(CLUSTER, "web")).await;
    let good = first.get(CLUSTER, "web").unwrap().clone();
    refuse.store(true, Ordering::SeqCst);
    served
        .edit_text("clusters.yaml", |t| {
            t.replacen("connect_timeout: 0.25s", "connect_timeout: 0.5s", 1)
        })
        .await;
    let rejected = report(&mut reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER && u.verdict != Verdict::Ack => Some(u.clone()),
        _ => None,
    })
    .await;

    let csds_server = client_csds::serve("127.0.0.1:0".parse().unwrap(), client.status()).await;
    let csds_server = csds_server.unwrap();
    let answer = fetch(csds_server.addr(), ClientStatusRequest::default()).await;
    let ours = held(&answer.config[0]);
    let web = &ours[&(CLUSTER.to_string(), "web".to_string())];
    assert_eq!(web.0, ClientResourceStatus::Nacked);
    assert_eq!(
        web.2.as_deref(),
        Some(&good.bytes[..]),
        "the last good config is kept"
    );
    let entry = answer.config[0]
        .generic_xds_configs
        .iter()
        .find(|e| e.type_url == CLUSTER && e.name == "web")
        .unwrap();
    let failure = entry.error_state.as_ref().expect("the NACK's error_state");
    assert_eq!(failure.version_info, rejected.version);
    assert!(
        failure.details.contains("web refused by test"),
        "{failure:?}"
    );
    let ghost = &ours[&(ENDPOINT.to_string(), "ghost".to_string())];
    assert_eq!(ghost.0, ClientResourceStatus::DoesNotExist);

    let other = ClientStatusRequest {
        node_matchers: vec![NodeMatcher {
            node_id: Some(StringMatcher {
                match_pattern: Some(MatchPattern::Exact("someone-else".into())),
                ignore_case: false,
            }),
            node_metadatas: vec![],
        }],
        ..Default::default()
    };
    assert!(fetch(csds_server.addr(), other).await.config.is_empty());
    client.stop().await;
}
