//! Item 1: xdsloop-client over TLS and mTLS (ADS, REST, the fleet), and every refusal told in
//! plain words on both sides.

use std::time::Duration;

use xdsloop_client::{
    Source,
    fleet::{Fleet, FleetConfig},
    load_tls,
};
use xdsloop_tests::certs::{CLIENT_CN, CLIENT_SPIFFE, Pki};

use super::*;
use crate::client_support::{demo_client, matches_snapshot, store_where};

#[tokio::test]
async fn tls_client_syncs_over_tls() {
    let pki = Pki::new();
    let served = serve_tls(&pki, false, |_| {}).await;
    let config = tls_client(&served, Source::Ads, &pki.ca_file, None);
    let (client, _reports) = demo_client(config).await;
    let snapshot = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &snapshot, &Source::Ads)).await;
    let doc = status_where(&served, &pki, "one stream", |d| d.streams.len() == 1).await;
    let tls = doc.tls.expect("the status shows TLS");
    assert_eq!(tls.client_auth, "off");
    assert_eq!(
        tls.cert.identity.subject_cn.as_deref(),
        Some("xdsloop-server")
    );
    assert_eq!(doc.streams[0].identity, None, "no client certificate");
    client.stop().await;
}

#[tokio::test]
async fn mtls_client_syncs_and_status_shows_its_identity() {
    let pki = Pki::new();
    let served = serve_tls(&pki, true, |_| {}).await;
    let identity = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let config = tls_client(&served, Source::AdsDelta, &pki.ca_file, identity);
    let (client, _reports) = demo_client(config).await;
    let snapshot = served.snapshot();
    store_where(&client, |s| {
        matches_snapshot(s, &snapshot, &Source::AdsDelta)
    })
    .await;
    let doc = status_where(&served, &pki, "one stream", |d| d.streams.len() == 1).await;
    assert_eq!(doc.tls.unwrap().client_auth, "required");
    let identity = doc.streams[0]
        .identity
        .clone()
        .expect("the client's identity");
    assert_eq!(identity.uri_sans, [CLIENT_SPIFFE]);
    assert_eq!(identity.subject_cn.as_deref(), Some(CLIENT_CN));
    assert_eq!(identity.dns_sans, [format!("{CLIENT_CN}.xdsloop.test")]);
    client.stop().await;
}

#[tokio::test]
async fn tls_plaintext_client_is_refused_on_both_sides() {
    let pki = Pki::new();
    let served = serve_tls(&pki, false, |_| {}).await;
    let plain = crate::client_support::config(served.addr(), Source::Ads);
    let (client, mut reports) = demo_client(plain).await;
    let reason = failure(&mut reports).await;
    assert!(
        reason.contains("the server speaks TLS and this client does not: pass --tls-ca"),
        "{reason}"
    );
    client.stop().await;
    let doc = status_where(&served, &pki, "the refusal", |d| {
        !d.tls.as_ref().unwrap().handshake_failures.is_empty()
    })
    .await;
    let refused = &doc.tls.unwrap().handshake_failures[0];
    assert!(refused.reason.contains("plaintext HTTP/2"), "{refused:?}");
    assert!(refused.peer.starts_with("127.0.0.1:"), "{refused:?}");
}

#[tokio::test]
async fn mtls_untrusted_client_cert_is_refused_on_both_sides() {
    let pki = Pki::new();
    let served = serve_tls(&pki, true, |_| {}).await;
    let rogue = Some((pki.rogue_cert.as_path(), pki.rogue_key.as_path()));
    let config = tls_client(&served, Source::Ads, &pki.ca_file, rogue);
    let (client, mut reports) = demo_client(config).await;
    let reason = failure(&mut reports).await;
    // Its alert may also lose the race with the first stream (TLS 1.3): the words differ, the
    // advice is the same.
    let advice = "requires a client certificate signed by its --tls-client-ca";
    assert!(reason.contains(advice), "{reason}");
    client.stop().await;
    let no_cert = tls_client(&served, Source::Ads, &pki.ca_file, None);
    let (client, mut reports) = demo_client(no_cert).await;
    let reason = failure(&mut reports).await;
    assert!(reason.contains(advice), "{reason}");
    client.stop().await;
    let doc = status_where(&served, &pki, "both refusals", |d| {
        d.tls.as_ref().unwrap().handshake_failures.len() >= 2
    })
    .await;
    let reasons: Vec<String> = doc
        .tls
        .unwrap()
        .handshake_failures
        .into_iter()
        .map(|f| f.reason)
        .collect();
    let said = |text: &str| reasons.iter().any(|r| r.contains(text));
    assert!(said("not signed by --tls-client-ca"), "{reasons:?}");
    assert!(said("sent no certificate"), "{reasons:?}");
    assert!(doc.streams.is_empty(), "nobody got in");
}

#[tokio::test]
async fn tls_untrusted_server_cert_is_refused_on_both_sides() {
    let pki = Pki::new();
    let served = serve_tls(&pki, false, |_| {}).await;
    let config = tls_client(&served, Source::Ads, &pki.other_ca_file, None);
    let (client, mut reports) = demo_client(config).await;
    let reason = failure(&mut reports).await;
    let ca = pki.other_ca_file.display().to_string();
    assert!(
        reason.contains(&format!(
            "the server's certificate is not signed by --tls-ca {ca}"
        )),
        "{reason}"
    );
    client.stop().await;
    let doc = status_where(&served, &pki, "the refusal", |d| {
        !d.tls.as_ref().unwrap().handshake_failures.is_empty()
    })
    .await;
    let refused = &doc.tls.unwrap().handshake_failures[0];
    assert!(
        refused
            .reason
            .contains("the client refused the server's certificate"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn tls_client_to_a_plaintext_server_is_told_so() {
    let served = crate::client_support::FixtureServer::demo().await;
    let pki = Pki::new();
    let mut config = crate::client_support::config(served.addr(), Source::Ads);
    config.tls = Some(load_tls(&pki.ca_file, None, None).unwrap());
    let (client, mut reports) = demo_client(config).await;
    let reason = failure(&mut reports).await;
    assert!(reason.contains("the server did not answer TLS"), "{reason}");
    client.stop().await;
}

#[tokio::test]
async fn rest_source_over_tls() {
    let pki = Pki::new();
    let served = serve_tls(&pki, true, |_| {}).await;
    let identity = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let mut config = tls_client(&served, Source::Rest, &pki.ca_file, identity);
    config.refresh_delay = Duration::from_millis(50);
    let (client, _reports) = demo_client(config).await;
    let snapshot = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &snapshot, &Source::Rest)).await;
    client.stop().await;
    // Plaintext REST to the TLS port gets the server's answer, in words.
    let plain = crate::client_support::config(served.addr(), Source::Rest);
    let (client, mut reports) = demo_client(plain).await;
    let reason = failure(&mut reports).await;
    assert!(
        reason.contains("this port speaks TLS: use https://"),
        "{reason}"
    );
    client.stop().await;
}

#[tokio::test]
async fn fleet_over_mtls() {
    let pki = Pki::new();
    let served = serve_tls(&pki, true, |_| {}).await;
    let mut config = FleetConfig::new(served.addr().to_string(), 20);
    config.connections = 2;
    let identity = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    config.tls = Some(load_tls(&pki.ca_file, identity, None).unwrap());
    let fleet = Fleet::start(config).unwrap();
    let configured = poll_until("the fleet to configure 20 nodes", WAIT, async || {
        let progress = fleet.progress();
        match progress.configured < 20 {
            true => Err(format!("{progress:?}, {:?}", fleet.report().last_error)),
            false => Ok(()),
        }
    });
    configured.await.unwrap_or_else(|e| panic!("{e}"));
    let doc = status_where(&served, &pki, "20 streams", |d| d.streams.len() == 20).await;
    assert!(doc.streams.iter().all(|s| {
        s.identity
            .as_ref()
            .is_some_and(|i| i.uri_sans == [CLIENT_SPIFFE])
    }));
    fleet.stop().await;
}

#[test]
fn client_key_that_does_not_match_its_certificate_is_named_with_both_files() {
    let pki = Pki::new();
    // The rogue key belongs to another certificate.
    let identity = Some((pki.client_cert.as_path(), pki.rogue_key.as_path()));
    let error = load_tls(&pki.ca_file, identity, None)
        .unwrap_err()
        .to_string();
    let (key, cert) = (pki.rogue_key.display(), pki.client_cert.display());
    assert!(
        error.contains(&format!(
            "--tls-key {key}: does not go with the certificate in --tls-cert {cert}"
        )),
        "{error}"
    );
}

#[tokio::test]
async fn status_without_a_client_certificate_on_mtls_says_one_is_required() {
    let pki = Pki::new();
    let served = serve_tls(&pki, true, |_| {}).await;
    let error = remote::fetch_with(&served.addr().to_string(), &admin_access(&pki, None))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("requires a client certificate"), "{error}");
    assert!(error.contains("--tls-cert FILE --tls-key FILE"), "{error}");
    assert!(
        !error.contains("is xdsloop-server listening there"),
        "{error}"
    );
}
