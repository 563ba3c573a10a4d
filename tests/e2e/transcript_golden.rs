//! Golden transcripts: one deterministic session, recorded on both sides, must
//! compare equal under `transcript diff` with the files in `tests/e2e/golden/`. The session:
//! the server over `fixtures/demo`, `xdsloop-client` over ADS following LDS and CDS to RDS and
//! EDS, refusing web's endpoints (so the files hold a NACK too).
//!
//! After an intended change of what goes on the wire, regenerate them and review the change:
//!
//! ```sh
//! make golden        # XDSLOOP_BLESS=1 cargo test -p xdsloop-tests --test e2e transcript_golden
//! ```

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::SystemTime,
};

use tokio::sync::{broadcast, oneshot};
use xdsloop_client::{ReceivedReports, Report, Source, Validator, cli::record::Recorder};
use xdsloop_proto::type_url::ENDPOINT;
use xdsloop_server::{app::Recording, testkit::TestServer};
use xdsloop_tests::copy_dir;
use xdsloop_transcript::{diff, read_file};

use crate::client_support::{config, demo_client, demo_dir};
use crate::harness::registry_until;

fn golden(side: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("e2e/golden/{side}.jsonl"))
}

fn refuse_web_endpoints() -> Validator {
    Arc::new(
        |type_url: &str, name: &str, _: &[u8]| match (type_url, name) {
            (ENDPOINT, "web") => Err("web's endpoints refused by the test".to_string()),
            _ => Ok(()),
        },
    )
}

/// The session, recorded to `dir/server.jsonl` and `dir/client.jsonl`. `validator`: the
/// client's check of every resource (the golden session refuses web's endpoints).
async fn session(dir: &Path, validator: Option<Validator>) -> (PathBuf, PathBuf) {
    let (server_path, client_path) = (dir.join("server.jsonl"), dir.join("client.jsonl"));
    let fixtures = dir.join("fixtures");
    copy_dir(&demo_dir(), &fixtures);
    let recording = Recording {
        path: server_path.clone(),
        resources: false,
    };
    let server = TestServer::builder()
        .fixtures(&fixtures)
        .admin()
        .configure(move |config| config.record = Some(recording.clone()))
        .start()
        .await
        .unwrap();

    let mut client_config = config(server.addr(), Source::Ads);
    client_config.validator = validator;
    client_config.received_reports = ReceivedReports::Names;
    let recorder = Recorder::create(&client_path, &client_config, false).unwrap();
    let (client, reports) = demo_client(client_config).await;
    let (stop, stopped) = oneshot::channel();
    let recording = tokio::spawn(record_client(recorder, reports, stopped));
    // Every type's latest response answered: the client has sent (and reported) everything.
    registry_until(server.registry(), "all four types answered", |streams| {
        streams.len() == 1
            && streams[0].types.len() == 4
            && streams[0].types.values().all(|t| {
                let sent = t.last_sent.as_ref().map(|s| &s.nonce);
                sent.is_some()
                    && (t.last_acked.as_ref().map(|a| &a.nonce) == sent
                        || t.last_nack.as_ref().map(|n| &n.nonce) == sent)
            })
    })
    .await;
    stop.send(()).unwrap();
    recording.await.unwrap();
    drop(client);
    registry_until(server.registry(), "the stream to close", |s| s.is_empty()).await;
    server.shutdown().await.unwrap();
    (server_path, client_path)
}

/// Records the client's reports until told to stop, then what is already reported.
async fn record_client(
    mut recorder: Recorder,
    mut reports: broadcast::Receiver<Report>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            report = reports.recv() => recorder.record(&report.unwrap(), SystemTime::now()).unwrap(),
            _ = &mut stopped => break,
        }
    }
    while let Ok(report) = reports.try_recv() {
        recorder.record(&report, SystemTime::now()).unwrap();
    }
    recorder.finish(SystemTime::now()).unwrap();
}

/// `transcript diff GOLDEN NEW`, or with `XDSLOOP_BLESS=1` the new file becomes the golden one.
fn compare(side: &str, new: &Path) -> diff::Comparison {
    let golden = golden(side);
    if std::env::var_os("XDSLOOP_BLESS").is_some_and(|v| v == "1") {
        std::fs::copy(new, &golden).unwrap();
    }
    let expected = read_file(&golden).unwrap_or_else(|e| panic!("{e} (regenerate: make golden)"));
    let got = read_file(new).unwrap();
    diff::diff(&expected, &got, &diff::Options::default())
}

#[tokio::test]
async fn transcript_golden_session_matches_both_golden_files() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = session(dir.path(), Some(refuse_web_endpoints())).await;
    for (side, path) in [("server", server), ("client", client)] {
        let comparison = compare(side, &path);
        assert!(
            comparison.same,
            "{side} side differs from its golden file (after an intended change: make \
             golden):\n{}",
            comparison.report
        );
    }
}

#[tokio::test]
async fn transcript_golden_diff_catches_a_client_that_acks_what_it_used_to_nack() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = session(dir.path(), None).await;
    let expected = read_file(&golden("server")).unwrap();
    let comparison = diff::diff(&expected, &read_file(&server).unwrap(), &Default::default());
    assert!(!comparison.same, "{}", comparison.report);
    let report = &comparison.report;
    assert!(report.contains("@@ client-e2e#1 eds @@"), "{report}");
    let nack = report
        .lines()
        .find(|l| l.starts_with("- ") && l.contains("eds ← NACK"));
    let ack = report
        .lines()
        .find(|l| l.starts_with("+ ") && l.contains("eds ← ACK"));
    assert!(nack.is_some() && ack.is_some(), "{report}");
    assert!(
        report.ends_with("different: 1 of 5 sequences, compared per node, stream and type\n"),
        "only EDS changed: {report}"
    );
}
