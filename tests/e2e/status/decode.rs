//! Issue #12 items 7-9 on a real server: a fixture edit the decoder refuses shows in `/status`
//! with its file and line, clients keep getting the last good snapshot, and fixing the file
//! recovers. The rejection never quotes secret material.

use std::path::{Path, PathBuf};

use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::{admin::status::remote, app::Running};

use super::{admin_addr, serving, status, status_until, synced_client};
use crate::harness::*;

fn invalid(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/invalid")
        .join(file)
}

/// What `/status` says about a rejected edit: the reload error, and the whole raw document.
struct Rejection {
    error: String,
    raw_status: String,
}

/// Writes `text` to `file` in a served directory (clusters `a` and `b`, a client synced on
/// CDS), and checks the rejection names `file` and `line`, and that the last good clusters
/// are what a client connecting now gets. Then restores the directory and checks recovery.
async fn rejected(file: &str, text: &str, line: usize) -> Rejection {
    let (dir, running) = serving().await;
    let (_watching, good_version) = synced_client(&running, "watching").await;
    let generation = status(&running).await.snapshot.generation;
    let path = dir.path().join(file);
    let before = std::fs::read(&path).ok();
    std::fs::write(&path, text).unwrap();

    let doc = status_until(&running, "the rejection", |d| !d.reload.ok).await;
    let error = doc.reload.error.clone().unwrap();
    assert_eq!(doc.reload.file.as_deref(), Some(path.to_str().unwrap()));
    let at = format!("{}: line {line}, column ", path.display());
    assert!(error.starts_with(&at), "expected {at:?} in {error}");
    assert_eq!(doc.snapshot.generation, generation, "still the last good");
    assert_last_good_is_served(&running, &good_version).await;
    let raw_status = remote::get(&admin_addr(&running), "/status")
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    match before {
        Some(bytes) => std::fs::write(&path, bytes).unwrap(),
        None => std::fs::remove_file(&path).unwrap(),
    }
    status_until(&running, "recovery", |d| d.reload.ok).await;
    running.shutdown().await.unwrap();
    Rejection { error, raw_status }
}

async fn assert_last_good_is_served(running: &Running, good_version: &str) {
    let mut fresh = SotwClient::connect(running.addr, "fresh").await;
    let response = fresh.subscribe(CLUSTER, &[]).await;
    let mut names = names_in(&response);
    names.sort();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(response.version_info, good_version);
}

fn shipped(file: &str) -> String {
    std::fs::read_to_string(invalid(file)).unwrap()
}

#[tokio::test]
async fn type_url_prefix_other_than_googleapis_is_rejected() {
    let rejection = rejected("more.yaml", &shipped("bad-type-prefix.yaml"), 3).await;
    assert!(
        rejection
            .error
            .contains("\"example.com/envoy.config.cluster.v3.Cluster\" must be"),
        "{}",
        rejection.error
    );
}

#[tokio::test]
async fn duplicate_yaml_key_is_rejected() {
    let rejection = rejected("more.yaml", &shipped("duplicate-key.yaml"), 5).await;
    assert!(rejection.error.contains("duplicate key `name`"));
}

/// The served file itself is edited so that cluster `a` would have been served as `zzz`.
#[tokio::test]
async fn duplicate_json_key_in_an_edited_file_is_rejected() {
    let text = format!(
        "[\n  {{\"@type\": \"{CLUSTER}\", \"name\": \"a\",\n   \"name\": \"zzz\"}},\n  \
         {{\"@type\": \"{CLUSTER}\", \"name\": \"b\"}}\n]\n"
    );
    let rejection = rejected("clusters.json", &text, 3).await;
    assert!(rejection.error.contains("duplicate key `name`"));
}

#[tokio::test]
async fn nan_and_inf_are_rejected() {
    let rejection = rejected("more.yaml", &shipped("nan-weight.yaml"), 6).await;
    assert!(rejection.error.contains("NaN is not allowed"));
    let inf = shipped("nan-weight.yaml").replace(".nan", "-.inf");
    let rejection = rejected("more.yaml", &inf, 6).await;
    assert!(rejection.error.contains("-infinity is not allowed"));
}

#[tokio::test]
async fn out_of_range_enum_number_is_rejected() {
    let rejection = rejected("more.yaml", &shipped("enum-number.yaml"), 5).await;
    assert!(
        rejection
            .error
            .contains("field `lb_policy`: 99 is not a value")
            && rejection.error.contains("ROUND_ROBIN (0)"),
        "{}",
        rejection.error
    );
}

#[tokio::test]
async fn secret_is_never_quoted_in_errors() {
    let rejection = rejected("secret.yaml", &shipped("secret-not-a-map.yaml"), 7).await;
    assert!(
        rejection.error.contains("tls_certificate.private_key"),
        "{}",
        rejection.error
    );
    for secret in ["PRIVATE KEY", "Tk9ULUEt"] {
        assert!(!rejection.error.contains(secret), "{}", rejection.error);
        assert!(
            !rejection.raw_status.contains(secret),
            "{}",
            rejection.raw_status
        );
    }
}
