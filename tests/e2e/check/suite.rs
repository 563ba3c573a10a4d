//! The whole suite against xdsloop-server as the binary runs it (`app::start`: watcher and
//! every transport over a temp fixture directory), and xdsloop.large-responses against one whose message limit
//! is gRPC's 4 MiB default.

use std::{path::Path, time::Duration};
use xdsloop_server::testkit::poll_until;

use xdsloop_client::check::{self, CHECKS, Outcome};
use xdsloop_server::testkit::TestServer;

use super::{base_dir, base_files, config, result, run};
use crate::harness::FixtureServer;

/// Every path under `dir` with its content, to compare a directory before and after.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.push((path.display().to_string(), Vec::new()));
            out.extend(tree(&path));
        } else {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn xdsloop_server_passes_every_check_and_the_directory_is_put_back() {
    let mut server = FixtureServer::start(&base_files()).await;
    // The suite's probes break client rules on purpose (stale nonces, unknown types, streams
    // dropped with a response unanswered).
    server.allow_violations();
    let before = tree(server.dir.path());
    let mut config = config(server.addr(), Some(server.dir.path()), &[]);
    config.fixtures_subdir = "nodes/xdsloop-check".into();
    let report = run(&config).await;
    let not_passed: Vec<String> = report
        .results
        .iter()
        .filter(|r| !matches!(r.outcome, Outcome::Pass(_)))
        .map(|r| r.line())
        .collect();
    assert!(not_passed.is_empty(), "{}", not_passed.join("\n"));
    assert_eq!(report.results.len(), CHECKS.len());
    assert_eq!(report.summary().exit, 0);
    let restored = report.fixtures.as_ref().expect("--fixtures given");
    assert!(restored.ok(), "{restored:?}");
    assert!(restored.written > 0);
    assert_eq!(
        tree(server.dir.path()),
        before,
        "the directory is as it was found"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_fixtures_the_edit_checks_skip_and_say_what_they_need() {
    let server = FixtureServer::start(&base_files()).await;
    let only = [
        "ack-nack.1",
        "proto.delta-request.4",
        "xdsloop.large-responses",
    ];
    let report = run(&config(server.addr(), None, &only)).await;
    for id in only {
        let outcome = &result(&report, id).outcome;
        let Outcome::Skip(why) = outcome else {
            panic!("{id}: {outcome:?}");
        };
        assert!(why.contains("needs --fixtures DIR"), "{id}: {why}");
    }
    assert_eq!(report.summary().exit, 0);
    assert!(report.fixtures.is_none());
}

/// A `--fixtures` directory the server does not serve: said once, the edit checks SKIP
/// instead of failing on pushes that never come, and nothing is written there.
#[tokio::test(flavor = "multi_thread")]
async fn a_fixture_directory_the_server_does_not_serve_is_one_note_and_the_edits_skip() {
    let server = FixtureServer::start(&base_files()).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let only = [
        "ack-nack.1",
        "eventual-consistency",
        "xdsloop.large-responses",
    ];
    let report = run(&config(server.addr(), Some(elsewhere.path()), &only)).await;
    assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
    let note = &report.notes[0];
    assert!(
        note.contains("probably not the directory the server serves: it serves 7 resource names ([admin, api, db, ingress, local, metrics, web])"),
        "{note}"
    );
    for id in ["ack-nack.1", "eventual-consistency.2"] {
        let outcome = &result(&report, id).outcome;
        let Outcome::Skip(why) = outcome else {
            panic!("{id}: {outcome:?}");
        };
        assert!(why.contains("probably not the directory"), "{id}: {why}");
    }
    assert!(matches!(
        result(&report, "xdsloop.large-responses").outcome,
        Outcome::Skip(_)
    ));
    assert_eq!(report.summary().exit, 0);
    let restored = report.fixtures.as_ref().expect("still checked");
    assert!(restored.ok() && restored.written == 0, "{restored:?}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

/// Ctrl-C while a check has its file in the directory: the run stops, says so (exit 2) and
/// still removes the file.
#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_run_still_puts_the_directory_back() {
    let server = FixtureServer::start(&base_files()).await;
    let before = tree(server.dir.path());
    let config = config(server.addr(), Some(server.dir.path()), &["ack-nack.1"]);
    let journal = server.dir.path().join(".xdsloop-check-journal");
    // The journal is written just before the check's first file: interrupt right then.
    let ctrl_c = async {
        let written = poll_until("the check's journal", Duration::from_secs(60), async || {
            journal.exists()
        });
        written.await.unwrap_or_else(|e| panic!("{e}"));
    };
    let run = check::run(&config, ctrl_c, |_| {});
    let report = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap()
        .unwrap();
    assert!(report.interrupted);
    assert!(report.results.is_empty(), "{:?}", report.results);
    assert_eq!(report.summary().exit, 2);
    assert!(report.fixtures.as_ref().unwrap().ok());
    assert!(
        report.fixtures.as_ref().unwrap().written > 0,
        "it had written"
    );
    assert_eq!(tree(server.dir.path()), before);
}

/// xdsloop.large-responses' breaker is the real server with gRPC's default limit: the 6.4 MB CDS response it
/// would send becomes OUT_OF_RANGE. The same server with its default limit passes.
#[tokio::test(flavor = "multi_thread")]
async fn large_responses_fail_against_a_server_limited_to_4_mib() {
    for (limit, passes) in [(64 << 20, true), (4 << 20, false)] {
        let dir = base_dir();
        let server = TestServer::builder()
            .fixtures(dir.path())
            .admin()
            .max_message_bytes(limit)
            .configure(|config| config.debounce = Duration::from_millis(20));
        let server = server.start().await.unwrap();
        let report = run(&config(
            server.addr(),
            Some(dir.path()),
            &["xdsloop.large-responses"],
        ))
        .await;
        let outcome = &result(&report, "xdsloop.large-responses").outcome;
        match (passes, outcome) {
            (true, Outcome::Pass(text)) => assert!(text.contains("arrived whole"), "{text}"),
            (false, Outcome::Fail(evidence)) => {
                let wanted = "did not arrive: the server ended the stream: OutOfRange";
                assert!(evidence.contains(wanted), "{evidence}");
                // xdsloop's rule, not the spec's: a SHOULD, failing the run with --strict.
                assert_eq!(report.summary().failed_should, 1);
                assert_eq!(report.summary().exit, 0);
            }
            _ => panic!("limit {limit}: {outcome:?}"),
        }
        assert!(report.fixtures.as_ref().unwrap().ok());
        server.shutdown().await.unwrap();
    }
}

/// An EDS answer whose resource does not decode: the names the suite needs are too few, and
/// the SKIP says why (not "the server's CDS names 1 EDS cluster").
#[tokio::test(flavor = "multi_thread")]
async fn an_undecodable_endpoint_is_named_in_the_skip_it_causes() {
    let yaml = "version: 1\nrules:\n- id: bad-eds\n  match: {type: eds}\n  when: {nth: 1}\n  times: 1\n  do: {corrupt: {}}\n";
    let mut server = crate::faults::served_with(yaml).await;
    // The suite's probes break client rules on purpose.
    server.allow_violations();
    // resource-hints.4 needs two EDS names; the demo serves two, one now undecodable.
    let report = run(&config(server.addr(), None, &["resource-hints.4"])).await;
    let r = result(&report, "resource-hints.4");
    let eds = r.cases.iter().find(|c| c.case.starts_with("eds sotw ads"));
    let why = eds.map(|c| c.outcome.text()).unwrap_or_default();
    assert!(
        matches!(eds.map(|c| &c.outcome), Some(Outcome::Skip(_))),
        "{:?}",
        eds
    );
    assert!(why.contains("do not decode as eds"), "{why}");
}
