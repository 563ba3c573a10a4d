//! A typed subscription (Envoy's `SubscriptionBase<T>`): updates arrive as decoded
//! `Cluster` messages, not bytes.
//!
//! Starts an xdsloop test server with two clusters, watches them by name, then changes one and
//! removes the other on the server and prints what the subscription sees.
//!
//! ```text
//! cargo run -p xdsloop-client --example typed_subscription
//! ```

use std::{error::Error, time::Duration};

use xdsloop_client::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_client::envoy::google::protobuf::Duration as ProtoDuration;
use xdsloop_client::{Client, ClientConfig, Interest, TypedEvent, TypedSubscription};
use xdsloop_server::testkit::{Resource, TestServer};

const WAIT: Duration = Duration::from_secs(10);

fn cluster(name: &str, connect_timeout_secs: i64) -> Result<Resource, Box<dyn Error>> {
    Ok(Resource::from_message(&Cluster {
        name: name.into(),
        connect_timeout: Some(ProtoDuration {
            seconds: connect_timeout_secs,
            nanos: 0,
        }),
        ..Default::default()
    })?)
}

/// The next update's clusters as (name, connect timeout in seconds).
async fn next(
    clusters: &mut TypedSubscription<Cluster>,
) -> Result<Vec<(String, i64)>, Box<dyn Error>> {
    let event = tokio::time::timeout(WAIT, clusters.recv())
        .await
        .map_err(|_| format!("no update within {WAIT:?}"))?
        .ok_or("the client stopped")??;
    let TypedEvent::Sotw { version, resources } = event else {
        return Err(format!("expected a SotW update, got {event:?}").into());
    };
    let seen: Vec<_> = resources
        .into_iter()
        .map(|c| {
            let timeout = c.resource.connect_timeout.map_or(0, |t| t.seconds);
            (c.name, timeout)
        })
        .collect();
    println!("version {version}: {seen:?}");
    Ok(seen)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let server = TestServer::builder()
        .resources([cluster("web", 1)?, cluster("db", 2)?])
        .start()
        .await?;
    let client = Client::start(
        ClientConfig::new(server.addr().to_string(), "typed-node"),
        std::future::pending(),
    )?;
    let mut clusters = client
        .subscribe_typed::<Cluster>(Interest::names(["db", "web"]))
        .await?;

    let first = next(&mut clusters).await?;
    expect(&first, &[("db", 2), ("web", 1)])?;

    // The server edits `web` and drops `db`: the next update holds what is left, decoded.
    server.set_resources(None, [cluster("web", 5)?])?;
    let second = next(&mut clusters).await?;
    expect(&second, &[("web", 5)])?;

    client.stop().await;
    server.shutdown().await?;
    Ok(())
}

fn expect(seen: &[(String, i64)], want: &[(&str, i64)]) -> Result<(), Box<dyn Error>> {
    let want: Vec<_> = want.iter().map(|(n, t)| (n.to_string(), *t)).collect();
    match seen == want {
        true => Ok(()),
        false => Err(format!("expected {want:?}, got {seen:?}").into()),
    }
}
