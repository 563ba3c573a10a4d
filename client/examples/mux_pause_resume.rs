//! Several watches on one mux, with pause and resume (Envoy's `GrpcMux`: `addWatch`,
//! `pause`, `resume`).
//!
//! Two watches of clusters and one of listeners share one ADS stream; the mux merges their
//! interest into one subscription per type. While clusters are paused, both cluster watches
//! widen their interest; on resume one request carries both changes, where without the pause
//! each change would have gone out on its own.
//!
//! ```text
//! cargo run -p xdsloop-client --example mux_pause_resume
//! ```

use std::{collections::BTreeSet, error::Error, time::Duration};

use xdsloop_client::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_client::envoy::envoy::config::listener::v3::Listener;
use xdsloop_client::type_url::{CLUSTER, LISTENER};
use xdsloop_client::{Client, ClientConfig, Event, Interest, Subscription};
use xdsloop_server::events::Names;
use xdsloop_server::testkit::{Resource, TestServer};

const WAIT: Duration = Duration::from_secs(10);
const NODE: &str = "mux-node";

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut resources = Vec::new();
    for name in ["a", "b", "c", "d"] {
        resources.push(Resource::from_message(&Cluster {
            name: name.into(),
            ..Default::default()
        })?);
    }
    resources.push(Resource::from_message(&Listener {
        name: "ingress".into(),
        ..Default::default()
    })?);
    let server = TestServer::builder().resources(resources).start().await?;
    let client = Client::start(
        ClientConfig::new(server.addr().to_string(), NODE),
        std::future::pending(),
    )?;

    // Three watches, registered together, on one stream.
    let mut watches = client
        .subscribe_all([
            (CLUSTER.to_string(), Interest::names(["a"])),
            (CLUSTER.to_string(), Interest::names(["b"])),
            (LISTENER.to_string(), Interest::Wildcard),
        ])
        .await?;
    for watch in &mut watches {
        let names = update(watch).await?;
        println!(
            "watch {} of {}: {names:?}",
            watch.id(),
            short(watch.type_url())
        );
    }
    let ack = server.await_ack(NODE, "cds", None, WAIT).await?;

    // Pause clusters, widen both cluster watches, resume: one request asks for all four.
    let mark = server.mark();
    let paused = client.pause(CLUSTER).await?;
    watches[0].set_interest(Interest::names(["a", "c"])).await?;
    watches[1].set_interest(Interest::names(["b", "d"])).await?;
    paused.resume().await?;
    println!(
        "watch {}: {:?}",
        watches[0].id(),
        update(&mut watches[0]).await?
    );
    println!(
        "watch {}: {:?}",
        watches[1].id(),
        update(&mut watches[1]).await?
    );
    server
        .since(mark)
        .await_ack(NODE, "cds", None, WAIT)
        .await?;

    let cds: Vec<_> = server
        .requests(NODE)
        .iter()
        .filter(|r| &*r.facts.type_url == CLUSTER)
        .map(|r| (r.stream, sotw_names(&r.facts.names)))
        .collect();
    for (stream, names) in &cds {
        println!("CDS request on stream {stream}: {names:?}");
    }
    if cds.iter().any(|(stream, _)| *stream != ack.stream) {
        return Err("the watches did not share one stream".into());
    }
    let sets: Vec<_> = cds.iter().map(|(_, names)| names.clone()).collect();
    let all: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    let three: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    if !sets.contains(&all) {
        return Err("no request asked for all four clusters".into());
    }
    if sets.contains(&three) {
        return Err("the first change went out on its own: the pause held nothing".into());
    }
    println!("one request carried both changes");

    client.stop().await;
    server.shutdown().await?;
    Ok(())
}

/// The names of the next update a watch gets.
async fn update(watch: &mut Subscription) -> Result<Vec<String>, Box<dyn Error>> {
    let event = tokio::time::timeout(WAIT, watch.recv())
        .await
        .map_err(|_| format!("no update within {WAIT:?}"))?
        .ok_or("the client stopped")?;
    match event {
        Event::Sotw { resources, .. } => Ok(resources.into_iter().map(|r| r.name).collect()),
        other => Err(format!("expected an update, got {other:?}").into()),
    }
}

fn sotw_names(names: &Names) -> BTreeSet<String> {
    match names {
        Names::Sotw(listed) => listed.items.iter().map(|n| n.to_string()).collect(),
        _ => BTreeSet::new(),
    }
}

fn short(type_url: &str) -> &str {
    type_url.rsplit('.').next().unwrap_or(type_url)
}
