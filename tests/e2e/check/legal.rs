//! The legal half of the matrix: the naive double making each choice the spec allows (and
//! xdsloop-server does not make) runs the whole suite, fixture edits included, and no check
//! FAILs. The plain double passes every check, so each check has a legal variant it PASSes.

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
    let r = result(report, id);
    let cases: Vec<&str> = r.cases.iter().map(|c| c.outcome.text()).collect();
    match &r.outcome {
        Outcome::Pass(_) => assert!(
            cases.iter().any(|t| t.contains(wanted)),
            "{id}: no case says {wanted:?}: {cases:?}"
        ),
        other => panic!("{id}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plain_double_passes_every_check() {
    all_pass(&suite(Legal::Plain).await);
}

/// The choices that leave every check judgeable: every check PASSes against each, run at
/// once. Churn: every resource changes every 150 ms, so pushes of every type cross every
/// request the suite sends; a push of a type is never taken for the answer to another, and a
/// push with new content never for a needless one.
#[tokio::test(flavor = "multi_thread")]
async fn every_legal_choice_passes_every_check() {
    let legal = [
        Legal::AnswerNarrowing,
        Legal::GroupPerResource,
        Legal::TrustDeclared,
        Legal::IgnoreDeclared,
        Legal::ResendAll,
        Legal::PushUnsubscribed,
        Legal::SkipResumedWildcard,
        Legal::RemovalsParentsFirst,
        Legal::Churn,
    ];
    let reports = futures::future::join_all(legal.map(suite)).await;
    for report in &reports {
        all_pass(report);
    }
    passes_with(&reports[0], "resource-updates.3", "got no response");
    // Grouped per resource: the widened EDS request is answered with the added name alone.
    passes_with(
        &reports[1],
        "resource-hints.4",
        "eds [api] then [api, web]: sent eds v",
    );
    let grouped = result(&reports[1], "resource-hints.4")
        .cases
        .iter()
        .any(|c| {
            let text = c.outcome.text();
            text.starts_with("eds [api] then [api, web]: sent eds v") && text.ends_with("\" [web]")
        });
    assert!(grouped, "no SotW EDS case shows b sent alone");
    for r in &reports[2..4] {
        passes_with(r, "proto.delta-request.5", "-missing-version-stale got");
    }
}

/// Delta not served, either way: one NOTE, the Delta cases SKIP, nothing FAILs.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_delta_is_one_note_and_the_delta_cases_skip() {
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
        for r in &report.results {
            for case in r.cases.iter().filter(|c| c.case.contains(" delta ")) {
                assert_eq!(
                    case.outcome,
                    Outcome::Skip("Delta not served (see the NOTE)".into()),
                    "{legal:?} {} {}",
                    r.check.id,
                    case.case
                );
            }
        }
    }
}

/// Only ADS served: one NOTE, the per-type cases SKIP, nothing FAILs.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_of_ads_only_is_one_note_and_the_per_type_cases_skip() {
    let report = suite(Legal::AdsOnly).await;
    assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
    assert!(
        report.notes[0].contains("the per-type services are not served"),
        "{:?}",
        report.notes
    );
    let skipped = report
        .results
        .iter()
        .flat_map(|r| &r.cases)
        .filter(|c| c.case.contains("-service"));
    for case in skipped {
        assert!(
            matches!(case.outcome, Outcome::Skip(_)),
            "{}: {:?}",
            case.case,
            case.outcome
        );
    }
}
