//! `withhold` in `/status`: the type's row names what the rule left out of the latest
//! response and the rule, counts only what was sent, and a client that ACKed everything else
//! is `SYNCED`: it is not stuck for lack of what it was never told of.

use serde_json::{Value, json};
use xdsloop_client::Source;
use xdsloop_proto::type_url::ENDPOINT;

use super::*;
use crate::harness::http_get;

/// The EDS row of the first stream in `/status` once `done` holds for it.
async fn eds_row_where(served: &FixtureServer, done: impl Fn(&Value) -> bool) -> Value {
    let row = poll_until("/status to show the EDS row", WAIT, async || {
        let status = http_get(served.addr(), "/status").await.json();
        let rows = status["streams"].as_array().cloned().unwrap_or_default();
        let eds = rows.iter().find_map(|s| {
            let types = s["types"].as_array()?;
            types.iter().find(|t| t["type_url"] == ENDPOINT).cloned()
        });
        eds.filter(|row| done(row)).ok_or(status)
    });
    row.await.unwrap_or_else(|e| panic!("{e}"))
}

async fn withheld_row_is_synced(source: Source) {
    let yaml = "version: 1\nrules:\n- id: hide-web\n  match: {type: eds}\n  do: {withhold: {names: [web]}}\n";
    let served = served_with(yaml).await;
    let (client, _reports) = client_of(&served, source, |_| {}).await;
    store_where(&client, |s| s.holds(ENDPOINT, "api")).await;
    let row = eds_row_where(&served, |row| row["last_acked"].is_object()).await;
    assert_eq!(row["state"], "SYNCED", "{row:#}");
    let withheld = &row["withheld"];
    assert_eq!(
        (&withheld["rule"], &withheld["names"]),
        (&json!("hide-web"), &json!(["web"])),
        "{row:#}"
    );
    assert!(
        withheld["waiting_since"].is_string() && withheld["waited_ms"].is_u64(),
        "how long the client has waited: {row:#}"
    );
    assert_eq!(
        row["last_sent"]["resources"], 1,
        "only api was sent: {row:#}"
    );
    assert!(!client.store().borrow().holds(ENDPOINT, "web"));
    client.stop().await;
}

#[tokio::test]
async fn withhold_sotw_status_names_the_withheld_and_the_client_is_synced() {
    withheld_row_is_synced(Source::Ads).await;
}

#[tokio::test]
async fn withhold_delta_status_names_the_withheld_and_the_client_is_synced() {
    withheld_row_is_synced(Source::AdsDelta).await;
}

#[tokio::test]
async fn withhold_removed_the_next_response_has_no_withheld() {
    let yaml = "version: 1\nrules:\n- id: hide-web\n  match: {type: eds}\n  do: {withhold: {names: [web]}}\n";
    let served = served_with(yaml).await;
    let (client, _reports) = client_of(&served, Source::Ads, |_| {}).await;
    eds_row_where(&served, |row| row["withheld"].is_object()).await;
    scenarios(&served).clear();
    served
        .edit_text("endpoints.yaml", |t| t.replacen("8081", "8089", 1))
        .await;
    store_where(&client, |s| s.holds(ENDPOINT, "web")).await;
    let row = eds_row_where(&served, |row| {
        row["state"] == "SYNCED" && row["last_sent"]["resources"] == 2
    })
    .await;
    assert!(row.get("withheld").is_none(), "{row:#}");
    client.stop().await;
}
