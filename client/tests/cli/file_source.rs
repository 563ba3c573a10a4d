//! `--file`: the file is the source, so there is no ACK channel.

use std::net::SocketAddr;

use serde_json::Value;
use xdsloop_proto::type_url::CLUSTER;

use crate::support::Cli;

#[tokio::test(flavor = "multi_thread")]
async fn file_source_says_accepted_and_rejected_and_that_there_is_no_ack_channel() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("xds.json");
    let file = |version: &str| {
        serde_json::json!({
            "version_info": version,
            "resources": [{
                "@type": CLUSTER,
                "name": "web",
                "type": "STATIC",
                "connect_timeout": "1s",
            }],
        })
        .to_string()
    };
    std::fs::write(&path, file("f1")).unwrap();
    // No server: the file is the source.
    let nowhere: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let path_arg = path.to_str().unwrap();
    let args = ["--file", path_arg, "--types", "cds", "--output", "json"];
    let mut cli = Cli::spawn(nowhere, &args);
    let watching = cli.stderr_until("watching").await;
    assert!(watching.contains("no ACK channel"), "{watching}");
    let line: Value = serde_json::from_str(&cli.line().await.unwrap()).unwrap();
    assert_eq!(
        (&line["source"], &line["status"], &line["version"]),
        (
            &Value::from("file"),
            &Value::from("ACCEPTED"),
            &Value::from("f1")
        )
    );
    assert_eq!(line["added"], serde_json::json!(["web"]));
    std::fs::write(&path, "{ not json").unwrap();
    let line: Value = serde_json::from_str(&cli.line().await.unwrap()).unwrap();
    assert_eq!(line["status"], "REJECTED");
    assert!(
        line["error"].as_str().unwrap().contains("xds.json"),
        "{line}"
    );
    std::fs::write(&path, file("f2")).unwrap();
    let line: Value = serde_json::from_str(&cli.line().await.unwrap()).unwrap();
    assert_eq!(
        (&line["status"], &line["version"]),
        (&Value::from("ACCEPTED"), &Value::from("f2"))
    );
}
