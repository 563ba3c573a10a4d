//! `--replay FILE`: a run recorded with `--record --record-resources` served again to a new
//! `xdsloop-client`, which applies the same versions and ACKs and NACKs the same responses;
//! a client that strays from the recording gets a clear FAILED_PRECONDITION.

use std::{path::Path, sync::Arc};
use xdsloop_server::testkit::poll_until;

use tokio::sync::broadcast;
use xdsloop_client::{ClientConfig, Diff, Report, Source, Validator, Verdict};
use xdsloop_proto::type_url::ENDPOINT;
use xdsloop_server::{app, app::Recording, scenario::Scenario, testkit::TestServer};
use xdsloop_tests::copy_dir;

use crate::client_support::{config, demo_client, demo_dir, report};
use crate::harness::registry_until;

/// What the client made of one response.
type Applied = (String, String, String, Verdict, Diff);

/// The client's validator in the recorded run: the endpoints of `web` are refused.
fn refuse_web_endpoints() -> Validator {
    Arc::new(
        |type_url: &str, name: &str, _: &[u8]| match (type_url, name) {
            (ENDPOINT, "web") => Err("web's endpoints refused by the test".to_string()),
            _ => Ok(()),
        },
    )
}

/// The server over a copy of the demo, recording every stream with its resources to `path`.
async fn recording_server(dir: &Path, path: &Path) -> TestServer {
    copy_dir(&demo_dir(), dir);
    let recording = Recording {
        path: path.to_path_buf(),
        resources: true,
    };
    let server = TestServer::builder()
        .fixtures(dir)
        .admin()
        .configure(move |config| config.record = Some(recording.clone()));
    server.start().await.unwrap()
}

async fn replaying_server(path: &Path) -> TestServer {
    timed_replaying_server(path, false).await
}

async fn timed_replaying_server(path: &Path, timed: bool) -> TestServer {
    let path = path.to_path_buf();
    // A replay serves the recording; the fixture directory is not read.
    let server = TestServer::builder()
        .fixtures("not-read")
        .admin()
        .configure(move |config| {
            config.replay = Some(path.clone());
            config.replay_timing = timed;
        });
    server.start().await.unwrap()
}

/// The first `n` responses the client handled, by type.
async fn applied(reports: &mut broadcast::Receiver<Report>, n: usize) -> Vec<Applied> {
    let mut seen = Vec::new();
    for _ in 0..n {
        seen.push(
            report(reports, |r| match r {
                Report::Update(u) => Some((
                    u.type_url.clone(),
                    u.version.clone(),
                    u.nonce.clone(),
                    u.verdict.clone(),
                    u.diff.clone(),
                )),
                _ => None,
            })
            .await,
        );
    }
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    seen
}

/// Runs the demo client (LDS and CDS wildcard, following dependencies) against `server` until
/// it handled the demo's four types, then lets it go and waits until the server saw it leave.
async fn demo_session(server: &TestServer, config: ClientConfig) -> Vec<Applied> {
    let (client, mut reports) = demo_client(config).await;
    let seen = applied(&mut reports, 4).await;
    drop(client);
    registry_until(server.registry(), "the client's streams to close", |s| {
        s.is_empty()
    })
    .await;
    seen
}

async fn record_then_replay(source: Source) {
    record_then_replay_timed(source, false).await;
}

async fn record_then_replay_timed(source: Source, timed: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let fixtures = dir.path().join("fixtures");
    let recording = recording_server(&fixtures, &path).await;
    let mut recorded_config = config(recording.addr(), source.clone());
    recorded_config.validator = Some(refuse_web_endpoints());
    let recorded = demo_session(&recording, recorded_config).await;
    recording.shutdown().await.unwrap();
    let nacked = recorded.iter().filter(|a| matches!(a.3, Verdict::Nack(_)));
    assert_eq!(
        nacked.count(),
        1,
        "the recorded run NACKs web's endpoints: {recorded:#?}"
    );

    let replaying = timed_replaying_server(&path, timed).await;
    let mut replay_config = config(replaying.addr(), source);
    replay_config.validator = Some(refuse_web_endpoints());
    let replayed = demo_session(&replaying, replay_config).await;
    assert_eq!(
        replayed, recorded,
        "same versions, nonces, ACKs and NACKs, same store changes"
    );
    let view = replaying.registry().replay().expect("replaying").view();
    assert_eq!(
        (view.matched, view.failures),
        (view.requests, 0),
        "{view:#?}"
    );
    assert_eq!(view.bound, view.streams);
    let judged = replaying.registry().counters().violations;
    assert_eq!(
        judged, 0,
        "the judge finds nothing wrong with a client that replays well"
    );
    replaying.shutdown().await.unwrap();
}

#[tokio::test]
async fn replay_of_an_ads_sotw_run_applies_the_same_versions_and_acks() {
    record_then_replay(Source::Ads).await;
}

#[tokio::test]
async fn replay_timing_of_an_ads_sotw_run_applies_the_same_versions_and_acks() {
    record_then_replay_timed(Source::Ads, true).await;
}

#[tokio::test]
async fn replay_of_an_ads_delta_run_applies_the_same_versions_and_acks() {
    record_then_replay(Source::AdsDelta).await;
}

#[tokio::test]
async fn replay_of_a_per_type_sotw_run_applies_the_same_versions_and_acks() {
    record_then_replay(Source::Grpc).await;
}

#[tokio::test]
async fn replay_of_a_per_type_delta_run_applies_the_same_versions_and_acks() {
    record_then_replay(Source::DeltaGrpc).await;
}

#[tokio::test]
async fn replay_to_a_client_that_strays_ends_its_stream_naming_the_recorded_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let recording = recording_server(&dir.path().join("fixtures"), &path).await;
    let mut recorded_config = config(recording.addr(), Source::Ads);
    recorded_config.validator = Some(refuse_web_endpoints());
    demo_session(&recording, recorded_config).await;
    recording.shutdown().await.unwrap();
    let transcript = xdsloop_transcript::read_file(&path).unwrap();
    let nack_line = transcript.events.iter().find_map(|n| match &n.event.what {
        xdsloop_transcript::What::Request(r) if r.error_detail.is_some() => Some(n.line),
        _ => None,
    });
    let nack_line = nack_line.expect("the recording has the NACK");

    // This client accepts web's endpoints: its ACK is not the recorded NACK.
    let replaying = replaying_server(&path).await;
    let (client, mut reports) = demo_client(config(replaying.addr(), Source::Ads)).await;
    let (code, message) = report(&mut reports, |r| match r {
        Report::StreamClosed { end, .. } => end.status.clone(),
        _ => None,
    })
    .await;
    drop(client);
    assert_eq!(code, "FAILED_PRECONDITION");
    let place = format!("replay: {}:{nack_line} expected eds NACK", path.display());
    assert!(message.starts_with(&place), "{message}");
    assert!(message.contains(", got eds ACK "), "{message}");
    let status = crate::harness::http_get(replaying.addr(), "/status")
        .await
        .json();
    assert_eq!(status["replay"]["error"]["line"], nack_line);
    assert_eq!(status["replay"]["error"]["message"], message.as_str());
    replaying.shutdown().await.unwrap();
}

#[tokio::test]
async fn replay_of_a_recording_without_bodies_is_a_start_up_error_naming_its_line() {
    // A real `--record` file, written without --record-resources: line 4 is its first response.
    let path = demo_dir().join("../../examples/transcripts/demo-recorded.jsonl");
    let mut config = app::Config::new("not-read");
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.replay = Some(path.clone());
    let error = app::start(config).await.unwrap_err().to_string();
    let expected = format!(
        "--replay {}:4: response without resources; record with --record-resources",
        path.display()
    );
    assert_eq!(error, expected);
}

#[tokio::test]
async fn replay_of_a_client_recording_is_a_start_up_error_at_line_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.jsonl");
    let header = r#"{"schema":"xdsloop.transcript.v1","kind":"header","side":"client","tool":"xdsloop-client 0.1.0","started":"2026-03-02T09:30:00Z","resources":true}"#;
    std::fs::write(&path, format!("{header}\n")).unwrap();
    let mut config = app::Config::new("not-read");
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.replay = Some(path.clone());
    let error = app::start(config).await.unwrap_err().to_string();
    let expected = format!(
        "--replay {}:1: a client recording: --replay needs",
        path.display()
    );
    assert!(error.starts_with(&expected), "{error}");
}

/// The first CDS response of the run ends its stream instead.
const CLOSE_FIRST_CDS: &str = "version: 1\nrules:\n- id: maintenance\n  match: {type: cds}\n  times: 1\n  do: {close: {code: UNAVAILABLE, message: maintenance}}\n";

/// The status the client's stream ended with, then the client reconnected and got endpoints
/// (which come only after CDS, so only on the new stream).
async fn closed_then_resynced(
    client: &xdsloop_client::Client,
    reports: &mut broadcast::Receiver<Report>,
) -> (String, String) {
    let end = report(reports, |r| match r {
        Report::StreamClosed { end, .. } => Some(end.status.clone()),
        _ => None,
    })
    .await
    .expect("the stream ended with a gRPC status");
    crate::client_support::store_where(client, |s| s.of_type(ENDPOINT).is_some()).await;
    end
}

#[tokio::test]
async fn replay_of_a_fault_close_ends_the_stream_with_its_status_and_the_client_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let recording = recording_server(&dir.path().join("fixtures"), &path).await;
    let scenario = Scenario::from_yaml(CLOSE_FIRST_CDS).unwrap();
    recording.set_scenario(scenario).unwrap();
    let (client, mut reports) = demo_client(config(recording.addr(), Source::Ads)).await;
    let recorded_end = closed_then_resynced(&client, &mut reports).await;
    assert_eq!(recorded_end, ("UNAVAILABLE".into(), "maintenance".into()));
    drop(client);
    registry_until(recording.registry(), "the client's streams to close", |s| {
        s.is_empty()
    })
    .await;
    recording.shutdown().await.unwrap();
    let transcript = xdsloop_transcript::read_file(&path).unwrap();
    let fault_close = transcript.events.iter().find_map(|n| match &n.event.what {
        xdsloop_transcript::What::Close(close)
            if close.reason == xdsloop_transcript::line::CloseReason::Fault =>
        {
            Some(close.clone())
        }
        _ => None,
    });
    let status = fault_close.expect("a close by the fault").status;
    let status = status.expect("the close line records the status the client got");
    assert_eq!(
        (status.code.as_str(), status.message.as_str()),
        ("UNAVAILABLE", "maintenance")
    );

    let replaying = replaying_server(&path).await;
    let (client, mut reports) = demo_client(config(replaying.addr(), Source::Ads)).await;
    let replayed_end = closed_then_resynced(&client, &mut reports).await;
    assert_eq!(
        replayed_end, recorded_end,
        "the replay ends the stream the same way"
    );
    drop(client);
    let view = replaying.registry().replay().expect("replaying").view();
    assert_eq!((view.streams, view.failures), (2, 0), "{view:#?}");
    assert_eq!(view.bound, 2, "the client reconnected: {view:#?}");
    replaying.shutdown().await.unwrap();
}

/// `/status` until `done` holds.
async fn status_until(
    addr: std::net::SocketAddr,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let found = poll_until("/status to show it", crate::harness::TIMEOUT, async || {
        let status = crate::harness::http_get(addr, "/status").await.json();
        if done(&status) {
            Ok(status)
        } else {
            Err(status)
        }
    });
    found.await.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn replay_status_and_page_show_the_requests_the_replay_and_a_fixed_load_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let recording = recording_server(&dir.path().join("fixtures"), &path).await;
    let mut recorded_config = config(recording.addr(), Source::Ads);
    recorded_config.validator = Some(refuse_web_endpoints());
    demo_session(&recording, recorded_config).await;
    recording.shutdown().await.unwrap();

    let replaying = replaying_server(&path).await;
    let mut replay_config = config(replaying.addr(), Source::Ads);
    replay_config.validator = Some(refuse_web_endpoints());
    let (client, mut reports) = demo_client(replay_config).await;
    applied(&mut reports, 4).await;
    let status = status_until(replaying.addr(), |s| {
        s["replay"]["matched"] == s["replay"]["requests"]
            && s["streams"][0]["types"]
                .as_array()
                .is_some_and(|t| t.len() == 4)
    })
    .await;
    let types = status["streams"][0]["types"].as_array().unwrap();
    let state = |alias: &str| {
        let t = types.iter().find(|t| t["type"] == alias).unwrap();
        (
            t["state"].as_str().unwrap().to_string(),
            t["last_sent"]["nonce"].clone(),
        )
    };
    assert_eq!(state("cds").0, "SYNCED", "{status:#}");
    assert_eq!(
        state("eds").0,
        "NACKED",
        "the client refused web's endpoints: {status:#}"
    );
    assert!(state("lds").1.is_string(), "{status:#}");
    assert_eq!(status["totals"]["nacked"], 1, "{status:#}");
    // Time passes with nothing to load: the load time `/status` shows must not move.
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    let again = crate::harness::http_get(replaying.addr(), "/status")
        .await
        .json();
    assert_eq!(
        again["reload"]["at"], status["reload"]["at"],
        "the one load, at start-up"
    );

    let mut page = crate::harness::Sse::open(replaying.addr(), "/events").await;
    let grid = page.next().await;
    let replay = &grid.data["replay"];
    assert_eq!(
        replay["file"],
        path.display().to_string(),
        "{:#}",
        grid.data
    );
    assert_eq!(replay["matched"], replay["requests"], "{:#}", grid.data);
    drop(client);
    replaying.shutdown().await.unwrap();
}
