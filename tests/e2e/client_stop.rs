//! Stopping a client always completes: `Client::stop` returns and dropping the client closes
//! its stream, even while a subscription nobody reads has a full event queue (the session is
//! then waiting to hand it the next update).

use std::time::Duration;
use xdsloop_server::testkit::poll_until;

use xdsloop_client::{Client, ClientConfig, Interest};
use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::testkit::{Resources, TestServer};

use crate::testkit::cluster;

const WAIT: Duration = Duration::from_secs(15);
/// How long an ACK may take before the client is taken to be stuck on its full queue.
const STUCK: Duration = Duration::from_secs(2);

/// A server and a client whose one cluster subscription is never read, pushed new versions
/// until the client stops ACKing them: its session is then blocked on the full queue.
async fn client_stuck_on_an_unread_subscription()
-> (TestServer, Client, xdsloop_client::Subscription) {
    let server = TestServer::builder()
        .resources([cluster("web", "v0")])
        .start()
        .await
        .unwrap();
    let client = Client::start(
        ClientConfig::new(server.addr().to_string(), "n1"),
        std::future::pending(),
    )
    .unwrap();
    let unread = client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap();
    server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    for i in 1..=64 {
        let snapshot = server
            .set_resources(None, Resources::new([cluster("web", &format!("v{i}"))]))
            .unwrap();
        let version = snapshot.get("n1", CLUSTER).unwrap().version.clone();
        if server
            .await_ack("n1", "cds", Some(&version), STUCK)
            .await
            .is_err()
        {
            return (server, client, unread);
        }
    }
    panic!("the client ACKed 64 updates that nobody read: its event queue never filled");
}

#[tokio::test]
async fn stop_returns_while_a_subscription_nobody_reads_is_full() {
    let (server, client, _unread) = client_stuck_on_an_unread_subscription().await;
    tokio::time::timeout(WAIT, client.stop())
        .await
        .expect("Client::stop returned while the session waited on a full subscription");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn dropping_a_client_stuck_on_a_full_subscription_closes_its_stream() {
    let (server, client, _unread) = client_stuck_on_an_unread_subscription().await;
    assert_eq!(server.registry().streams().len(), 1);
    drop(client);
    let closed = poll_until("the dropped client's stream to close", WAIT, async || {
        server.registry().streams().is_empty()
    });
    closed.await.unwrap_or_else(|e| panic!("{e}"));
    server.shutdown().await.unwrap();
}
