//! A subscription and its callbacks (Envoy's `Subscription` and `SubscriptionCallbacks`).
//!
//! Starts an xdsloop test server serving one cluster, subscribes to every cluster over ADS and
//! handles the events Envoy's callbacks receive: `onConfigUpdate` (an update, ACKed),
//! `onConfigUpdateFailed` (an update the client rejects: NACKed, the last good one kept).
//!
//! ```text
//! cargo run -p xdsloop-client --example subscription_callbacks
//! ```

use std::{error::Error, sync::Arc, time::Duration};

use xdsloop_client::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_client::type_url::CLUSTER;
use xdsloop_client::{Client, ClientConfig, Event, Failure, Interest, Subscription};
use xdsloop_server::testkit::{Resource, TestServer};

const WAIT: Duration = Duration::from_secs(10);

fn cluster(name: &str) -> Result<Resource, Box<dyn Error>> {
    Ok(Resource::from_message(&Cluster {
        name: name.into(),
        ..Default::default()
    })?)
}

/// The next event, or an error after [`WAIT`].
async fn next(subscription: &mut Subscription) -> Result<Event, Box<dyn Error>> {
    match tokio::time::timeout(WAIT, subscription.recv()).await {
        Ok(Some(event)) => Ok(event),
        Ok(None) => Err("the client stopped".into()),
        Err(_) => Err(format!("no event within {WAIT:?}").into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let server = TestServer::builder()
        .resources([cluster("web")?])
        .start()
        .await?;

    let mut config = ClientConfig::new(server.addr().to_string(), "callbacks-node");
    // The client's own check of each resource: a cluster named "forbidden" is refused, so the
    // whole response is NACKed.
    config.validator = Some(Arc::new(
        |_type_url: &str, name: &str, _bytes: &[u8]| match name {
            "forbidden" => Err("clusters may not be called forbidden".to_string()),
            _ => Ok(()),
        },
    ));
    let client = Client::start(config, std::future::pending())?;
    let mut clusters = client.subscribe(CLUSTER, Interest::Wildcard).await?;

    // onConfigUpdate: every cluster and the version, ACKed once handled.
    let Event::Sotw {
        version, resources, ..
    } = next(&mut clusters).await?
    else {
        return Err("expected an update".into());
    };
    let names: Vec<_> = resources.iter().map(|r| r.name.as_str()).collect();
    println!("onConfigUpdate: version {version}, clusters {names:?}");
    if names != ["web"] {
        return Err(format!("expected [\"web\"], got {names:?}").into());
    }
    let ack = server
        .await_ack("callbacks-node", "cds", None, WAIT)
        .await?;
    println!("server saw the ACK of version {}", ack.version);

    // onConfigUpdateFailed: the validator refuses the update; the client NACKs it.
    server.set_resources(None, [cluster("web")?, cluster("forbidden")?])?;
    let Event::Failed {
        reason: Failure::Rejected(why),
        ..
    } = next(&mut clusters).await?
    else {
        return Err("expected a rejected update".into());
    };
    println!("onConfigUpdateFailed: {why}");
    let nack = server.await_nack("callbacks-node", "cds", WAIT).await?;
    println!(
        "server saw the NACK of version {}: {}",
        nack.version, nack.message
    );
    let kept = client.store().borrow().version(CLUSTER).map(str::to_string);
    if kept.as_deref() != Some(ack.version.as_str()) {
        return Err(format!("the last good version is gone: {kept:?}").into());
    }
    println!("the client keeps version {}", ack.version);

    client.stop().await;
    server.shutdown().await?;
    Ok(())
}
