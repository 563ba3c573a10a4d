//! Every fixture-edit check FAILs against the naive server with the bug it exists to catch,
//! after passing against the same server (serving the same directory) without it.

use super::naive_pair;
use crate::harness::Bug;

fn has(evidence: &str, wanted: &str) {
    assert!(
        evidence.contains(wanted),
        "evidence lacks {wanted:?}: {evidence}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fx_push_on_edit_fails_when_edits_are_never_read() {
    let evidence = naive_pair(Bug::IgnoreEdits, "FX.push-on-edit", true).await;
    has(&evidence, "-push was not pushed");
}

#[tokio::test(flavor = "multi_thread")]
async fn fx_nack_then_change_fails_when_the_nacked_version_comes_back() {
    let evidence = naive_pair(Bug::ResendOnNack, "FX.nack-then-change", true).await;
    has(&evidence, "; sent again: cds");
}

#[tokio::test(flavor = "multi_thread")]
async fn s11_make_before_break_fails_when_endpoints_come_before_their_cluster() {
    let evidence = naive_pair(Bug::DependentsFirst, "S11.make-before-break", true).await;
    has(&evidence, "-mbb arrived before cluster");
}

#[tokio::test(flavor = "multi_thread")]
async fn s10_delta_unsubscribe_fails_when_unsubscribed_names_are_still_pushed() {
    let evidence = naive_pair(Bug::IgnoreUnsubscribe, "S10.delta-unsubscribe", true).await;
    has(
        &evidence,
        "-unsub-y was unsubscribed, yet its edit was pushed",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fx_delta_changes_fails_when_unchanged_resources_are_resent() {
    let evidence = naive_pair(Bug::DeltaResendAll, "FX.delta-changes", true).await;
    has(&evidence, "-delta-x changed, but the server sent");
    has(&evidence, "-delta-y");
}

#[tokio::test(flavor = "multi_thread")]
async fn fx_bad_edit_keeps_last_good_fails_when_a_bad_file_is_skipped() {
    let evidence = naive_pair(Bug::SkipBadFiles, "FX.bad-edit-keeps-last-good", true).await;
    has(
        &evidence,
        "-bad's file became invalid JSON, the server pushed cds",
    );
}
