//! One client per config source, as Envoy's subscription factory (`SubscriptionFactoryImpl`)
//! chooses them: `file`, `rest`, `grpc`, `delta-grpc`, `ads`, `ads-delta`.
//!
//! For each source the example starts what serves it (an xdsloop test server, or a file in a
//! temporary directory), makes the transport with the factory (`Transport::new`), subscribes
//! to clusters, then changes what is served and waits for the client to see the change.
//!
//! ```text
//! cargo run -p xdsloop-client --example sources            # every source in turn
//! cargo run -p xdsloop-client --example sources -- rest    # one of them
//! ```

use std::{error::Error, path::Path, time::Duration};

use xdsloop_client::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_client::{
    Client, ClientConfig, Interest, Source, Transport, TypedEvent, TypedSubscription,
};
use xdsloop_server::testkit::{Resource, TestServer};

const WAIT: Duration = Duration::from_secs(10);
const SOURCES: [&str; 6] = ["file", "rest", "grpc", "delta-grpc", "ads", "ads-delta"];

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let chosen: Vec<String> = match std::env::args().nth(1) {
        Some(one) if SOURCES.contains(&one.as_str()) => vec![one],
        Some(other) => {
            return Err(format!("unknown source {other:?}; one of {SOURCES:?}").into());
        }
        None => SOURCES.iter().map(|s| s.to_string()).collect(),
    };
    for name in chosen {
        match name.as_str() {
            "file" => file().await?,
            server_side => served(server_side).await?,
        }
        println!("{name}: ok");
    }
    Ok(())
}

/// A source backed by an xdsloop test server (gRPC, Delta gRPC, ADS, ADS Delta, REST).
async fn served(name: &str) -> Result<(), Box<dyn Error>> {
    let server = TestServer::builder()
        .resources([cluster("web")?])
        .start()
        .await?;
    let mut config = ClientConfig::new(server.addr().to_string(), format!("{name}-node"));
    config.source = Source::parse(name)?;
    // REST polls; a short delay makes the edit show quickly.
    config.refresh_delay = Duration::from_millis(100);
    let client = start(config)?;
    let mut clusters = client
        .subscribe_typed::<Cluster>(Interest::Wildcard)
        .await?;
    expect(name, &mut clusters, &["web"]).await?;

    server.set_resources(None, [cluster("web")?, cluster("api")?])?;
    expect(name, &mut clusters, &["api", "web"]).await?;
    client.stop().await;
    server.shutdown().await?;
    Ok(())
}

/// The file source: a watched file of resources, no server at all.
async fn file() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("clusters.yaml");
    write_clusters(&path, &["web"])?;
    let mut config = ClientConfig::new("", "file-node");
    config.source = Source::File(path.clone());
    let client = start(config)?;
    let mut clusters = client
        .subscribe_typed::<Cluster>(Interest::Wildcard)
        .await?;
    expect("file", &mut clusters, &["web"]).await?;

    write_clusters(&path, &["web", "api"])?;
    expect("file", &mut clusters, &["api", "web"]).await?;
    client.stop().await;
    Ok(())
}

/// The factory makes the transport the source names; the client runs on it.
fn start(config: ClientConfig) -> Result<Client, Box<dyn Error>> {
    let transport = Transport::new(&config)?;
    println!("{:?} transport made", transport.kind());
    Ok(Client::start_on(transport, config, std::future::pending())?)
}

/// Waits for an update (SotW or Delta) and checks the clusters it leaves the client with.
async fn expect(
    source: &str,
    clusters: &mut TypedSubscription<Cluster>,
    want: &[&str],
) -> Result<(), Box<dyn Error>> {
    let event = tokio::time::timeout(WAIT, clusters.recv())
        .await
        .map_err(|_| format!("{source}: no update within {WAIT:?}"))?
        .ok_or("the client stopped")??;
    let mut names: Vec<String> = match event {
        TypedEvent::Sotw { resources, .. } => resources.into_iter().map(|c| c.name).collect(),
        TypedEvent::Delta { added, .. } => added.into_iter().map(|c| c.name).collect(),
        other => return Err(format!("{source}: expected an update, got {other:?}").into()),
    };
    names.sort();
    println!("{source}: update with {names:?}");
    // Delta sends only what changed: the new cluster alone.
    let delta_change = want.len() > 1 && names == ["api"];
    match names == want || delta_change {
        true => Ok(()),
        false => Err(format!("{source}: expected {want:?}, got {names:?}").into()),
    }
}

fn cluster(name: &str) -> Result<Resource, Box<dyn Error>> {
    Ok(Resource::from_message(&Cluster {
        name: name.into(),
        ..Default::default()
    })?)
}

/// Writes the file whole and renames it into place, as an editor would.
fn write_clusters(path: &Path, names: &[&str]) -> Result<(), Box<dyn Error>> {
    let documents: Vec<String> = names
        .iter()
        .map(|name| {
            format!(
                "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: {name}\n"
            )
        })
        .collect();
    let next = path.with_extension("tmp");
    std::fs::write(&next, documents.join("---\n"))?;
    std::fs::rename(&next, path)?;
    Ok(())
}
