//! What `/status` says while a fault is in force and after it goes: only responses that went
//! out on the wire, each under the type it carried, a held response said to be held, the
//! counters in agreement, and a way back to a known state (`DELETE /scenario`,
//! `POST /resync`). Compared, each time, with what the real `xdsloop-client` did.

use serde_json::Value;
use xdsloop_client::{Report, Source, Verdict};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::*;
use crate::harness::{http_get, http_send};

/// `/status` and the row of `type_url` on the first stream, once `done` holds for them.
async fn row_where(
    served: &FixtureServer,
    type_url: &str,
    done: impl Fn(&Value, &Value) -> bool,
) -> (Value, Value) {
    let shown = poll_until("/status to show the row", WAIT, async || {
        let status = http_get(served.addr(), "/status").await.json();
        let rows = status["streams"].as_array().cloned().unwrap_or_default();
        let row = rows.iter().find_map(|s| {
            let types = s["types"].as_array()?;
            types.iter().find(|t| t["type_url"] == type_url).cloned()
        });
        match row.filter(|row| done(&status, row)) {
            Some(row) => Ok((status, row)),
            None => Err(status),
        }
    });
    shown.await.unwrap_or_else(|e| panic!("{e}"))
}

fn fired_in(status: &Value, rule: usize) -> &Value {
    &status["scenario"]["rules"][rule]["fired"]
}

#[tokio::test]
async fn a_delayed_response_is_shown_held_until_it_goes_and_the_counters_agree() {
    let yaml = "version: 1\nrules:\n- id: slow\n  match: {type: cds}\n  when: {nth: 2}\n  do: {delay: 1500ms}\n";
    let served = served_with(yaml).await;
    let (client, _reports) = client_of(&served, Source::Ads, |_| {}).await;
    let first = served.snapshot();
    let before = store_where(&client, |s| matches_snapshot(s, &first, &Source::Ads)).await;
    let second = served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    let (status, row) = row_where(&served, CLUSTER, |_, row| {
        row["last_sent"]["held"].is_object()
    })
    .await;
    let held = &row["last_sent"]["held"];
    assert_eq!(row["last_sent"]["fault"]["action"], "delay", "{row:#}");
    assert_eq!(row["state"], "PENDING", "{row:#}");
    let (since, until) = (
        held["since"].as_str().unwrap(),
        held["until"].as_str().unwrap(),
    );
    assert!(since < until, "{held}");
    assert_eq!(fired_in(&status, 0), 1, "{:#}", status["scenario"]);
    assert_eq!(
        status["counters"]["faults"], 1,
        "the firing counts once, from its start"
    );
    assert_eq!(
        client.store().borrow().of_type(CLUSTER),
        before.of_type(CLUSTER),
        "the client does not have it yet"
    );

    store_where(&client, |s| matches_snapshot(s, &second, &Source::Ads)).await;
    let (status, row) = row_where(&served, CLUSTER, |_, row| row["state"] == "SYNCED").await;
    assert!(row["last_sent"].get("held").is_none(), "{row:#}");
    let at = row["last_sent"]["at"].as_str().unwrap();
    assert!(
        at >= until,
        "sent at {at}, not when queued ({since}); held until {until}"
    );
    assert_eq!(fired_in(&status, 0), 1);
    assert_eq!(status["counters"]["faults"], 1);
    client.stop().await;
}

#[tokio::test]
async fn a_response_sent_under_a_foreign_type_url_is_filed_under_that_type() {
    let yaml = "version: 1\nrules:\n- id: retype\n  match: {type: eds}\n  when: {nth: 2}\n  times: 1\n  do: {wrong_type_url: {in: response, type: cds}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, Source::Ads, |_| {}).await;
    let first = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &first, &Source::Ads)).await;
    served
        .edit_text("endpoints.yaml", |t| t.replacen("8081", "8089", 1))
        .await;
    // The client gets a CDS response holding endpoints, and NACKs it as CDS.
    let nack = report(&mut reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER && u.verdict != Verdict::Ack => Some(u.clone()),
        _ => None,
    })
    .await;
    let (status, cds) = row_where(&served, CLUSTER, |_, row| {
        row["last_nack"]["nonce"] == nack.nonce.as_str()
    })
    .await;
    assert_eq!(cds["state"], "NACKED", "{cds:#}");
    assert_eq!(cds["last_sent"]["nonce"], nack.nonce.as_str(), "{cds:#}");
    assert_eq!(cds["last_sent"]["fault"]["action"], "wrong_type_url");
    let eds = status["streams"][0]["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type_url"] == ENDPOINT)
        .unwrap();
    assert_ne!(
        eds["last_sent"]["nonce"],
        nack.nonce.as_str(),
        "not filed under EDS: {eds:#}"
    );
    assert_eq!(eds["last_fault"]["rule"], "retype", "{eds:#}");
    assert!(
        status["counters"]["nacks"].as_u64() >= Some(1),
        "{:#}",
        status["counters"]
    );
    client.stop().await;
}

async fn withhold_removed_serves_what_it_hid(source: Source, remove: impl FnOnce(&FixtureServer)) {
    let yaml = "version: 1\nrules:\n- id: hide-web\n  match: {type: eds}\n  do: {withhold: {names: [web]}}\n";
    let served = served_with(yaml).await;
    let (client, _reports) = client_of(&served, source, |_| {}).await;
    row_where(&served, ENDPOINT, |_, row| {
        row["withheld"].is_object() && row["state"] == "SYNCED"
    })
    .await;
    assert!(!client.store().borrow().holds(ENDPOINT, "web"));
    remove(&served);
    // No fixture edit: the rule's going is enough.
    store_where(&client, |s| s.holds(ENDPOINT, "web")).await;
    let (_, row) = row_where(&served, ENDPOINT, |_, row| {
        row["state"] == "SYNCED" && row.get("withheld").is_none()
    })
    .await;
    assert!(row["last_sent"]["fault"].is_null(), "{row:#}");
    client.stop().await;
}

#[tokio::test]
async fn withhold_cleared_serves_what_it_hid_at_once_sotw() {
    withhold_removed_serves_what_it_hid(Source::Ads, |s| scenarios(s).clear()).await;
}

#[tokio::test]
async fn withhold_cleared_serves_what_it_hid_at_once_delta() {
    withhold_removed_serves_what_it_hid(Source::AdsDelta, |s| scenarios(s).clear()).await;
}

#[tokio::test]
async fn withhold_replaced_by_another_rule_serves_what_it_hid() {
    let other = "version: 1\nrules:\n- id: late\n  match: {type: lds}\n  when: {nth: 9}\n  do: {drop: {}}\n";
    withhold_removed_serves_what_it_hid(Source::Ads, |s| {
        scenarios(s)
            .set(Scenario::from_yaml(other).unwrap())
            .unwrap();
    })
    .await;
}

#[tokio::test]
async fn ignore_acks_spent_leaves_no_response_that_never_went_out() {
    let yaml = "version: 1\nrules:\n- id: storm\n  match: {type: cds}\n  times: 3\n  do: {ignore_acks: {}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, Source::Ads, |_| {}).await;
    let mut last = None;
    for _ in 0..4 {
        let update = report(&mut reports, |r| match r {
            Report::Update(u) if u.type_url == CLUSTER => Some(u.clone()),
            _ => None,
        })
        .await;
        last = Some(update.nonce);
    }
    let last = last.unwrap();
    let (_, row) = row_where(&served, CLUSTER, |_, row| {
        row["last_acked"]["nonce"] == last.as_str()
    })
    .await;
    assert_eq!(
        row["last_sent"]["nonce"],
        last.as_str(),
        "the last response on the wire is the one the client ACKed: {row:#}"
    );
    assert_eq!(row["state"], "SYNCED", "{row:#}");
    client.stop().await;
}

/// Under `yaml` (a rule on the 2nd CDS response), an edit of the clusters leaves the client
/// where the rule put it; `back` (with the rule in force or gone) must bring the client to
/// the served clusters, and `/status` to SYNCED, with no further edit.
async fn a_way_back(yaml: &str, stuck: &str, back: &str, method: &str) {
    a_way_back_on(Source::Ads, yaml, stuck, back, method).await;
}

async fn a_way_back_on(source: Source, yaml: &str, stuck: &str, back: &str, method: &str) {
    let served = served_with(yaml).await;
    let (client, _reports) = client_of(&served, source.clone(), |_| {}).await;
    let first = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &first, &source)).await;
    let second = served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    row_where(&served, CLUSTER, |_, row| row["state"] == stuck).await;
    let answer = http_send(served.addr(), method, back, None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    store_where(&client, |s| matches_snapshot(s, &second, &source)).await;
    row_where(&served, CLUSTER, |_, row| row["state"] == "SYNCED").await;
    client.stop().await;
}

#[tokio::test]
async fn delete_scenario_resends_what_a_drop_left_pending() {
    let yaml = "version: 1\nrules:\n- id: lost\n  match: {type: cds}\n  when: {nth: 2}\n  do: {drop: {}}\n";
    a_way_back(yaml, "PENDING", "/scenario", "DELETE").await;
}

#[tokio::test]
async fn delete_scenario_resends_what_a_corrupt_push_left_nacked() {
    let yaml = "version: 1\nrules:\n- id: mangle\n  match: {type: cds}\n  when: {nth: 2}\n  do: {corrupt: {resource: web}}\n";
    a_way_back(yaml, "NACKED", "/scenario", "DELETE").await;
}

#[tokio::test]
async fn post_resync_resends_to_a_nacked_stream_with_the_rule_still_in_force() {
    let yaml = "version: 1\nrules:\n- id: mangle\n  match: {type: cds}\n  when: {nth: 2}\n  do: {duplicate: {resource: api}}\n";
    a_way_back(yaml, "NACKED", "/resync", "POST").await;
}

#[tokio::test]
async fn delete_scenario_resends_what_a_corrupt_push_left_nacked_delta() {
    let yaml = "version: 1\nrules:\n- id: mangle\n  match: {type: cds}\n  when: {nth: 2}\n  do: {corrupt: {resource: web}}\n";
    a_way_back_on(Source::AdsDelta, yaml, "NACKED", "/scenario", "DELETE").await;
}

#[tokio::test]
async fn post_resync_resends_what_a_drop_left_pending_delta() {
    let yaml = "version: 1\nrules:\n- id: lost\n  match: {type: cds}\n  when: {nth: 2}\n  do: {drop: {}}\n";
    a_way_back_on(Source::AdsDelta, yaml, "PENDING", "/resync", "POST").await;
}

#[tokio::test]
async fn a_response_held_when_its_stream_closes_is_shown_never_sent() {
    let yaml = "version: 1\nrules:\n- id: slow\n  match: {type: cds}\n  when: {nth: 2}\n  do: {delay: 60s}\n";
    let served = served_with(yaml).await;
    let (client, _reports) = client_of(&served, Source::Ads, |_| {}).await;
    let first = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &first, &Source::Ads)).await;
    served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    let (_, row) = row_where(&served, CLUSTER, |_, row| {
        row["last_sent"]["held"].is_object()
    })
    .await;
    assert_eq!(row["last_sent"]["held"]["never_sent"], false, "{row:#}");
    client.stop().await;
    let closed = poll_until("the stream to be listed as closed", WAIT, async || {
        let status = http_get(served.addr(), "/status").await.json();
        let closed = status["recently_closed"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let row = closed.iter().find_map(|s| {
            let types = s["types"].as_array()?;
            types.iter().find(|t| t["type_url"] == CLUSTER).cloned()
        });
        row.ok_or(status)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let held = &closed["last_sent"]["held"];
    assert_eq!(
        held["never_sent"], true,
        "the stream ended while it was held: {closed:#}"
    );
}

#[tokio::test]
async fn delete_scenario_during_a_push_storm_sends_nothing_to_a_stream_in_sync() {
    for source in [Source::Ads, Source::AdsDelta] {
        let yaml =
            "version: 1\nrules:\n- id: storm\n  match: {type: cds}\n  do: {ignore_acks: {}}\n";
        let served = served_with(yaml).await;
        let (client, mut reports) = client_of(&served, source.clone(), |_| {}).await;
        for _ in 0..4 {
            report(&mut reports, |r| match r {
                Report::Update(u) if u.type_url == CLUSTER => Some(()),
                _ => None,
            })
            .await;
        }
        let answer = http_send(served.addr(), "DELETE", "/scenario", None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        // An edit of the endpoints after the removal: its EDS update marks where the stream is.
        served
            .edit_text("endpoints.yaml", |t| t.replacen("8081", "8089", 1))
            .await;
        report(&mut reports, |r| match r {
            Report::Update(u) if u.type_url == ENDPOINT => Some(()),
            _ => None,
        })
        .await;
        // The storm's last response was complete and on its way: the client ACKs it. A
        // resync would send the same clusters once more, with no fault on them.
        let (_, row) = row_where(&served, CLUSTER, |_, row| row["state"] == "SYNCED").await;
        assert_eq!(
            row["last_sent"]["fault"]["rule"], "storm",
            "{source:?}: a stream in sync was sent its clusters again: {row:#}"
        );
        client.stop().await;
    }
}
