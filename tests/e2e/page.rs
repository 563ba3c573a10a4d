//! The live page's routes on a real server (`app::start` over a temp fixture dir, the admin on
//! the xDS port) with real ADS streams: the bundled page, the grid's events following an edit
//! and a rejected edit, and one stream's conversation with its loop steps and Envoy calls.
//! (`make browser` drives the same page in a headless Chromium.)

use serde_json::Value;
use xdsloop_proto::type_url::CLUSTER;

use crate::harness::*;

/// The CDS cell of `node` in a grid event, if the event has that row.
fn cds_cell(event: &SseEvent, node: &str) -> Option<Value> {
    let rows = event.data["rows"].as_array()?;
    let row = rows.iter().find(|r| r["node"] == node)?;
    let cells = row["cells"].as_array()?;
    cells.iter().find(|c| c["type"] == "cds").cloned()
}

fn is_synced_on(version: &str) -> impl Fn(&Value) -> bool + '_ {
    move |cell| cell["state"] == "SYNCED" && cell["served"] == version && cell["held"] == version
}

#[tokio::test]
async fn page_is_one_bundled_asset_that_loads_nothing_else() {
    let server = FixtureServer::start(&[("clusters.json", vec![cluster("a")])]).await;
    let page = http_get(server.addr(), "/").await;
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    let body = page.body.to_lowercase();
    assert!(
        body.contains("<script>") && body.contains("<style>"),
        "inline"
    );
    for external in ["src=", "<link", "@import", "url(", "http://", "https://"] {
        assert!(!body.contains(external), "the page loads {external:?}");
    }
    let unknown = http_get(server.addr(), "/streams/999").await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.json()["error"].as_str().unwrap().contains("999"));
}

#[tokio::test]
async fn page_grid_follows_an_edit_to_synced_and_shows_a_rejected_edit() {
    let server = FixtureServer::start(&[("clusters.json", vec![cluster("a")])]).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.ack(&first, &[]).await;
    let mut grid = Sse::open(server.addr(), "/events").await;
    let opened = grid
        .until("node-1 SYNCED in the grid", |e| {
            cds_cell(e, "node-1").is_some_and(|c| is_synced_on(&first.version_info)(&c))
        })
        .await;
    assert_eq!(opened.data["reload"]["ok"], true);

    // The page is open before the edit: what follows are live diffs.
    server
        .edit("clusters.json", &[cluster("a"), cluster("b")])
        .await;
    let pushed = client.recv().await;
    assert_ne!(pushed.version_info, first.version_info);
    client.ack(&pushed, &[]).await;
    let synced = grid
        .until("the new version, SYNCED", |e| {
            cds_cell(e, "node-1").is_some_and(|c| is_synced_on(&pushed.version_info)(&c))
        })
        .await;
    assert_eq!(synced.name, "diff");
    assert!(synced.data["counters"]["acks"].as_u64().unwrap() >= 2);

    server
        .break_file("clusters.json", "- name: [unclosed\n")
        .await;
    let rejected = grid
        .until("the rejected edit", |e| e.data["reload"]["ok"] == false)
        .await;
    let error = rejected.data["reload"]["error"].as_str().unwrap();
    assert!(error.contains("clusters.json"), "{error}");
    let filtered = Sse::open(server.addr(), "/events?node=other-*")
        .await
        .next()
        .await;
    assert_eq!(filtered.name, "grid");
    assert_eq!(
        filtered.data["rows"],
        Value::Array(vec![]),
        "the filter applies"
    );
}

#[tokio::test]
async fn page_stream_conversation_shows_its_timeline_then_live_acks_and_nacks() {
    let server = FixtureServer::start(&[("clusters.json", vec![cluster("a")])]).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.ack(&first, &[]).await;
    let stream = registry_until(server.registry(), "the ACK", |s| {
        s.iter()
            .any(|s| s.types.values().any(|t| t.last_acked.is_some()))
    })
    .await[0]
        .id;
    let mut conversation = Sse::open(server.addr(), &format!("/streams/{stream}/events")).await;
    let mut steps = Vec::new();
    let head = loop {
        let event = conversation.next().await;
        match event.name.as_str() {
            "event" => steps.push(event.data),
            "head" => break event.data,
            other => panic!("unexpected {other}"),
        }
    };
    let labels: Vec<&str> = steps.iter().map(|e| e["step"].as_str().unwrap()).collect();
    assert_eq!(labels, ["established", "subscribe", "push", "ack"]);
    assert_eq!(steps[2]["envoy"], "onDiscoveryResponse");
    assert_eq!(steps[3]["title"], "apply + ACK");
    assert_eq!(steps[3]["nonce"], first.nonce.as_str());
    let cds = &head["types"][0];
    assert_eq!(cds["state"], "SYNCED");
    assert_eq!(cds["last_acked"]["version"], cds["snapshot_version"]);

    server
        .edit("clusters.json", &[cluster("a"), cluster("b")])
        .await;
    let pushed = client.recv().await;
    let live = conversation
        .until("the live push", |e| e.data["step"] == "push")
        .await;
    assert_eq!(live.data["version"], pushed.version_info.as_str());
    assert_eq!(live.data["resources"].as_array().unwrap().len(), 2);
    client.nack(&pushed, &[], &first.version_info).await;
    let nack = conversation
        .until("the live NACK", |e| e.data["step"] == "nack")
        .await;
    assert_eq!(nack.data["error_detail"]["message"], "rejected by the test");
    assert!(
        nack.data["envoy"]
            .as_str()
            .unwrap()
            .contains("UpdateRejected")
    );
    let head = conversation
        .until("the head after the NACK", |e| e.name == "head")
        .await;
    let cds = &head.data["types"][0];
    assert_eq!(cds["state"], "NACKED");
    assert_eq!(cds["last_acked"]["version"], first.version_info.as_str());
    assert_eq!(cds["snapshot_version"], pushed.version_info.as_str());
}

#[tokio::test]
async fn page_shows_the_scenario_in_force_with_each_rule_s_fired_count() {
    use crate::faults::{client_of, scenarios, served_with};
    let yaml = "version: 1\nrules:\n- id: storm\n  match: {type: cds}\n  times: 2\n  do: {ignore_acks: {}}\n";
    let served = served_with(yaml).await;
    let mut grid = Sse::open(served.addr(), "/events").await;
    let shown = grid
        .until("the scenario", |e| {
            e.data["scenario"]["rules"][0]["id"] == "storm"
        })
        .await;
    assert_eq!(shown.data["scenario"]["rules"][0]["action"], "ignore_acks");
    assert_eq!(shown.data["scenario"]["source"], "code");
    let (client, _reports) = client_of(&served, xdsloop_client::Source::Ads, |_| {}).await;
    grid.until("the rule fired twice", |e| {
        e.data["scenario"]["rules"][0]["fired"] == 2
    })
    .await;
    scenarios(&served).clear();
    grid.until("no scenario", |e| e.data["scenario"].is_null())
        .await;
    client.stop().await;
}
