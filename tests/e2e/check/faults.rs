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
    (Bug::AnyTypeV2, &["proto.discovery-response.1"], "has Any type_url \"type.googleapis.com/envoy.api.v2."),
    (Bug::ResponseTypeV2, &["proto.discovery-response.1"], "in a \"type.googleapis.com/envoy.api.v2."),
    (Bug::ResendOnAck, &["resource-update.1"], "repeats what the client holds"),
    (Bug::ResendOnNack, &["resource-update.1"], "repeats what the client holds"),
    (Bug::PushAllOnAck, &["resource-update.1"], "repeats what the client holds"),
    (Bug::AnswerStale, &["resource-updates.3"], "with stale nonce \"1\" (latest \"2\") was answered"),
    (Bug::IgnoreWidening, &["resource-hints.4", "resource-hints.4/re-added"], "was not sent"),
    (Bug::ReaddedNotResent, &["resource-hints.4/re-added"], "was not sent again"),
    (Bug::StarIsLiteral, &["resource-hints.7"], "with no names gave"),
    (Bug::EmptyIsWildcard, &["resource-hints.8"], "(no interest left), the server sent"),
    (Bug::StarStays, &["resource-hints.11"], "as if the wildcard had stayed"),
    (Bug::PartialState, &["grouping.2", "grouping.3"], "the answer lacks"),
    (Bug::DuplicateNames, &["duplicate-names.1"], "appears twice in"),
    (Bug::SkipResumed, &["ack-nack.3"], "(the current one) was not answered"),
    (
        Bug::SilentEds,
        &["basic-protocol.1", "resource-hints.2", "ack-nack.3", "resource-warming.1"],
        "eds",
    ),
    (
        Bug::DeltaSilentMissing,
        &["delta-unsubscribe.6", "delta-resource-not-existed.1"],
        "removed_resources",
    ),
    (Bug::DeltaResubscribeIgnored, &["resource-hints.4/re-added"], "again on the same stream"),
    (Bug::DeltaTrustAnyDeclared, &["proto.delta-request.5"], "(a version it never had)"),
    (Bug::DeltaStaleIgnored, &["delta.6"], "the subscription was not honoured"),
    (Bug::DeltaPhantomCloses, &["delta-unsubscribe.4"], "(never subscribed)"),
    (Bug::DeltaWildcardUnsubscribeSilent, &["delta-unsubscribe.6"], "was not reported in removed_resources"),
    (Bug::DeltaNoNames, &["resource-names.1"], "has no name"),
    (Bug::UnknownTypeCloses, &["rpc-services.1"], "ended the stream"),
    (Bug::MalformedKillsAll, &["rpc-services.1"], "after a malformed request on another connection"),
    (Bug::PushUnasked, &["rpc-services.1"], "which this stream never asked for"),
    (Bug::IgnoreEdits, &["resource-not-existed.3", "proto.delta-request.4"], "was not pushed"),
    (Bug::ForgetMissing, &["resource-not-existed.3"], "a file creating it was not pushed"),
    (Bug::FixedVersion, &["ack-nack.1"], "was pushed under the same version"),
    (Bug::DependentsFirst, &["eventual-consistency.2"], "arrived before"),
    (Bug::SkipBadFiles, &["xdsloop.bad-edit-keeps-last-good"], "became invalid JSON, the server pushed"),
];

/// The whole suite against the double with `bug`, over its own fixture directory.
async fn failed_by(bug: Bug) -> (Vec<&'static str>, Vec<String>) {
    let dir = base_dir();
    let server = NaiveServer::start(dir.path(), bug).await;
    let report = run(&config(server.addr, Some(dir.path()), &[])).await;
    assert!(report.fixtures.as_ref().unwrap().ok(), "{bug:?}: directory not restored");
    (failed_ids(&report), fails(&report))
}

#[test]
fn every_check_has_a_fault_that_fails_it() {
    let failing: Vec<&str> = FAULTS.iter().flat_map(|(_, ids, _)| ids.iter().copied()).collect();
    for check in CHECKS {
        let covered = failing.contains(&check.id) || check.id == "xdsloop.large-responses";
        assert!(covered, "no fault fails {}", check.id);
    }
}

/// One test per fault, so each shows on its own; the runs share [`super::RUNS`].
macro_rules! fault {
    ($($name:ident: $bug:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread")]
        async fn $name() {
            let (_, ids, phrase) = FAULTS.iter().find(|(b, _, _)| *b == Bug::$bug).unwrap();
            let (failed, lines) = failed_by(Bug::$bug).await;
            let mut expected: Vec<&str> = ids.to_vec();
            expected.sort_unstable();
            let mut got = failed.clone();
            got.sort_unstable();
            assert_eq!(got, expected, "{:?} failed:\n{}", Bug::$bug, lines.join("\n"));
            let first = lines.iter().find(|l| l.contains(ids[0])).unwrap();
            assert!(first.contains(phrase), "{:?}: evidence lacks {phrase:?}: {first}", Bug::$bug);
            assert!(first.contains(" — spec: "), "a FAIL quotes its sentence: {first}");
        }
    )*};
}

fault! {
    a_reused_nonce_fails_only_the_nonce_check: NonceIsVersion;
    anys_of_another_type_fail_only_the_type_url_check: AnyTypeV2;
    a_response_under_another_type_url_fails_only_the_type_url_check: ResponseTypeV2;
    a_push_storm_fails_only_the_no_needless_update_check: ResendOnAck;
    resending_a_nacked_version_fails_only_the_no_needless_update_check: ResendOnNack;
    pushing_every_type_on_an_ack_fails_only_the_no_needless_update_check: PushAllOnAck;
    answering_a_stale_nonce_fails_only_the_stale_nonce_check: AnswerStale;
    ignoring_a_widened_request_fails_the_newly_requested_checks: IgnoreWidening;
    not_resending_a_readded_name_fails_only_that_check: ReaddedNotResent;
    a_literal_star_fails_only_the_wildcard_check: StarIsLiteral;
    an_empty_list_as_wildcard_fails_only_the_unsubscribe_check: EmptyIsWildcard;
    a_wildcard_that_stays_fails_only_its_example_check: StarStays;
    partial_listener_and_cluster_responses_fail_the_full_state_checks: PartialState;
    a_duplicate_name_fails_only_the_duplicate_check: DuplicateNames;
    a_client_coming_back_unanswered_fails_only_the_resumption_check: SkipResumed;
    silent_endpoints_fail_the_checks_that_ask_for_them: SilentEds;
    unreported_missing_delta_names_fail_the_removal_checks: DeltaSilentMissing;
    an_ignored_delta_resubscription_fails_only_the_readded_check: DeltaResubscribeIgnored;
    trusting_any_declared_version_fails_only_the_declared_version_check: DeltaTrustAnyDeclared;
    rejecting_stale_delta_requests_fails_only_the_delta_stale_check: DeltaStaleIgnored;
    closing_on_a_phantom_unsubscription_fails_only_its_check: DeltaPhantomCloses;
    a_silent_unsubscription_beside_the_wildcard_fails_only_its_check: DeltaWildcardUnsubscribeSilent;
    nameless_delta_resources_fail_only_the_name_check: DeltaNoNames;
    closing_on_an_unknown_type_fails_only_the_separate_types_check: UnknownTypeCloses;
    a_malformed_request_killing_streams_fails_only_the_separate_types_check: MalformedKillsAll;
    pushing_a_type_never_asked_for_fails_only_the_separate_types_check: PushUnasked;
    never_reading_edits_fails_the_checks_of_pushed_creations: IgnoreEdits;
    forgetting_missing_names_fails_only_the_creation_check: ForgetMissing;
    a_version_that_never_changes_fails_only_the_version_check: FixedVersion;
    dependents_first_fails_only_the_ordering_check: DependentsFirst;
    skipping_a_bad_file_fails_only_the_last_good_check: SkipBadFiles;
}
