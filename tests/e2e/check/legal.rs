//! The legal half of the matrix: the naive double making each choice the xDS protocol page
//! allows (and xdsloop-server does not make) runs the whole suite, fixture edits included,
//! and no check FAILs. The illegal half is `naive.rs` and `naive_edits.rs`.

use xdsloop_client::check::{CHECKS, CheckReport, Outcome};

use super::{base_dir, config, fails, result, run};
use crate::harness::{Legal, NaiveServer};

/// The whole suite against the double making `legal`, over its own fixture directory; no
/// FAIL, and the directory put back.
async fn suite(legal: Legal) -> CheckReport {
    let dir = base_dir();
    let server = NaiveServer::start_legal(dir.path(), legal).await;
    let report = run(&config(server.addr, Some(dir.path()), &[])).await;
    assert!(
        fails(&report).is_empty(),
        "{legal:?}:\n{}",
        fails(&report).join("\n")
    );
    assert_eq!(report.summary().exit, 0, "{legal:?}");
    assert!(report.fixtures.as_ref().unwrap().ok(), "{legal:?}");
    report
}

/// Every check PASSes, not only none FAILs: the choice hides nothing from the suite.
fn all_pass(report: &CheckReport) {
    let other: Vec<String> = report
        .results
        .iter()
        .filter(|r| !matches!(r.outcome, Outcome::Pass(_)))
        .map(|r| r.line())
        .collect();
    assert!(other.is_empty(), "{}", other.join("\n"));
    assert_eq!(report.results.len(), CHECKS.len());
}

fn passes_with(report: &CheckReport, id: &str, wanted: &str) {
    match &result(report, id).outcome {
        Outcome::Pass(text) => assert!(text.contains(wanted), "{id}: {text}"),
        other => panic!("{id}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn answering_a_narrowed_request_with_an_empty_response_fails_nothing() {
    let report = suite(Legal::AnswerNarrowing).await;
    all_pass(&report);
    passes_with(&report, "S4.stale-nonce-ignored", "got no response");
    passes_with(&report, "S5.re-added-sent", "sent again");
}

#[tokio::test(flavor = "multi_thread")]
async fn eds_a_resource_per_response_fails_nothing() {
    let report = suite(Legal::GroupPerResource).await;
    all_pass(&report);
    passes_with(
        &report,
        "S5.named-set",
        "sent web alone (api unchanged, not resent",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn trusting_declared_versions_on_a_new_delta_stream_fails_nothing() {
    let report = suite(Legal::TrustDeclared).await;
    all_pass(&report);
    passes_with(
        &report,
        "S9.stale-version-sent",
        "(a version it never had) got eds",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn removals_in_either_order_fail_nothing() {
    let report = suite(Legal::RemovalsParentsFirst).await;
    all_pass(&report);
    let order = "removal (INFO, either order is fine): cds without it first, then eds";
    passes_with(&report, "S11.make-before-break", order);
}

/// Delta not served, either way: one NOTE, the Delta checks SKIP, S1 says it judged SotW
/// only; nothing FAILs.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_delta_is_one_note_and_the_delta_checks_skip() {
    for (legal, why) in [
        (
            Legal::DeltaUnimplemented,
            "DeltaAggregatedResources answered UNIMPLEMENTED",
        ),
        (
            Legal::DeltaReset,
            "the server ended the Delta stream at its first request",
        ),
    ] {
        let report = suite(legal).await;
        assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
        let note = &report.notes[0];
        assert!(note.starts_with("Delta not served: "), "{note}");
        assert!(note.contains(why), "{note}");
        for check in CHECKS {
            let outcome = &result(&report, check.id).outcome;
            match (check.delta, outcome) {
                (true, Outcome::Skip(text)) => assert_eq!(text, "Delta not served (see the NOTE)"),
                (false, Outcome::Pass(_)) => {}
                _ => panic!("{legal:?} {}: {outcome:?}", check.id),
            }
        }
        passes_with(
            &report,
            "S1.nonce-fresh",
            "no Delta responses (Delta not served",
        );
    }
}
