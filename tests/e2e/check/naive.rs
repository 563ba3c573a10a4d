//! Every wire-only check FAILs against the naive server with the bug it exists to catch,
//! after passing against the same server without it.

use super::naive_pair;
use crate::harness::Bug;

fn has(evidence: &str, wanted: &str) {
    assert!(
        evidence.contains(wanted),
        "evidence lacks {wanted:?}: {evidence}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s1_nonce_fresh_fails_when_a_nonce_repeats_within_a_type() {
    let evidence = naive_pair(Bug::NonceIsVersion, "S1.nonce-fresh", false).await;
    has(&evidence, "sent twice for eds on one stream");
}

#[tokio::test(flavor = "multi_thread")]
async fn s1_type_url_fails_on_an_any_of_another_type() {
    let evidence = naive_pair(Bug::AnyTypeV2, "S1.type-url", false).await;
    has(
        &evidence,
        "has Any type_url \"type.googleapis.com/envoy.api.v2.Cluster\"",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s1_type_url_fails_on_a_response_of_another_type() {
    let evidence = naive_pair(Bug::ResponseTypeV2, "S1.type-url", false).await;
    has(
        &evidence,
        "a cds request was answered with type_url \"type.googleapis.com/envoy.api.v2.Cluster\"",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_no_resend_after_ack_fails_when_acks_are_answered() {
    let evidence = naive_pair(Bug::ResendOnAck, "S3.no-resend-after-ack", false).await;
    has(&evidence, "nothing changed but the server sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_no_resend_after_nack_fails_when_the_rejected_version_comes_back() {
    let evidence = naive_pair(Bug::ResendOnNack, "S3.no-resend-after-nack", false).await;
    has(&evidence, "the rejected version was sent again: cds");
}

#[tokio::test(flavor = "multi_thread")]
async fn s4_stale_nonce_ignored_fails_when_a_stale_request_is_answered() {
    let evidence = naive_pair(Bug::AnswerStale, "S4.stale-nonce-ignored", false).await;
    has(
        &evidence,
        "request eds [api, web] with stale nonce \"1\" (latest \"2\") was answered",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s5_named_set_fails_when_a_widened_request_is_not_answered() {
    let evidence = naive_pair(Bug::IgnoreWidening, "S5.named-set", false).await;
    has(
        &evidence,
        "eds [api] then [api, web] (nonce \"1\", the newest): web was not sent: no response within 5s",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s5_re_added_sent_fails_when_a_name_sent_before_is_not_sent_again() {
    let evidence = naive_pair(Bug::ReaddedNotResent, "S5.re-added-sent", false).await;
    has(
        &evidence,
        "eds [api], then [], then [api] again (nonce \"1\", the newest): api was not sent again",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s6_wildcard_fails_when_star_is_taken_as_a_name() {
    let evidence = naive_pair(Bug::StarIsLiteral, "S6.wildcard", false).await;
    has(
        &evidence,
        "cds with no names gave [api, web]; cds [*] on another stream gave []",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s6_empty_unsubscribes_fails_when_empty_means_wildcard() {
    let evidence = naive_pair(Bug::EmptyIsWildcard, "S6.empty-unsubscribes", false).await;
    has(&evidence, "then [] (unsubscribe), the server sent: eds");
}

#[tokio::test(flavor = "multi_thread")]
async fn s7_types_independent_fails_when_an_ack_pushes_other_types() {
    let evidence = naive_pair(Bug::PushAllOnAck, "S7.types-independent", false).await;
    has(&evidence, "was followed by");
    has(&evidence, "lds v");
}

#[tokio::test(flavor = "multi_thread")]
async fn s8_delta_fields_fails_on_a_resource_without_version() {
    let evidence = naive_pair(Bug::DeltaNoVersions, "S8.delta-fields", false).await;
    has(&evidence, "version \"\") lacks its version");
}

#[tokio::test(flavor = "multi_thread")]
async fn s8_delta_only_new_fails_when_held_resources_are_resent() {
    let evidence = naive_pair(Bug::DeltaResendAll, "S8.delta-only-new", false).await;
    has(
        &evidence,
        "subscribing web after api resent the unchanged api",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s8_delta_missing_removed_fails_when_a_missing_name_is_not_reported() {
    let evidence = naive_pair(Bug::DeltaSilentMissing, "S8.delta-missing-removed", false).await;
    has(
        &evidence,
        "(a name that does not exist) was answered without reporting it removed",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s9_initial_versions_fails_when_declared_versions_are_ignored() {
    let evidence = naive_pair(Bug::DeltaIgnoreInitial, "S9.initial-versions", false).await;
    has(
        &evidence,
        "declaring 2 held clusters was resent unchanged [api@",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s9_resubscribe_answered_fails_when_a_live_resubscription_is_ignored() {
    let evidence = naive_pair(
        Bug::DeltaResubscribeIgnored,
        "S9.resubscribe-answered",
        false,
    )
    .await;
    has(
        &evidence,
        "the same stream subscribed api again: api was not sent",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s9_stale_version_sent_fails_when_any_declared_version_is_trusted() {
    let evidence = naive_pair(Bug::DeltaTrustAnyDeclared, "S9.stale-version-sent", false).await;
    has(
        &evidence,
        "a new stream subscribing api and declaring api@xdsloop-check-",
    );
    has(&evidence, "(a version it never had): api was not sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn s12_unknown_type_fails_when_an_unknown_type_ends_the_stream() {
    let evidence = naive_pair(Bug::UnknownTypeCloses, "S12.unknown-type", false).await;
    has(
        &evidence,
        "after a request for type.googleapis.com/xdsloop.check.Unknown: the server ended the stream: InvalidArgument",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s12_malformed_isolated_fails_when_garbage_takes_other_streams_down() {
    let evidence = naive_pair(Bug::MalformedKillsAll, "S12.malformed-isolated", false).await;
    has(&evidence, "after a malformed request on another connection");
    has(
        &evidence,
        "the server ended the stream: Internal: naive server: a worker crashed",
    );
}
