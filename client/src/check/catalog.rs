//! The checks of the suite, in the order they run: one row per check, named after the
//! docs/protocol.md rule it proves (`FX.*` checks edit fixtures to prove a rule under change).

use std::fmt;

use serde::Serialize;

/// How binding the rule is, as the xDS protocol page words it: a MUST failure fails the run;
/// a SHOULD failure only with `--strict`. A rule the page does not state is MUST only where
/// breaking it ends other clients' configuration (xdsloop's rule, said so in the check's spec).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    /// The spec says MUST: a failure fails the run.
    Must,
    /// The spec says SHOULD: a failure is reported, and fails the run only with `--strict`.
    Should,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        })
    }
}

/// One check of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// The check's id, e.g. `S4.stale-nonce-ignored`.
    pub id: &'static str,
    /// The docs/protocol.md rule it proves.
    pub rule: &'static str,
    /// MUST or SHOULD.
    pub level: Level,
    /// It edits fixture files, so it needs `--fixtures DIR` (a directory the server serves).
    pub edits: bool,
    /// It runs on Delta streams only, so it SKIPs against a server that does not serve Delta.
    pub delta: bool,
    /// One line for `--list`: what goes on the wire and what must come back.
    pub about: &'static str,
    /// The sentence a FAIL breaks, quoted from the xDS protocol page (`xds_protocol.rst`) with
    /// its own MUST or SHOULD, or marked as xdsloop's rule where the page has none.
    pub spec: &'static str,
}

/// Where a check needs something beyond a plain SotW ADS stream.
#[derive(Clone, Copy)]
enum Needs {
    Wire,
    Delta,
    Edits,
    DeltaEdits,
}

const fn check(
    id: &'static str,
    rule: &'static str,
    level: Level,
    needs: Needs,
    about: &'static str,
    spec: &'static str,
) -> Check {
    Check {
        id,
        rule,
        level,
        edits: matches!(needs, Needs::Edits | Needs::DeltaEdits),
        delta: matches!(needs, Needs::Delta | Needs::DeltaEdits),
        about,
        spec,
    }
}

use Level::{Must, Should};
use Needs::{Delta, DeltaEdits, Edits, Wire};

/// Quoted sentences shared by several checks.
const WHEN_TO_SEND: &str = "\"The management server should only send updates to the Envoy client when the resources in the DiscoveryResponse have changed\" (When to send an update)";
const NEWLY_REQUESTED: &str = "\"the server must resend any newly requested resources, even if it previously sent those resources without having been asked for them and the resources have not changed since that time\" (How the client specifies what resources to return)";
const SEPARATE_STREAMS: &str = "\"each resource type is treated as a separate logical stream within the aggregated stream\" (RPC Services and Methods); that a disturbance ends no other stream is xdsloop's rule";

/// Every check, in run order. The edit checks come after the wire-only ones, S13's large
/// file after the small edits, and the bad edit last: it leaves the server rejecting the
/// directory until the file is removed.
#[rustfmt::skip]
pub const CHECKS: &[Check] = &[
    check("S1.nonce-fresh", "S1", Must, Wire,
        "SotW and Delta: every response has a nonce, never repeated within a type on a stream",
        "\"All server responses will contain a nonce\" (Basic Protocol Overview); \"A nonce becomes stale following a newer nonce being presented\" (Resource updates): a repeated nonce cannot become stale; MUST is xdsloop's reading (the page says \"will\")"),
    check("S1.type-url", "S1", Must, Wire,
        "a response's type_url is the requested type, and every Any inside carries it",
        "\"a separate logical stream\" per type, \"multiplexed via the type URL\" (Aggregated Discovery Service); MUST is xdsloop's reading"),
    check("S3.no-resend-after-ack", "S3", Should, Wire,
        "CDS, LDS and EDS ACKed: nothing more arrives while nothing changes",
        WHEN_TO_SEND),
    check("S3.no-resend-after-nack", "S3", Should, Wire,
        "CDS NACKed: the rejected version is not sent again",
        WHEN_TO_SEND),
    check("S4.stale-nonce-ignored", "S4", Should, Wire,
        "an EDS request carrying a superseded nonce gets no response",
        "\"The management server should not send a DiscoveryResponse for any DiscoveryRequest that has a stale nonce\" (Resource updates)"),
    check("S5.named-set", "S5", Must, Wire,
        "EDS [a] then [a,b]: b is sent (a need not be: EDS may come a resource per response)",
        NEWLY_REQUESTED),
    check("S5.re-added-sent", "S5", Must, Wire,
        "EDS [a], then [], then [a] on the same stream: a is sent again",
        NEWLY_REQUESTED),
    check("S6.wildcard", "S6", Must, Wire,
        "CDS with no names and CDS with `*` (two streams) give the same non-empty set",
        "a \"wildcard\" subscription \"is triggered when subscribing to the special name \"*\"\", and a request that never named a resource the server \"should treat ... identically\" (How the client specifies what resources to return)"),
    check("S6.empty-unsubscribes", "S6", Must, Wire,
        "EDS [a] then []: no response with resources follows",
        "\"If the list of resource names becomes empty, that means that the client is no longer interested in any resources of the specified type\" (How the client specifies what resources to return); MUST is xdsloop's reading: resources sent anyway are pushed to a client that wants none"),
    check("S7.types-independent", "S7", Should, Wire,
        "CDS and LDS subscribed, CDS ACKed: no other type's response follows",
        WHEN_TO_SEND),
    check("S8.delta-fields", "S8", Must, Delta,
        "Delta: every resource carries its name and a version",
        "\"The resource name will be returned in the name field in the resource of a DeltaDiscoveryResponse\" (Resource names); the version is what initial_resource_versions declares (Incremental xDS); MUST is xdsloop's reading (the page says \"will\")"),
    check("S8.delta-only-new", "S8", Should, Delta,
        "Delta EDS: subscribing b after a sends b alone",
        WHEN_TO_SEND),
    check("S8.delta-missing-removed", "S8", Should, Delta,
        "Delta: a subscribed name that does not exist is reported (removed_resources)",
        "\"When a resource subscribed to by a client does not exist, the server will send a DeltaDiscoveryResponse message that contains that resource's name in the removed_resources field\" (Knowing When a Requested Resource Does Not Exist); SHOULD is xdsloop's reading of \"will\""),
    check("S9.initial-versions", "S9", Should, Delta,
        "Delta reconnect declaring held versions: unchanged wildcard resources are not resent",
        "\"On reconnect the Incremental xDS client may tell the server of its known resources to avoid resending them over the network\" (Incremental xDS); resending them is what \"should only send updates ... when the resources ... have changed\" advises against"),
    check("S9.resubscribe-answered", "S9", Must, Delta,
        "Delta: subscribing a again on a live stream that holds it: a is sent again",
        "\"the server *must* still provide those resources in the response; due to implementation details hidden from the server, the client may have \"forgotten\" those resources\" (Subscribing to Resources)"),
    check("S9.stale-version-sent", "S9", Must, Delta,
        "Delta: a new stream declaring a@<a version it never had> and subscribing a gets a",
        "\"The management server must supply the requested resources if they exist\" (How the client specifies what resources to return); only what the client \"had already seen\" may be skipped (ACK/NACK and resource type instance version)"),
    check("S12.unknown-type", "S12", Must, Wire,
        "a request for an unknown type URL leaves the stream serving other types",
        SEPARATE_STREAMS),
    check("S12.malformed-isolated", "S12", Must, Wire,
        "a malformed request on another connection leaves this stream serving",
        "xdsloop's rule (the protocol page has no sentence on it): a stream is a client's own; another connection's garbage ends only that connection's stream"),
    check("FX.push-on-edit", "S3", Must, Edits,
        "an edited fixture is pushed as a new version",
        "\"if one of those resources springs into existence later, the server must send an update to the client\" (Knowing When a Requested Resource Does Not Exist); \"Whenever one resource of that type changes, the version is changed\" (ACK/NACK and resource type instance version)"),
    check("FX.nack-then-change", "S3", Should, Edits,
        "a NACKed version is not resent; the next edit is pushed as a new version",
        WHEN_TO_SEND),
    check("S11.make-before-break", "S11", Must, Edits,
        "a new cluster comes before its endpoints (the removal order is shown, not judged)",
        "\"CDS updates (if any) must always be pushed first. EDS updates (if any) must arrive after CDS updates for the respective clusters\" (Eventual consistency considerations)"),
    check("S10.delta-unsubscribe", "S10", Should, DeltaEdits,
        "Delta: an unsubscribed resource is not pushed when it changes",
        "\"When a client loses interest in some resources, it will indicate that with the resource_names_unsubscribe field\" (Unsubscribing from Resources); pushing it on is what \"should only send updates\" (When to send an update) advises against"),
    check("FX.delta-changes", "S8", Should, DeltaEdits,
        "Delta wildcard: an edit sends only the changed resource; a deletion removes both",
        "\"the management server only needs to deliver the single cluster that changed\" (Incremental xDS); \"the server signals the client that a resource should be deleted via the removed_resources field\" (Deleting Resources); a resend of the unchanged one is what \"should only send updates\" (When to send an update) advises against"),
    check("S13.large", "S13", Should, Wire,
        "a CDS response above gRPC's 4 MiB default arrives whole (own file with --fixtures)",
        "xdsloop's rule (the protocol page has no sentence on message sizes): large fleets need responses above gRPC's 4 MiB default"),
    check("FX.bad-edit-keeps-last-good", "S3", Should, Edits,
        "an invalid fixture changes nothing a client holds; removing it is pushed",
        "xdsloop's rule, after \"The last valid configuration for an xDS API will continue to apply if a configuration update rejection occurs\" (Filesystem subscriptions, said of the client)"),
];

/// The checks `only` selects, in run order: each entry is a check id or a rule (`S5`, `FX`).
/// An empty list selects all.
pub(crate) fn select(only: &[String]) -> Result<Vec<Check>, String> {
    for wanted in only {
        if !CHECKS.iter().any(|c| matches(c, wanted)) {
            let ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
            return Err(format!(
                "--only {wanted:?} names no check; the checks are: {}",
                ids.join(", ")
            ));
        }
    }
    let wanted = |c: &Check| only.is_empty() || only.iter().any(|w| matches(c, w));
    Ok(CHECKS.iter().copied().filter(wanted).collect())
}

fn matches(check: &Check, wanted: &str) -> bool {
    let group = check.id.split('.').next().unwrap_or_default();
    check.id.eq_ignore_ascii_case(wanted) || group.eq_ignore_ascii_case(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_cite_their_rule() {
        let mut ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len());
        for c in CHECKS {
            assert!(c.rule.starts_with('S'), "{}: cites a server rule", c.id);
            assert!(
                c.id.starts_with(c.rule) || c.id.starts_with("FX."),
                "{}",
                c.id
            );
        }
        assert_eq!(CHECKS.last().unwrap().id, "FX.bad-edit-keeps-last-good");
    }

    /// A FAIL quotes its sentence with the page's own word, or says whose rule it is.
    #[test]
    fn every_spec_quote_has_its_word_or_says_it_is_xdsloops() {
        for c in CHECKS {
            let spec = c.spec.to_lowercase();
            let worded = spec.contains("must") || spec.contains("should");
            assert!(worded || spec.contains("xdsloop's"), "{}: {}", c.id, c.spec);
        }
    }

    #[test]
    fn only_selects_by_id_or_rule_in_run_order() {
        let ids = |only: &[&str]| {
            let only: Vec<String> = only.iter().map(|s| s.to_string()).collect();
            select(&only).map(|v| v.iter().map(|c| c.id).collect::<Vec<_>>())
        };
        assert_eq!(ids(&[]).unwrap().len(), CHECKS.len());
        assert_eq!(
            ids(&["S6", "S1.type-url"]).unwrap(),
            ["S1.type-url", "S6.wildcard", "S6.empty-unsubscribes"]
        );
        assert_eq!(ids(&["s5.NAMED-set"]).unwrap(), ["S5.named-set"]);
        let error = ids(&["S2"]).unwrap_err();
        assert!(error.contains("--only \"S2\" names no check"), "{error}");
        assert!(error.contains("S4.stale-nonce-ignored"), "{error}");
    }
}
