//! A test of an xDS client written with xdsloop's testkit: the server in-process, resources
//! given in code, and awaits for what the client did (ACK, NACK, the requests it sent).
//!
//! The checks here are the ones a test of any client would make; as an example it runs them in
//! `main` and exits non-zero on the first that fails. In a crate's tests the same lines go in
//! `#[tokio::test]` functions, with `xdsloop-server = { default-features = false, features =
//! ["testkit"] }` as a dev-dependency.
//!
//! ```text
//! cargo run -p xdsloop-client --example testkit_test
//! ```

use std::{error::Error, time::Duration};

use xdsloop_client::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_client::type_url::CLUSTER;
use xdsloop_client::{Client, ClientConfig, Interest};
use xdsloop_server::testkit::{Resource, Resources, TestServer};

const WAIT: Duration = Duration::from_secs(10);

fn web() -> Result<Resource, Box<dyn Error>> {
    Ok(Resource::from_message(&Cluster {
        name: "web".into(),
        ..Default::default()
    })?)
}

/// The client ACKs what it applied, and its first request names the node (C1).
async fn acks_the_first_response() -> Result<(), Box<dyn Error>> {
    let server = TestServer::builder().resources([web()?]).start().await?;
    let client = Client::start(
        ClientConfig::new(server.addr().to_string(), "n1"),
        std::future::pending(),
    )?;
    let _clusters = client.subscribe(CLUSTER, Interest::Wildcard).await?;
    let ack = server.await_ack("n1", "cds", None, WAIT).await?;
    let first = &server.requests("n1")[0].facts;
    check(first.has_node, "the first request carries the node")?;
    check(
        server.version("n1", "cds").as_deref() == Some(ack.version.as_str()),
        "the ACK names the version served",
    )?;
    client.stop().await;
    Ok(())
}

/// An update the client cannot decode is NACKed with a reason; the last good version stays.
async fn nacks_what_it_cannot_decode() -> Result<(), Box<dyn Error>> {
    let server = TestServer::builder().resources([web()?]).start().await?;
    let client = Client::start(
        ClientConfig::new(server.addr().to_string(), "n2"),
        std::future::pending(),
    )?;
    let _clusters = client.subscribe(CLUSTER, Interest::Wildcard).await?;
    let good = server.await_ack("n2", "cds", None, WAIT).await?;
    let broken = Resource {
        bytes: b"\x0a\xff"[..].to_vec().into(),
        ..web()?
    };
    server.set_resources(None, Resources::new([broken]).version("v2"))?;
    let nack = server.await_nack("n2", "cds", WAIT).await?;
    check(nack.version == "v2", "the NACK names the rejected version")?;
    check(!nack.message.is_empty(), "the NACK says why")?;
    let kept = client.store().borrow().version(CLUSTER).map(str::to_string);
    check(
        kept.as_deref() == Some(good.version.as_str()),
        "the last good version stays",
    )?;
    client.stop().await;
    Ok(())
}

/// After the server restarts on the same port, the client resubscribes saying what it holds
/// (C11).
async fn resubscribes_after_a_restart() -> Result<(), Box<dyn Error>> {
    let server = TestServer::builder().resources([web()?]).start().await?;
    let mut config = ClientConfig::new(server.addr().to_string(), "n3");
    config.backoff.initial = Duration::from_millis(50);
    let client = Client::start(config, std::future::pending())?;
    let _clusters = client.subscribe(CLUSTER, Interest::Wildcard).await?;
    let good = server.await_ack("n3", "cds", None, WAIT).await?;

    let addr = server.addr();
    server.shutdown().await?;
    let server = TestServer::builder()
        .listen(addr)
        .resources([web()?])
        .start()
        .await?;
    server
        .await_ack("n3", "cds", Some(&good.version), WAIT)
        .await?;
    let resubscribe = &server.requests("n3")[0].facts;
    check(
        *resubscribe.version == *good.version,
        "the resubscription names the version held",
    )?;
    client.stop().await;
    Ok(())
}

fn check(ok: bool, what: &str) -> Result<(), Box<dyn Error>> {
    match ok {
        true => Ok(()),
        false => Err(format!("failed: {what}").into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    acks_the_first_response().await?;
    println!("ok: acks the first response");
    nacks_what_it_cannot_decode().await?;
    println!("ok: nacks what it cannot decode");
    resubscribes_after_a_restart().await?;
    println!("ok: resubscribes after a restart");
    Ok(())
}
