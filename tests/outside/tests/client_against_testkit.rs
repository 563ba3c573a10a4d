//! xdsloop-client's library, tested against xdsloop-server's testkit, from a crate that depends
//! on both with default features off (no clap, no allocator, no CLI): what another project's
//! tests of an xDS client look like.

use std::time::Duration;

use xdsloop_client::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_client::type_url::CLUSTER;
use xdsloop_client::{Client, ClientConfig, Interest, TypedEvent};
use xdsloop_server::testkit::{Resource, Resources, TestServer};

const WAIT: Duration = Duration::from_secs(10);

fn cluster(name: &str) -> Resource {
    Resource::from_message(&Cluster {
        name: name.into(),
        ..Default::default()
    })
    .expect("a cluster encodes")
}

#[tokio::test]
async fn a_typed_subscription_gets_the_served_cluster_and_acks_it() {
    let server = TestServer::builder()
        .resources([cluster("web")])
        .start()
        .await
        .unwrap();
    let config = ClientConfig::new(server.addr().to_string(), "outside-1");
    let client = Client::start(config, std::future::pending()).unwrap();
    let mut clusters = client
        .subscribe_typed::<Cluster>(Interest::Wildcard)
        .await
        .unwrap();

    let event = tokio::time::timeout(WAIT, clusters.recv()).await.unwrap();
    let Some(Ok(TypedEvent::Sotw { resources, .. })) = event else {
        panic!("expected a SotW update of clusters, got {event:?}");
    };
    let names: Vec<_> = resources.iter().map(|c| c.resource.name.as_str()).collect();
    assert_eq!(names, ["web"]);
    let ack = server
        .await_ack("outside-1", "cds", None, WAIT)
        .await
        .unwrap();
    assert_eq!(server.version("outside-1", "cds"), Some(ack.version));
    client.stop().await;
}

#[tokio::test]
async fn an_update_the_client_cannot_decode_is_nacked_and_the_last_good_one_kept() {
    let server = TestServer::builder()
        .resources([cluster("web")])
        .start()
        .await
        .unwrap();
    let config = ClientConfig::new(server.addr().to_string(), "outside-2");
    let client = Client::start(config, std::future::pending()).unwrap();
    let _clusters = client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap();
    let good = server
        .await_ack("outside-2", "cds", None, WAIT)
        .await
        .unwrap();

    let broken = Resource {
        bytes: b"\x0a\xff"[..].to_vec().into(),
        ..cluster("web")
    };
    server
        .set_resources(None, Resources::new([broken]).version("v2"))
        .unwrap();
    let nack = server.await_nack("outside-2", "cds", WAIT).await.unwrap();
    assert_eq!(nack.version, "v2");
    assert_eq!(
        client.store().borrow().version(CLUSTER),
        Some(good.version.as_str())
    );
    client.stop().await;
}
