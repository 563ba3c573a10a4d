//! The checks of the suite, in the order they run, each tied to the spec sentences it enforces
//! (`xdsloop_proto::spec`: ids, quotes, levels) and to the matrix of cases it runs: the types,
//! variants and services the sentences hold for. `--only` and `--skip` pick checks by id, by
//! sentence id or by section.

use std::collections::BTreeSet;

use xdsloop_proto::spec::{self, Sentence, Strength};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER};

use super::case::{ALL_TYPES, BOTH, DELTA, Matrix, ROOT_TYPES, SOTW, Services};

/// One check of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// The check's id: the id of the sentence it enforces first (`resource-hints.4`), with a
    /// `/suffix` when two checks enforce one sentence in different ways; `xdsloop.*` for the
    /// few rules of xdsloop's own that no sentence states.
    pub id: &'static str,
    /// The spec sentences it enforces; the first sets its level.
    pub sentences: &'static [&'static str],
    /// The cases it runs.
    pub(super) matrix: Matrix,
    /// It edits fixture files, so it needs `--fixtures DIR` (a directory the server serves).
    pub edits: bool,
    /// Its cases run one after another: what one does can reach other streams (an edit, a
    /// malformed request that may take a server down).
    pub serial: bool,
    /// What goes on the wire and what must come back, for `--list`.
    pub about: &'static str,
    /// For an `xdsloop.*` check: why it is checked though no sentence states it.
    pub beyond: Option<&'static str>,
}

impl Check {
    /// The sentences, from the spec file.
    pub fn spec(&self) -> impl Iterator<Item = &'static Sentence> {
        self.sentences.iter().filter_map(|id| spec::sentence(id))
    }

    /// How binding a FAIL is: its first sentence's strength (SHOULD for xdsloop's own rules).
    pub fn strength(&self) -> Strength {
        self.spec()
            .next()
            .map_or(Strength::Should, Sentence::strength)
    }

    /// The sentence a FAIL quotes, or the reason an `xdsloop.*` check exists.
    pub fn cite(&self) -> String {
        match (self.spec().next(), self.beyond) {
            (Some(sentence), _) => sentence.cite(),
            (None, Some(why)) => {
                format!("xdsloop's rule (no sentence of the spec states it): {why}")
            }
            (None, None) => String::new(),
        }
    }

    /// Whether `token` (`--only`, `--skip`) names this check: its id, the id before its
    /// `/suffix`, one of its sentences, or the section of one (`resource-hints`).
    pub fn named_by(&self, token: &str) -> bool {
        let base = self.id.split('/').next().unwrap_or(self.id);
        self.id == token
            || base == token
            || self.sentences.contains(&token)
            || self.spec().any(|s| s.slug() == token)
            || (token == "xdsloop" && self.beyond.is_some())
    }

    /// Whether its cases include Delta ones.
    pub fn delta(&self) -> bool {
        self.matrix
            .variants
            .contains(&xdsloop_proto::Variant::Delta)
    }
}

const fn wire(
    id: &'static str,
    sentences: &'static [&'static str],
    matrix: Matrix,
    about: &'static str,
) -> Check {
    Check {
        id,
        sentences,
        matrix,
        edits: false,
        serial: false,
        about,
        beyond: None,
    }
}

const fn edit(
    id: &'static str,
    sentences: &'static [&'static str],
    matrix: Matrix,
    about: &'static str,
) -> Check {
    Check {
        edits: true,
        serial: true,
        ..wire(id, sentences, matrix, about)
    }
}

const ALL_BOTH: Matrix = Matrix::new(ALL_TYPES, BOTH, Services::Each);
const ALL_SOTW: Matrix = Matrix::new(ALL_TYPES, SOTW, Services::Each);
const ALL_DELTA: Matrix = Matrix::new(ALL_TYPES, DELTA, Services::Each);
const ROOT_SOTW: Matrix = Matrix::new(ROOT_TYPES, SOTW, Services::Each);
const ROOT_BOTH: Matrix = Matrix::new(ROOT_TYPES, BOTH, Services::Each);
const ROOT_DELTA: Matrix = Matrix::new(ROOT_TYPES, DELTA, Services::Each);
const ADS_BOTH: Matrix = Matrix::new(&[CLUSTER], BOTH, Services::Ads);

/// Every check, in run order: the wire-only ones, then those that edit fixtures (the large file
/// after the small edits), then the ones judged on every response of the run, which collect
/// what the others saw.
#[rustfmt::skip]
pub const CHECKS: &[Check] = &[
    wire("basic-protocol.1", &["basic-protocol.1"], ALL_BOTH,
        "a type's first request on a stream is answered with that type (LDS/CDS wildcard, RDS/EDS a name that exists)"),
    wire("resource-hints.2", &["resource-hints.2", "multiple-resources.2"], ALL_BOTH,
        "a request naming resources that exist (two where the server has two) gets each of them"),
    wire("resource-hints.4", &["resource-hints.4"], ALL_BOTH,
        "[a] then [a, b] (Delta: +b): b is sent, whatever was sent before"),
    wire("resource-hints.4/re-added", &["resource-hints.4", "delta-subscribe.3"], ALL_BOTH,
        "[a], then [] (Delta: -a), then [a] again (+a): a is sent again"),
    wire("resource-hints.7", &["resource-hints.7", "resource-hints.9", "resource-hints.13", "resource-hints.14", "proto.discovery-request.3"], ROOT_BOTH,
        "LDS/CDS with no names on a fresh type and with [*] (two streams): the same resources; Delta: then +[a] keeps the wildcard (nothing it brought is removed)"),
    wire("resource-hints.8", &["resource-hints.8", "resource-hints.5", "resource-hints.12", "resource-hints.16"], ALL_BOTH,
        "[a] then [] (Delta: -a): nothing of the type follows (no wildcard comes back)"),
    wire("resource-hints.11", &["resource-hints.11", "resource-hints.10"], ROOT_SOTW,
        "[] (wildcard), [*, a], [a], then [a, b]: the answer holds a and b only (the wildcard is gone)"),
    wire("grouping.2", &["grouping.2", "four-variants.1", "four-variants.3", "resource-not-existed.1"], ROOT_SOTW,
        "LDS/CDS [a] then [a, b]: the answer holds a and b (the full state of what is asked)"),
    wire("resource-updates.3", &["resource-updates.3"], ALL_SOTW,
        "a request with a superseded nonce that adds a name gets no response; the same with the latest nonce does"),
    wire("delta.6", &["delta.6", "delta.7"], ALL_DELTA,
        "a Delta request with a superseded nonce that subscribes a name: the name is sent"),
    wire("delta-unsubscribe.4", &["delta-unsubscribe.4"], ALL_DELTA,
        "unsubscribing a name never subscribed leaves the stream working: a name subscribed next is sent"),
    wire("delta-unsubscribe.6", &["delta-unsubscribe.6"], ROOT_DELTA,
        "with * and a specific name, unsubscribing the name is answered: in resources if it exists, else in removed_resources"),
    wire("delta-resource-not-existed.1", &["delta-resource-not-existed.1"], ALL_DELTA,
        "subscribing a name that does not exist is answered with it in removed_resources"),
    wire("ack-nack.3", &["ack-nack.3", "basic-protocol.1"], ALL_SOTW,
        "a new stream whose first request names resources and carries the current version_info is answered (the server cannot know the names are not new)"),
    wire("proto.delta-request.5", &["proto.delta-request.5"], ALL_DELTA,
        "a new stream subscribing a that declares a version of a the server never sent gets a"),
    wire("resource-warming.1", &["resource-warming.1"], Matrix::new(&[CLUSTER, LISTENER], BOTH, Services::Ads),
        "after CDS (LDS), EDS for its clusters (RDS for its listeners' routes) is answered on the same stream"),
    edit("ack-nack.1", &["ack-nack.1", "basic-protocol.2"], Matrix::new(&[CLUSTER, ENDPOINT], SOTW, Services::Ads),
        "a new fixture file is pushed, and its edit is pushed under a new version"),
    edit("resource-not-existed.3", &["resource-not-existed.3", "proto.delta-request.4"], Matrix::new(ALL_TYPES, BOTH, Services::Ads),
        "a subscribed name that does not exist is pushed once a fixture file creates it"),
    edit("grouping.3", &["grouping.3", "grouping.2"], Matrix::new(ROOT_TYPES, SOTW, Services::Ads),
        "an edit of one listener or cluster pushes every one the client holds"),
    edit("proto.delta-request.4", &["proto.delta-request.4", "deleting-resources.1", "delta.1"], Matrix::new(&[CLUSTER], DELTA, Services::Ads),
        "Delta: an edit of one resource sends it alone; deleting the file removes its resources"),
    edit("eventual-consistency.2", &["eventual-consistency.2", "eventual-consistency.1", "eventual-consistency.3", "eventual-consistency.4", "eventual-consistency.5", "eventual-consistency.7"], Matrix::new(&[CLUSTER], BOTH, Services::Ads),
        "one file adds a cluster, its endpoints, a listener and its route (routing to the cluster): they arrive CDS, EDS, LDS, RDS"),
    Check {
        beyond: Some("large fleets need responses above gRPC's 4 MiB default"),
        ..edit("xdsloop.large-responses", &[], Matrix::new(&[CLUSTER], SOTW, Services::Ads),
            "a CDS response of about 6 MB (4 clusters of 1.6 MB) arrives whole")
    },
    Check {
        beyond: Some("a file-driven server keeps serving the last good fixtures when a file breaks (as Envoy keeps its last valid filesystem configuration, filesystem.1)"),
        ..edit("xdsloop.bad-edit-keeps-last-good", &[], Matrix::new(&[CLUSTER], SOTW, Services::Ads),
            "an invalid fixture file changes nothing a client holds, and a new stream gets the last good set")
    },
    Check {
        serial: true,
        ..wire("rpc-services.1", &["rpc-services.1"], ADS_BOTH,
            "an unknown type URL and a malformed request on another connection leave other types and streams served; no stream gets a type it never asked for")
    },
    wire("basic-protocol.4", &["basic-protocol.4", "delta.2", "proto.delta-request.2", "proto.delta-response.5"], ALL_BOTH,
        "every response of the run has a nonce, not used before for its type on its stream"),
    wire("proto.discovery-response.1", &["proto.discovery-response.1", "proto.delta-response.1", "proto.delta-response.2"], ALL_BOTH,
        "every response of the run: each resource's Any has the response's type_url"),
    wire("duplicate-names.1", &["duplicate-names.1"], ALL_BOTH,
        "no response of the run holds one resource name twice"),
    wire("resource-names.1", &["resource-names.1"], ALL_DELTA,
        "every Delta resource of the run carries its name"),
    wire("resource-update.1", &["resource-update.1", "resource-warming.2"], ALL_BOTH,
        "after an ACK or a NACK, nothing the client holds is sent again; judged on every stream of the run"),
];

/// The checks `only` (every one if empty) less those `skip` names, in run order.
pub(crate) fn select(only: &[String], skip: &[String]) -> Result<Vec<Check>, String> {
    let unknown: BTreeSet<&str> = only
        .iter()
        .chain(skip)
        .map(String::as_str)
        .filter(|t| !CHECKS.iter().any(|c| c.named_by(t)))
        .collect();
    if !unknown.is_empty() {
        let unknown: Vec<&str> = unknown.into_iter().collect();
        return Err(format!(
            "no check is named by {}: give a check id, a sentence id or a section (`xdsloop-client check --list`)",
            unknown.join(", ")
        ));
    }
    let named = |c: &Check, tokens: &[String]| tokens.iter().any(|t| c.named_by(t));
    let picked = CHECKS
        .iter()
        .filter(|c| only.is_empty() || named(c, only))
        .filter(|c| !named(c, skip));
    Ok(picked.copied().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(checks: &[Check]) -> Vec<&'static str> {
        checks.iter().map(|c| c.id).collect()
    }

    #[test]
    fn every_check_names_sentences_that_exist_and_bind_servers() {
        for check in CHECKS {
            assert_eq!(
                check.spec().count(),
                check.sentences.len(),
                "{}: a sentence id is not in the spec file",
                check.id
            );
            assert_eq!(
                check.sentences.is_empty(),
                check.beyond.is_some(),
                "{}",
                check.id
            );
            for s in check.spec() {
                assert!(
                    s.binds.server(),
                    "{}: {} binds clients only",
                    check.id,
                    s.id
                );
            }
            let base = check.id.split('/').next().unwrap();
            assert!(
                check.beyond.is_some() || check.sentences[0] == base,
                "{}: the id starts with its first sentence",
                check.id
            );
        }
    }

    #[test]
    fn only_and_skip_take_ids_sentences_and_sections() {
        let all = select(&[], &[]).unwrap();
        assert_eq!(all.len(), CHECKS.len());
        let only = |t: &[&str]| select(&t.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &[]);
        assert_eq!(
            ids(&only(&["resource-hints.4"]).unwrap()),
            ["resource-hints.4", "resource-hints.4/re-added"]
        );
        assert_eq!(
            ids(&only(&["resource-hints.4/re-added"]).unwrap()),
            ["resource-hints.4/re-added"]
        );
        let section = ids(&only(&["eventual-consistency"]).unwrap());
        assert_eq!(section, ["eventual-consistency.2"]);
        let by_sentence = ids(&only(&["delta-subscribe.3"]).unwrap());
        assert_eq!(by_sentence, ["resource-hints.4/re-added"]);
        let skip = select(&[], &["resource-hints".to_string(), "xdsloop".to_string()]).unwrap();
        assert!(
            skip.iter()
                .all(|c| !c.id.starts_with("resource-hints.") && c.beyond.is_none())
        );
        let err = only(&["S4", "resource-hints.99"]).unwrap_err();
        assert!(
            err.contains("no check is named by S4, resource-hints.99"),
            "{err}"
        );
    }

    #[test]
    fn levels_follow_the_first_sentence() {
        let stale = CHECKS
            .iter()
            .find(|c| c.id == "resource-updates.3")
            .unwrap();
        assert_eq!(stale.strength(), Strength::ShouldNot);
        let large = CHECKS
            .iter()
            .find(|c| c.id == "xdsloop.large-responses")
            .unwrap();
        assert_eq!(large.strength(), Strength::Should);
        assert!(large.cite().starts_with("xdsloop's rule"));
    }
}
