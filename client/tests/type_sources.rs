//! One client, a config source per type (Envoy gives each type its own `ConfigSource`):
//! clusters over ADS and endpoints over REST polling, against the real server over loopback.

use std::time::Duration;

use xdsloop_client::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_client::envoy::envoy::config::endpoint::v3::ClusterLoadAssignment;
use xdsloop_client::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};
use xdsloop_client::{
    Client, ClientConfig, Interest, Report, Source, SourceKind, Transport, Verdict,
};
use xdsloop_server::testkit::{Chain, Resource, Resources, TestServer};

const WAIT: Duration = Duration::from_secs(10);

fn resources(version: &str, names: &[&str]) -> Resources {
    let mut set = Vec::new();
    for name in names {
        let cluster = Cluster {
            name: name.to_string(),
            ..Default::default()
        };
        let endpoints = ClusterLoadAssignment {
            cluster_name: name.to_string(),
            ..Default::default()
        };
        set.push(Resource::from_message(&cluster).unwrap());
        set.push(Resource::from_message(&endpoints).unwrap());
    }
    Resources::new(set).version(version)
}

/// Waits for an applied update of `type_url` and says which source it came from.
async fn update_source(
    reports: &mut tokio::sync::broadcast::Receiver<Report>,
    type_url: &str,
) -> SourceKind {
    loop {
        let report = tokio::time::timeout(WAIT, reports.recv())
            .await
            .unwrap()
            .unwrap();
        if let Report::Update(update) = report
            && update.type_url == type_url
            && update.verdict == Verdict::Ack
        {
            return update.source;
        }
    }
}

#[tokio::test]
async fn clusters_over_ads_and_endpoints_over_rest_in_one_client() {
    let server = TestServer::builder()
        .resources(resources("v1", &["web"]))
        .start()
        .await
        .unwrap();
    let mut config = ClientConfig::new(server.addr().to_string(), "mixed");
    config.type_sources.insert("eds".into(), Source::Rest);
    config.refresh_delay = Duration::from_millis(100);
    let client = Client::start(config, std::future::pending()).unwrap();
    let mut reports = client.reports();
    let _clusters = client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap();
    let _endpoints = client
        .subscribe(ENDPOINT, Interest::names(["web"]))
        .await
        .unwrap();

    // CDS on the ADS stream: the server sees its ACK. EDS by REST: polls, no stream.
    server.await_ack("mixed", "cds", None, WAIT).await.unwrap();
    let (mut cds, mut eds) = (None, None);
    while cds.is_none() || eds.is_none() {
        let report = tokio::time::timeout(WAIT, reports.recv())
            .await
            .unwrap()
            .unwrap();
        if let Report::Update(update) = report {
            match update.type_url.as_str() {
                CLUSTER => cds = Some(update.source),
                ENDPOINT => eds = Some(update.source),
                _ => {}
            }
        }
    }
    assert_eq!((cds, eds), (Some(SourceKind::Ads), Some(SourceKind::Rest)));
    let streams: Vec<String> = server
        .requests("mixed")
        .iter()
        .map(|r| r.facts.type_url.to_string())
        .collect();
    assert!(
        streams.iter().all(|t| t == CLUSTER),
        "only CDS on the stream: {streams:?}"
    );

    // One store holds both; an edit reaches each type through its own source.
    let store = client.store().borrow().clone();
    assert!(store.holds(CLUSTER, "web") && store.holds(ENDPOINT, "web"));
    server
        .set_resources(None, resources("v2", &["web", "api"]))
        .unwrap();
    let _more = client
        .subscribe(ENDPOINT, Interest::names(["api"]))
        .await
        .unwrap();
    assert_eq!(
        update_source(&mut reports, ENDPOINT).await,
        SourceKind::Rest
    );
    let mut store = client.store();
    let both = store.wait_for(|s| s.holds(CLUSTER, "api") && s.holds(ENDPOINT, "api"));
    tokio::time::timeout(WAIT, both).await.unwrap().unwrap();
    let status = client.status().client_config(false).await.unwrap();
    assert_eq!(status.client_scope, "ads,rest");
    tokio::time::timeout(WAIT, client.stop()).await.unwrap();
}

#[tokio::test]
async fn endpoints_over_rest_stop_only_cds_following_and_listeners_still_drive_routes() {
    let web = Chain::new("web").endpoint(([127, 0, 0, 1], 8080).into());
    let server = TestServer::builder()
        .resources(Resources::new(web.resources()).version("v1"))
        .start()
        .await
        .unwrap();
    let mut config = ClientConfig::new(server.addr().to_string(), "split");
    config.type_sources.insert("eds".into(), Source::Rest);
    config.refresh_delay = Duration::from_millis(100);
    config.follow_deps = true;
    let client = Client::start(config, std::future::pending()).unwrap();
    // Nobody subscribes routes: the listener's RDS name must bring them (LDS → RDS on ADS).
    let _listeners = client
        .subscribe(LISTENER, Interest::Wildcard)
        .await
        .unwrap();
    let _clusters = client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap();
    let _endpoints = client
        .subscribe(ENDPOINT, Interest::names(["web"]))
        .await
        .unwrap();

    let mut store = client.store();
    let all = store.wait_for(|s| {
        s.holds(LISTENER, "web") && s.holds(ROUTE, "web") && s.holds(ENDPOINT, "web")
    });
    tokio::time::timeout(WAIT, all)
        .await
        .expect("the route configuration is followed from the listener")
        .unwrap();
    let on_stream: Vec<String> = server
        .requests("split")
        .iter()
        .map(|r| r.facts.type_url.to_string())
        .collect();
    assert!(
        on_stream.iter().any(|t| t == ROUTE),
        "RDS on ADS: {on_stream:?}"
    );
    assert!(
        on_stream.iter().all(|t| t != ENDPOINT),
        "EDS is not followed onto the ADS stream: {on_stream:?}"
    );
    tokio::time::timeout(WAIT, client.stop()).await.unwrap();
}

#[tokio::test]
async fn start_on_one_transport_refuses_types_with_a_source_of_their_own() {
    let mut config = ClientConfig::new("127.0.0.1:18000", "one");
    config.type_sources.insert("eds".into(), Source::Rest);
    let transport = Transport::new(&config).unwrap();
    let Err(error) = Client::start_on(transport, config, std::future::pending()) else {
        panic!("start_on ran a client that would ignore type_sources");
    };
    let message = error.to_string();
    assert!(
        message.contains("type_sources: eds") && message.contains("Client::start"),
        "{message}"
    );
}
