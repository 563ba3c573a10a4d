//! SotW over ADS, end to end: the server's rules S1–S7 and S11 as a real gRPC client sees them.

use std::collections::BTreeSet;

use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use crate::harness::*;

fn demo() -> ResourceSet {
    ResourceSet::default()
        .with(cluster("alpha"))
        .with(cluster("beta"))
        .with(endpoints("alpha", 8001))
        .with(endpoints("beta", 8002))
        .with(listener("main", 10000))
        .with(route("local", "alpha"))
}

#[tokio::test]
async fn s1_initial_response_per_type_has_type_url_fresh_nonce_and_matching_any() {
    let server = serve(demo()).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let mut nonces = BTreeSet::new();
    for (url, names, expected) in [
        (CLUSTER, vec![], vec!["alpha", "beta"]),
        (ENDPOINT, vec!["alpha"], vec!["alpha"]),
        (LISTENER, vec![], vec!["main"]),
        (ROUTE, vec!["local"], vec!["local"]),
    ] {
        let response = client.subscribe(url, &names).await;
        assert_eq!(response.type_url, url);
        assert!(!response.version_info.is_empty());
        assert_eq!(names_in(&response), expected, "{url}");
        assert!(
            nonces.insert(response.nonce.clone()),
            "nonce reused: {}",
            response.nonce
        );
    }
}

#[tokio::test]
async fn s3_ack_causes_no_resend() {
    let server = serve(demo()).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let cds = client.subscribe(CLUSTER, &[]).await;
    client.ack(&cds, &[]).await;
    client.assert_silent("after an ACK").await;
    // Republishing equal content is not a change either.
    server.set_resources(None, demo()).unwrap();
    client
        .assert_silent("after a reload with equal content")
        .await;
}

#[tokio::test]
async fn s3_snapshot_change_pushes_a_new_version_on_the_open_stream() {
    let server = serve(demo()).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.ack(&first, &[]).await;
    server
        .set_resources(None, demo().with(cluster("gamma")))
        .unwrap();
    let pushed = client.recv().await;
    assert_eq!(pushed.type_url, CLUSTER);
    assert_ne!(pushed.version_info, first.version_info);
    assert_ne!(pushed.nonce, first.nonce);
    assert_eq!(names_in(&pushed), ["alpha", "beta", "gamma"]);
}

#[tokio::test]
async fn s3_nack_is_recorded_and_not_answered_with_the_same_version() {
    let server = serve(demo()).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.ack(&first, &[]).await;
    server
        .set_resources(None, demo().with(cluster_with_timeout("alpha", 9)))
        .unwrap();
    let bad = client.recv().await;
    client.nack(&bad, &[], &first.version_info).await;
    let streams = registry_until(server.registry(), "the NACK in the registry", |s| {
        s.iter()
            .any(|s| s.types.get(CLUSTER).is_some_and(|t| t.last_nack.is_some()))
    })
    .await;
    let nack = streams[0].types[CLUSTER].last_nack.clone().unwrap();
    assert_eq!(
        (nack.version, nack.nonce),
        (bad.version_info.clone(), bad.nonce.clone())
    );
    assert_eq!(nack.message, "rejected by the test");
    client
        .assert_silent("the rejected version is not resent")
        .await;
    server
        .set_resources(None, demo().with(cluster_with_timeout("alpha", 3)))
        .unwrap();
    let fixed = client.recv().await;
    assert_ne!(fixed.version_info, bad.version_info);
    assert_ne!(fixed.version_info, first.version_info);
}

#[tokio::test]
async fn s4_stale_nonce_is_ignored() {
    let server = serve(demo()).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(ENDPOINT, &["alpha"]).await;
    server
        .set_resources(None, demo().with(endpoints("alpha", 9001)))
        .unwrap();
    let newer = client.recv().await;
    // A request that still answers the first response, and asks for more: stale.
    client.ack(&first, &["alpha", "beta"]).await;
    client.assert_silent("a stale nonce gets no response").await;
    client.ack(&newer, &["alpha", "beta"]).await;
    assert_eq!(names_in(&client.recv().await), ["alpha", "beta"]);
}

#[tokio::test]
async fn s5_named_eds_gets_what_exists_and_an_added_name_is_sent_even_if_sent_before() {
    let server = serve(demo()).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(ENDPOINT, &["alpha", "nowhere"]).await;
    assert_eq!(names_in(&first), ["alpha"], "a missing name is just absent");
    client.ack(&first, &["alpha", "nowhere"]).await;
    client.ack(&first, &["alpha", "beta", "nowhere"]).await;
    let second = client.recv().await;
    assert_eq!(names_in(&second), ["alpha", "beta"]);
    client.ack(&second, &["beta"]).await;
    client
        .assert_silent("dropping a name needs no response")
        .await;
    client.ack(&second, &["alpha", "beta"]).await;
    let third = client.recv().await;
    assert_eq!(
        names_in(&third),
        ["alpha", "beta"],
        "alpha again, though sent before"
    );
    assert_eq!(
        third.version_info, second.version_info,
        "same content, same version"
    );
}

#[tokio::test]
async fn s6_legacy_wildcard_and_explicit_star() {
    let server = serve(demo()).await;
    let mut legacy = SotwClient::connect(server.addr(), "node-1").await;
    let all = legacy.subscribe(CLUSTER, &[]).await;
    assert_eq!(names_in(&all), ["alpha", "beta"]);
    legacy.ack(&all, &[]).await;
    let mut star = SotwClient::connect(server.addr(), "node-2").await;
    let all = star.subscribe(CLUSTER, &["*"]).await;
    assert_eq!(names_in(&all), ["alpha", "beta"]);
    star.ack(&all, &["*"]).await;
    server
        .set_resources(None, demo().with(cluster("gamma")))
        .unwrap();
    assert_eq!(names_in(&legacy.recv().await), ["alpha", "beta", "gamma"]);
    assert_eq!(names_in(&star.recv().await), ["alpha", "beta", "gamma"]);
}

#[tokio::test]
async fn s7_acking_one_type_does_not_push_another() {
    let server = serve(demo()).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let cds = client.subscribe(CLUSTER, &[]).await;
    let eds = client.subscribe(ENDPOINT, &["alpha"]).await;
    let lds = client.subscribe(LISTENER, &[]).await;
    client.ack(&cds, &[]).await;
    client.ack(&lds, &[]).await;
    client.ack(&eds, &["alpha"]).await;
    client.assert_silent("ACKs never push").await;
}

#[tokio::test]
async fn s11_one_update_sends_cds_before_eds_and_lds_before_rds() {
    let server = serve(demo()).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    // Subscribe in the "wrong" order so only the server's ordering can fix it.
    for (url, names) in [
        (ROUTE, &["local"][..]),
        (ENDPOINT, &["alpha", "gamma"]),
        (LISTENER, &[]),
        (CLUSTER, &[]),
    ] {
        let response = client.subscribe(url, names).await;
        client.ack(&response, names).await;
    }
    let next = demo()
        .with(cluster("gamma"))
        .with(endpoints("gamma", 8003))
        .with(listener("main", 10001))
        .with(route("local", "gamma"));
    server.set_resources(None, next).unwrap();
    let mut order = Vec::new();
    for _ in 0..4 {
        order.push(client.recv().await.type_url);
    }
    assert_eq!(order, [CLUSTER, ENDPOINT, LISTENER, ROUTE]);
}

#[tokio::test]
async fn overlays_two_node_ids_get_their_own_resources() {
    let snapshot = demo().for_node("special", cluster("private"));
    let server = serve(snapshot).await;
    let mut plain = SotwClient::connect(server.addr(), "plain").await;
    let mut special = SotwClient::connect(server.addr(), "special").await;
    assert_eq!(
        names_in(&plain.subscribe(CLUSTER, &[]).await),
        ["alpha", "beta"]
    );
    let theirs = special.subscribe(CLUSTER, &[]).await;
    assert_eq!(names_in(&theirs), ["alpha", "beta", "private"]);
}

#[tokio::test]
async fn s12_unknown_type_gets_an_empty_response_and_other_types_still_work() {
    let server = serve(demo()).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let unknown = client
        .subscribe("type.googleapis.com/example.NotAType", &[])
        .await;
    assert!(unknown.resources.is_empty());
    let cds = client.subscribe(CLUSTER, &[]).await;
    assert_eq!(names_in(&cds), ["alpha", "beta"]);
}
