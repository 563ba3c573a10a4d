//! Callbacks that decide ACK or NACK (Envoy's `SubscriptionCallbacks::onConfigUpdate` returning
//! a failure).
//!
//! Starts an xdsloop test server serving one cluster and subscribes to clusters with typed
//! callbacks that apply them the way a cluster manager would: a cluster without a
//! `connect_timeout` cannot be used, so `on_config_update` rejects the whole update. The client
//! then NACKs that version with the callbacks' message, keeps the last good clusters, and ACKs
//! the next good push.
//!
//! ```text
//! cargo run -p xdsloop-client --example rejecting_callbacks
//! ```

use std::{error::Error, time::Duration};

use xdsloop_client::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_client::envoy::google::protobuf::Duration as ProtoDuration;
use xdsloop_client::type_url::CLUSTER;
use xdsloop_client::{
    Client, ClientConfig, Interest, Rejection, TypedEvent, TypedSubscriptionCallbacks,
};
use xdsloop_server::testkit::{Resource, Resources, TestServer};

const WAIT: Duration = Duration::from_secs(10);

fn cluster(name: &str, connect_timeout: Option<u64>) -> Result<Resource, Box<dyn Error>> {
    Ok(Resource::from_message(&Cluster {
        name: name.into(),
        connect_timeout: connect_timeout.map(|seconds| ProtoDuration {
            seconds: seconds as i64,
            nanos: 0,
        }),
        ..Default::default()
    })?)
}

/// What a cluster manager would do with CDS: use every cluster of an update, or none of them.
struct ClusterManager;

impl TypedSubscriptionCallbacks<Cluster> for ClusterManager {
    /// `onConfigUpdate`: `Ok` applies the update (ACK), `Err` refuses all of it (NACK).
    fn on_config_update(&mut self, update: &TypedEvent<Cluster>) -> Result<(), Rejection> {
        let TypedEvent::Sotw { version, resources } = update else {
            return Ok(());
        };
        for cluster in resources {
            if cluster.resource.connect_timeout.is_none() {
                println!(
                    "  callbacks: version {version}: cluster {} has no connect_timeout: reject",
                    cluster.name
                );
                return Err(Rejection::new(format!(
                    "cluster {}: no connect_timeout",
                    cluster.name
                )));
            }
        }
        let names: Vec<&str> = resources.iter().map(|c| c.name.as_str()).collect();
        println!("  callbacks: version {version}: using {names:?}");
        Ok(())
    }

    /// `onConfigUpdateFailed`: told of the rejection (ours, or the client's own checks).
    fn on_config_update_failed(&mut self, event: &TypedEvent<Cluster>) {
        println!("  callbacks: update failed: {event:?}");
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let server = TestServer::builder()
        .resources(Resources::new([cluster("web", Some(1))?]).version("v1"))
        .start()
        .await?;
    let config = ClientConfig::new(server.addr().to_string(), "manager");
    let client = Client::start(config, std::future::pending())?;
    let _clusters = client
        .subscribe_typed_with::<Cluster>(Interest::Wildcard, ClusterManager)
        .await?;

    let ack = server.await_ack("manager", "cds", Some("v1"), WAIT).await?;
    println!("server: ACK of version {}", ack.version);

    println!("server: pushes v2, adding cluster api without a connect_timeout");
    let broken = [cluster("web", Some(1))?, cluster("api", None)?];
    server.set_resources(None, Resources::new(broken).version("v2"))?;
    let nack = server.await_nack("manager", "cds", WAIT).await?;
    println!(
        "server: NACK of version {}: {:?}",
        nack.version, nack.message
    );
    let kept = client.store().borrow().version(CLUSTER).map(str::to_string);
    println!(
        "client: still holds version {}",
        kept.as_deref().unwrap_or("-")
    );
    if kept.as_deref() != Some("v1") || nack.message != "cluster api: no connect_timeout" {
        return Err("the rejected update should be NACKed and v1 kept".into());
    }

    println!("server: pushes v3, api with a connect_timeout");
    let fixed = [cluster("web", Some(1))?, cluster("api", Some(2))?];
    server.set_resources(None, Resources::new(fixed).version("v3"))?;
    let ack = server.await_ack("manager", "cds", Some("v3"), WAIT).await?;
    println!("server: ACK of version {}", ack.version);

    client.stop().await;
    Ok(())
}
