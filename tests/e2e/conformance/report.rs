//! Where a violation shows: `/status` (a count and the last few per stream, totals by check),
//! the `xdsloop-server status` table (the VIOL column and the evidence under it), and a
//! `--record` transcript (a `violation` line after the offending request).

use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::{
    app::Recording,
    status::remote::{self, Output},
};
use xdsloop_transcript::{line::What, read_file};

use super::*;

#[tokio::test]
async fn a_violation_shows_in_status_the_table_and_the_transcript() {
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("server.jsonl");
    let files = [("clusters.json", vec![cluster("alpha")])];
    let recording = Recording {
        path: path.clone(),
        resources: false,
    };
    let mut server = FixtureServer::start_with(&files, |server| {
        server.configure(move |c| c.record = Some(recording.clone()))
    })
    .await;
    server.allow_violations();
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.request(CLUSTER, &[], "not-it", &first.nonce).await;
    violation(server.registry(), "C4.ack-version").await;

    let status = http_get(server.addr(), "/status").await.json();
    assert_eq!(status["counters"]["violations"], 1);
    assert_eq!(status["violations"]["C4.ack-version"], 1);
    let found = &status["streams"][0]["violations"];
    assert_eq!(found["count"], 1);
    assert_eq!(found["by_check"]["C4.ack-version"], 1);
    assert_eq!(found["last"][0]["rule"], "C4");
    assert_eq!(found["last"][0]["type"], CLUSTER);
    let message = found["last"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("carries version_info \"not-it\""),
        "{message}"
    );

    let table = remote::command(&server.addr().to_string(), Output::Text)
        .await
        .unwrap();
    let header = table.lines().find(|l| l.starts_with("NODE ")).unwrap();
    assert!(
        header.contains(" PEER ") && header.contains(" VIOL "),
        "{table}"
    );
    let row = table.lines().find(|l| l.starts_with("node-1 ")).unwrap();
    assert_eq!(row.split_whitespace().nth(4), Some("1"), "{table}");
    let evidence = format!("  C4.ack-version: {message}");
    assert!(table.lines().any(|l| l == evidence), "{table}");

    drop(client);
    closed(server.registry(), 1).await;
    let registry = server.registry().clone();
    let FixtureServer { server, judge, .. } = server;
    server.shutdown().await.unwrap();
    drop(judge);
    assert_eq!(
        registry.recently_closed()[0].stream.violations.count,
        1,
        "kept after close"
    );
    let transcript = read_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&What> = transcript.events.iter().map(|n| &n.event.what).collect();
    let at = lines
        .iter()
        .position(|w| matches!(w, What::Violation(v) if v.check == "C4.ack-version"))
        .expect("a violation line");
    assert!(
        matches!(lines[at - 1], What::Request(_)),
        "the violation follows the request that broke the rule"
    );
}
