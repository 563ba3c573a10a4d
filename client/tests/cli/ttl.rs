//! TTL'd resources (C17) in the narration and the recording, against the real server's
//! heartbeats (S15): `--explain` shows a heartbeat as a step of its own and its ACK as a TTL
//! refresh that applies nothing, and the expiry once the resource left the fixtures and its
//! heartbeats stopped (S16); `--record` writes heartbeats with the `heartbeat` step.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Cli, Demo, demo_dir, serve_demo_on};

/// One endpoint resource, `web` with a TTL of `ttl` wrapped around it when one is given.
fn endpoint(name: &str, port: u32, ttl: Option<&str>) -> String {
    let resource = format!(
        r#"{{"@type": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
  "cluster_name": "{name}", "endpoints": [{{"lb_endpoints": [{{"endpoint": {{"address":
  {{"socket_address": {{"address": "127.0.0.1", "port_value": {port}}}}}}}}}]}}]}}"#
    );
    match ttl {
        Some(ttl) => format!(
            r#"{{"@type": "type.googleapis.com/envoy.service.discovery.v3.Resource",
  "ttl": "{ttl}", "resource": {resource}}}"#
        ),
        None => resource,
    }
}

/// The demo with `web`'s endpoints given a TTL of 2 s (a heartbeat every third of it).
async fn serve_ttl_demo() -> Demo {
    let dir = demo_dir();
    write_endpoints(dir.path(), true);
    serve_demo_on(dir, "127.0.0.1:0".parse().unwrap()).await
}

/// endpoints.yaml: `api`, and `web` with its TTL when `with_web`.
fn write_endpoints(dir: &Path, with_web: bool) {
    let mut text = endpoint("api", 8091, None);
    if with_web {
        text = format!("{}\n---\n{text}", endpoint("web", 8081, Some("2s")));
    }
    std::fs::write(dir.join("endpoints.yaml"), text).unwrap();
}

/// The narration line of `step` for `kind`.
fn is_step(line: &str, kind: &str, step: &str) -> bool {
    let columns: Vec<&str> = line.split_whitespace().collect();
    columns.get(2) == Some(&kind) && line.contains(&format!(" {step} "))
}

#[tokio::test(flavor = "multi_thread")]
async fn c17_explain_narrates_a_heartbeat_its_ack_and_the_expiry_after_heartbeats_stop() {
    let served = serve_ttl_demo().await;
    let mut cli = Cli::spawn(served.addr(), &["--explain"]);
    let lines = cli.lines_until(|l| is_step(l, "eds", "heartbeat")).await;
    let beat = lines.last().unwrap();
    assert!(
        beat.contains(" [web] — Envoy: onDiscoveryResponse (a heartbeat only refreshes the TTL"),
        "the heartbeat names what it keeps alive, not api: {beat}"
    );
    let ack = cli.lines_until(|l| is_step(l, "eds", "apply + ACK")).await;
    let ack = ack.last().unwrap();
    assert!(
        ack.contains("; TTL refreshed: [web], nothing applied — Envoy: onConfigUpdate"),
        "{ack}"
    );

    // web leaves the fixtures: it is not removed (SotW EDS), its heartbeats stop, it expires.
    write_endpoints(served.dir.path(), false);
    let lines = cli.lines_until(|l| l.contains("· expired:")).await;
    let expired = lines.last().unwrap();
    assert!(
        expired.ends_with("eds  · expired: [web] (the TTL lapsed without a heartbeat: removed)"),
        "{expired}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| is_step(l, "eds", "heartbeat") && l.contains("web")),
        "no heartbeat for web once it left the fixtures (S16):\n{}",
        lines.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn c17_record_writes_heartbeats_with_their_own_step_and_their_acks() {
    let served = serve_ttl_demo().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ttl.jsonl");
    let args = ["--explain", "--record", path.to_str().unwrap()];
    let mut cli = Cli::spawn(served.addr(), &args);
    // The heartbeat's ACK has gone out: wait until the recorder flushed it.
    cli.lines_until(|l| l.contains("TTL refreshed")).await;
    // Complete lines only: the client is still writing.
    let wait = async {
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<Value> = text
                .split_inclusive('\n')
                .filter(|l| l.ends_with('\n'))
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let beat = lines.iter().position(|l| l["step"] == "heartbeat");
            if let Some(at) = beat
                && let Some(ack) = lines[at..].iter().find(|l| {
                    l["step"] == "ack" && l["nonce"] == lines[at]["nonce"] && l["type"] == "eds"
                })
            {
                return (lines[at].clone(), ack.clone());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (beat, ack) = tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .expect("a heartbeat and its ACK in the file");
    assert_eq!(
        (&beat["kind"], &beat["type"]),
        (&json!("response"), &json!("eds"))
    );
    assert_eq!(
        beat["resources"],
        json!([{ "name": "web" }]),
        "a heartbeat names what it keeps alive, and carries no body"
    );
    assert_eq!(
        ack["verdict"], "ack",
        "the heartbeat is ACKed with its nonce"
    );
    let first_push = std::fs::read_to_string(&path).unwrap();
    assert!(
        first_push.contains(r#""type":"eds","step":"push""#),
        "the first EDS response is a push"
    );
}
