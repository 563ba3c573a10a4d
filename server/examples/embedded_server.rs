//! `xdsloop-server` inside another program: [`app::start`] serves a fixture directory exactly
//! as the binary does (hot reload, ADS, the admin routes), and the program follows what it
//! serves through [`app::Running`]. Here: serve one cluster, edit its file, and see the new
//! generation served, from the snapshot channel and from `/status` over HTTP.
//!
//! `cargo run -p xdsloop-server --example embedded_server` exits non-zero if the edit is not
//! served.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

use xdsloop_server::app::{self, Config};

const CLUSTER: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

fn cluster(timeout: &str) -> String {
    format!("\"@type\": {CLUSTER}\nname: web\nconnect_timeout: {timeout}\n")
}

/// `GET /status` with nothing but a TCP socket: the admin routes speak plain HTTP/1.1.
fn status(addr: SocketAddr) -> std::io::Result<serde_json::Value> {
    let mut stream = TcpStream::connect(addr)?;
    write!(
        stream,
        "GET /status HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).map_err(std::io::Error::other)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fixtures = tempfile::tempdir()?;
    let file = fixtures.path().join("clusters.yaml");
    std::fs::write(&file, cluster("1s"))?;

    let mut config = Config::new(fixtures.path());
    config.listen = "127.0.0.1:0".parse()?;
    let mut running = app::start(config).await?;
    let first = running.snapshots.borrow().clone();
    println!(
        "serving {} on {} (generation {})",
        file.display(),
        running.addr,
        first.generation
    );

    std::fs::write(&file, cluster("2s"))?;
    let changed = tokio::time::timeout(
        Duration::from_secs(10),
        running
            .snapshots
            .wait_for(|s| s.generation > first.generation),
    );
    let generation = changed.await??.generation;
    println!("the edit is served: generation {generation}");

    let addr = running.addr;
    let doc = tokio::task::spawn_blocking(move || status(addr)).await??;
    let served = &doc["snapshot"]["generation"];
    println!("/status says generation {served}");
    running.shutdown().await?;
    if served != generation {
        return Err(format!("/status serves generation {served}, not {generation}").into());
    }
    Ok(())
}
