//! What a run prints: one text or JSON line per update, `--reject` NACKs, `--dump`.

use serde_json::Value;
use xdsloop_proto::type_url::{self, CLUSTER};

use crate::support::{Cli, NODE, WAIT, serve_demo, text_fields};

#[tokio::test(flavor = "multi_thread")]
async fn text_output_has_one_line_per_update_with_version_ack_and_names() {
    let served = serve_demo().await;
    let mut cli = Cli::spawn(served.addr(), &["--exit-after", "4"]);
    let mut lines: Vec<_> = cli.lines(4).await.iter().map(|l| text_fields(l)).collect();
    let (rest, status) = cli.finish().await;
    assert!(status.success() && rest.is_empty(), "{rest:?}");
    lines.sort();
    let expected: Vec<(String, String, String, String)> = [
        ("cds", "api,web"),
        ("eds", "api,web"),
        ("lds", "ingress"),
        ("rds", "local_route"),
    ]
    .into_iter()
    .map(|(t, names)| {
        (
            t.into(),
            served.served_version(t),
            "ACK".into(),
            names.into(),
        )
    })
    .collect();
    assert_eq!(lines, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn json_output_is_one_object_per_line_with_the_documented_fields() {
    let served = serve_demo().await;
    let mut cli = Cli::spawn(
        served.addr(),
        &["--delta", "--output", "json", "--exit-after", "4"],
    );
    let objects: Vec<Value> = cli
        .lines(4)
        .await
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(cli.finish().await.1.success());
    let documented = [
        "event", "time", "mode", "source", "type", "type_url", "version", "nonce", "status",
        "error", "added", "updated", "removed",
    ];
    let mut types = Vec::new();
    for object in &objects {
        let keys: Vec<&str> = object
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted = documented.to_vec();
        sorted.sort();
        assert_eq!(keys, sorted, "{object}");
        assert_eq!(
            (object["event"].as_str(), object["mode"].as_str()),
            (Some("update"), Some("delta"))
        );
        assert_eq!(object["source"], "ads-delta");
        assert_eq!(
            (object["status"].as_str(), &object["error"]),
            (Some("ACK"), &Value::Null)
        );
        assert!(!object["nonce"].as_str().unwrap().is_empty());
        let alias = object["type"].as_str().unwrap().to_string();
        assert_eq!(
            object["type_url"].as_str(),
            type_url::resolve(&alias).as_deref()
        );
        types.push((alias, object["added"].clone()));
    }
    types.sort_by(|a, b| a.0.cmp(&b.0));
    let added: Vec<String> = types.iter().map(|(t, a)| format!("{t}={a}")).collect();
    assert_eq!(
        added,
        [
            r#"cds=["api","web"]"#,
            r#"eds=["api","web"]"#,
            r#"lds=["ingress"]"#,
            r#"rds=["local_route"]"#
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reject_flag_nacks_once_and_the_server_records_it() {
    let served = serve_demo().await;
    let mut cli = Cli::spawn(served.addr(), &["--reject", "cds:web"]);
    let mut seen = cli.lines(3).await; // CDS (NACK), LDS, RDS; EDS never follows a NACKed CDS.
    seen.extend(cli.quiet_lines().await);
    let cds: Vec<&String> = seen.iter().filter(|l| text_fields(l).0 == "cds").collect();
    assert_eq!(cds.len(), 1, "one NACK, no resend loop: {seen:#?}");
    assert!(
        cds[0].contains(" NACK (resource \"web\": rejected by --reject cds:web)"),
        "{}",
        cds[0]
    );
    assert!(!seen.iter().any(|l| text_fields(l).0 == "eds"), "{seen:#?}");
    let nack = served.await_nack(NODE, "cds", WAIT).await;
    let nack = nack.unwrap_or_else(|e| panic!("the server records the NACK: {e}"));
    assert!(
        nack.message.contains("rejected by --reject cds:web"),
        "{nack:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dump_prints_the_applied_resources_and_exits() {
    let served = serve_demo().await;
    for (format, parse) in [
        (
            "text",
            (|s: &str| serde_yaml_ng::from_str::<Value>(s).unwrap()) as fn(&str) -> Value,
        ),
        ("json", |s: &str| serde_json::from_str::<Value>(s).unwrap()),
    ] {
        let mut cli = Cli::spawn(served.addr(), &["--dump", "--output", format]);
        let (lines, status) = cli.finish().await;
        assert!(status.success());
        // Only the document: it can be piped straight into jq or yq.
        let dump = parse(&lines.join("\n"));
        let types = dump["types"].as_array().unwrap();
        let summary: Vec<String> = types
            .iter()
            .map(|t| {
                let names: Vec<&str> = t["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["name"].as_str().unwrap())
                    .collect();
                format!(
                    "{}@{}={}",
                    t["type"].as_str().unwrap(),
                    t["version"].as_str().unwrap(),
                    names.join(",")
                )
            })
            .collect();
        let expected: Vec<String> = [
            ("cds", "api,web"),
            ("eds", "api,web"),
            ("lds", "ingress"),
            ("rds", "local_route"),
        ]
        .iter()
        .map(|(t, n)| format!("{t}@{}={n}", served.served_version(t)))
        .collect();
        assert_eq!(summary, expected, "{format}");
        let web = &types[0]["resources"][1]["resource"];
        assert_eq!(web["@type"].as_str(), Some(CLUSTER));
        assert_eq!(web["connect_timeout"].as_str(), Some("0.250s"));
    }
}
