//! The illegal half of the matrix: the naive double with one fault runs the whole suite,
//! fixture edits included, and exactly the checks whose sentences the fault breaks FAIL; the
//! test asserts the whole set. Every check of the catalog is failed by some fault here (or, for
//! xdsloop.large-responses, by a server with gRPC's 4 MiB limit in `suite.rs`).

use xdsloop_client::check::CHECKS;

use super::{base_dir, config, failed_ids, fails, run};
use crate::harness::{Bug, NaiveServer};

/// Each fault and the checks it must fail, and a phrase of the first one's evidence.
const FAULTS: &[(Bug, &[&str], &str)] = &[
    (Bug::NonceIsVersion, &["basic-protocol.4"], "sent twice for"),
    (
        Bug::AnyTypeV2,
        &["proto.discovery-response.1"],
        "has Any type_url \"type.googleapis.com/envoy.api.v2.",
    ),
    (
        Bug::ResponseTypeV2,
        &["rpc-services.1"],
        "a response of type \"type.googleapis.com/envoy.api.v2.",
    ),
    (
        Bug::ResendOnAck,
        &["resource-update.1"],
        "repeats what the client holds",
    ),
    (
        Bug::ResendOnNack,
        &["resource-update.1"],
        "repeats what the client",
    ),
    (
        Bug::PushAllOnAck,
        &["resource-update.1"],
        "repeats what the client holds",
    ),
    (
        Bug::AnswerStale,
        &["resource-updates.3"],
        "with stale nonce \"1\" (latest \"2\") was answered",
    ),
    (
        Bug::IgnoreWidening,
        &["resource-hints.4", "resource-hints.4/re-added"],
        "was not sent",
    ),
    (
        Bug::ReaddedNotResent,
        &["resource-hints.4/re-added"],
        "was not sent again",
    ),
    (
        Bug::StarIsLiteral,
        &["resource-hints.7"],
        "with no names gave",
    ),
    (
        Bug::EmptyIsWildcard,
        &["resource-hints.8"],
        "(no interest left), the server sent",
    ),
    (
        Bug::StarStays,
        &["resource-hints.11"],
        "as if the wildcard had stayed",
    ),
    (
        Bug::PartialState,
        &["grouping.2", "grouping.3"],
        "the answer lacks",
    ),
    (
        Bug::DuplicateNames,
        &["duplicate-names.1"],
        "appears twice in",
    ),
    (
        Bug::SkipResumed,
        &["ack-nack.3"],
        "(the current one) was not answered",
    ),
    (
        Bug::SilentEds,
        &[
            "basic-protocol.1",
            "delta-resource-not-existed.1",
            "proto.delta-request.5",
            "resource-hints.2",
            "resource-not-existed.3",
            "resource-warming.1",
        ],
        "eds",
    ),
    (
        Bug::DeltaSilentMissing,
        &["delta-unsubscribe.6", "delta-resource-not-existed.1"],
        "removed_resources",
    ),
    (
        Bug::DeltaResubscribeIgnored,
        &["resource-hints.4/re-added"],
        "again on the same stream",
    ),
    (
        Bug::DeltaTrustAnyDeclared,
        &["proto.delta-request.5"],
        "(a version it never had)",
    ),
    (
        Bug::DeltaStaleIgnored,
        &["delta.6"],
        "the subscription was not honoured",
    ),
    (
        Bug::DeltaPhantomCloses,
        &["delta-unsubscribe.4"],
        "(never subscribed)",
    ),
    (
        Bug::DeltaWildcardUnsubscribeSilent,
        &["delta-unsubscribe.6"],
        "was not reported in removed_resources",
    ),
    (Bug::DeltaNoNames, &["resource-names.1"], "has no name"),
    (
        Bug::UnknownTypeCloses,
        &["rpc-services.1"],
        "ended the stream",
    ),
    (
        Bug::MalformedKillsAll,
        &["rpc-services.1"],
        "after a malformed request on another connection",
    ),
    (
        Bug::PushUnasked,
        &["rpc-services.1"],
        "which this stream never asked for",
    ),
    (
        Bug::IgnoreEdits,
        &["resource-not-existed.3", "proto.delta-request.4"],
        "was not pushed",
    ),
    (
        Bug::ForgetMissing,
        &["resource-not-existed.3"],
        "a file creating it was not pushed",
    ),
    (
        Bug::FixedVersion,
        &["ack-nack.1"],
        "was pushed under the same version",
    ),
    (
        Bug::DependentsFirst,
        &["eventual-consistency.2"],
        "arrived before",
    ),
    (
        Bug::SkipBadFiles,
        &["xdsloop.bad-edit-keeps-last-good"],
        "became invalid JSON, the server pushed",
    ),
];

/// The whole suite against the double with `bug`, over its own fixture directory.
async fn failed_by(bug: Bug, expected: &[&str]) -> (Vec<&'static str>, Vec<String>) {
    let dir = base_dir();
    let server = NaiveServer::start(dir.path(), bug).await;
    let report = run(&config(server.addr, Some(dir.path()), &[])).await;
    assert!(
        report.fixtures.as_ref().unwrap().ok(),
        "{bug:?}: directory not restored"
    );
    let mut lines = fails(&report);
    // What the checks expected to fail said instead, for the failure message.
    let missed = report
        .results
        .iter()
        .filter(|r| expected.contains(&r.check.id));
    lines.extend(
        missed
            .filter(|r| !matches!(r.outcome, xdsloop_client::check::Outcome::Fail(_)))
            .map(|r| r.line()),
    );
    (failed_ids(&report), lines)
}

#[test]
fn every_check_has_a_fault_that_fails_it() {
    let failing: Vec<&str> = FAULTS
        .iter()
        .flat_map(|(_, ids, _)| ids.iter().copied())
        .collect();
    for check in CHECKS {
        let covered = failing.contains(&check.id) || check.id == "xdsloop.large-responses";
        assert!(covered, "no fault fails {}", check.id);
    }
}

/// Runs the suite against each fault of `faults` (as many at once as [`super::RUNS`] lets)
/// and returns what differs from the table, one line each.
async fn mismatches(faults: &[(Bug, &[&str], &str)]) -> Vec<String> {
    let each = faults.iter().map(|(bug, ids, phrase)| async move {
        let (failed, lines) = failed_by(*bug, ids).await;
        let mut expected: Vec<&str> = ids.to_vec();
        expected.sort_unstable();
        let mut got = failed.clone();
        got.sort_unstable();
        if got != expected {
            return Some(format!(
                "{bug:?}: expected {expected:?} to fail, got {got:?}:\n{}",
                lines.join("\n")
            ));
        }
        let first = lines.iter().find(|l| l.contains(ids[0]))?;
        if !first.contains(phrase) {
            return Some(format!("{bug:?}: evidence lacks {phrase:?}: {first}"));
        }
        (!first.contains(" — spec: "))
            .then(|| format!("{bug:?}: a FAIL quotes its sentence: {first}"))
    });
    futures::future::join_all(each)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The faults of the wire as a whole and of subscriptions (the first half of the table).
#[tokio::test(flavor = "multi_thread")]
async fn each_fault_of_the_wire_and_of_subscriptions_fails_exactly_its_checks() {
    let found = mismatches(&FAULTS[..16]).await;
    assert!(found.is_empty(), "{}", found.join("\n\n"));
}

/// The faults of Delta, of separate types and of edits (the second half of the table).
#[tokio::test(flavor = "multi_thread")]
async fn each_fault_of_delta_types_and_edits_fails_exactly_its_checks() {
    let found = mismatches(&FAULTS[16..]).await;
    assert!(found.is_empty(), "{}", found.join("\n\n"));
}
