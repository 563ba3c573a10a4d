//! Reaching the server: `check` judges xdsloop-server over TLS and mTLS like over plaintext,
//! and a server it cannot talk to (TLS on one side only, a refused client certificate, a
//! refused connection) ends the run with the reason and exit 2, never with FAIL lines.

use std::future::pending;

use clap::Parser;
use xdsloop_client::check::command::{self, CheckArgs};
use xdsloop_client::check::{CheckConfig, Outcome};
use xdsloop_tests::certs::Pki;

use super::{fails, result, run};
use crate::security::serve_tls;

/// The wire-only suite over TLS (mTLS with `identity`): nothing FAILs, the checks that edit
/// fixtures SKIP, and the wire-only ones that the served set allows PASS, Delta ones too.
async fn passes_over_tls(mtls: bool) {
    let pki = Pki::new();
    let mut served = serve_tls(&pki, mtls, |_| {}).await;
    // The suite's probes break client rules on purpose (stale nonces, unknown types).
    served.allow_violations();
    let identity = mtls.then_some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let mut config = CheckConfig::new(served.addr().to_string());
    config.tls = Some(xdsloop_client::load_tls(&pki.ca_file, identity, None).unwrap());
    let report = run(&config).await;
    assert!(fails(&report).is_empty(), "{}", fails(&report).join("\n"));
    assert_eq!(report.summary().exit, 0);
    for r in report.results.iter().filter(|r| r.check.edits) {
        assert!(
            matches!(r.outcome, Outcome::Skip(_)),
            "{}: {:?}",
            r.check.id,
            r.outcome
        );
    }
    for id in [
        "basic-protocol.1",
        "basic-protocol.4",
        "resource-update.1",
        "proto.delta-request.5",
    ] {
        let outcome = &result(&report, id).outcome;
        assert!(
            matches!(outcome, Outcome::Pass(_)),
            "{id} over TLS: {outcome:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn check_passes_xdsloop_server_over_tls() {
    passes_over_tls(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn check_passes_xdsloop_server_over_mtls() {
    passes_over_tls(true).await;
}

/// `xdsloop-client check` as run from the shell: its exit code, stdout and stderr.
async fn shell(args: &[&str]) -> (u8, String, String) {
    let argv = ["xdsloop-client check"].iter().chain(args);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = command::run(CheckArgs::parse_from(argv), pending(), &mut out, &mut err).await;
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (code, text(out), text(err))
}

/// Exit 2 with `reason` on stderr and no check line on stdout.
fn cannot_judge((code, out, err): (u8, String, String), reason: &str) {
    assert_eq!(code, 2, "stdout: {out}\nstderr: {err}");
    assert!(out.is_empty(), "no check ran: {out}");
    assert!(err.contains(reason), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_it_cannot_talk_to_is_exit_2_with_the_reason_not_a_fail() {
    let pki = Pki::new();
    let tls = serve_tls(&pki, true, |_| {}).await;
    let addr = tls.addr().to_string();
    let plaintext = shell(&["--server", &addr]).await;
    cannot_judge(
        plaintext,
        "the server speaks TLS and this client does not: pass --tls-ca FILE",
    );
    let ca = pki.ca_file.display().to_string();
    let no_cert = shell(&["--server", &addr, "--tls-ca", &ca]).await;
    cannot_judge(
        no_cert,
        "requires a client certificate signed by its --tls-client-ca",
    );
    let other = pki.other_ca_file.display().to_string();
    let (cert, key) = (pki.client_cert.display(), pki.client_key.display());
    let (cert, key) = (cert.to_string(), key.to_string());
    let untrusted = shell(&[
        "--server",
        &addr,
        "--tls-ca",
        &other,
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ])
    .await;
    cannot_judge(
        untrusted,
        "the server's certificate is not signed by --tls-ca",
    );
    let plain = crate::client_support::FixtureServer::demo().await;
    let plain_addr = plain.addr().to_string();
    let tls_to_plain = shell(&["--server", &plain_addr, "--tls-ca", &ca]).await;
    cannot_judge(tls_to_plain, "the server did not answer TLS");
    // A port nobody listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let refused = shell(&["--server", &closed_addr]).await;
    cannot_judge(refused, "cannot connect to http://");
}

/// `--output json` still writes its document when the server cannot be judged: no checks, the
/// reason in `unjudged`, exit 2 in the summary as in the exit code.
#[tokio::test(flavor = "multi_thread")]
async fn an_unjudged_server_still_gets_a_json_document_with_the_reason() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let (code, out, err) = shell(&["--server", &closed_addr, "--output", "json"]).await;
    assert_eq!(code, 2, "stderr: {err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(doc["schema"], "xdsloop.check.v2");
    let why = doc["unjudged"].as_str().expect("the reason");
    assert!(why.starts_with("cannot connect to http://"), "{why}");
    assert_eq!(doc["checks"].as_array().map(Vec::len), Some(0));
    assert_eq!(doc["summary"]["exit"], 2);
    assert!(err.contains("cannot connect to http://"), "{err}");
}
