//! The checks of the suite, in the order they run: one row per check, named after the
//! docs/protocol.md rule it proves (`FX.*` checks edit fixtures to prove a rule under change).

use std::fmt;

use serde::Serialize;

/// How binding the rule is: a MUST failure fails the run; a SHOULD failure only with
/// `--strict` (the xDS spec words the rule as a recommendation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Must,
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
    pub id: &'static str,
    /// The docs/protocol.md rule it proves.
    pub rule: &'static str,
    pub level: Level,
    /// It edits fixture files, so it needs `--fixtures DIR`.
    pub edits: bool,
    /// One line for `--list`: what goes on the wire and what must come back.
    pub about: &'static str,
}

const fn check(
    id: &'static str,
    rule: &'static str,
    level: Level,
    edits: bool,
    about: &'static str,
) -> Check {
    Check {
        id,
        rule,
        level,
        edits,
        about,
    }
}

use Level::{Must, Should};

/// Every check, in run order. The edit checks come after the wire-only ones, S13's large
/// file after the small edits, and the bad edit last: it leaves the server rejecting the
/// directory until the file is removed.
#[rustfmt::skip]
pub const CHECKS: &[Check] = &[
    check("S1.nonce-fresh", "S1", Must, false,
        "SotW and Delta: every response has a nonce, never repeated within a type on a stream"),
    check("S1.type-url", "S1", Must, false,
        "a response's type_url is the requested type, and every Any inside carries it"),
    check("S3.no-resend-after-ack", "S3", Must, false,
        "CDS, LDS and EDS ACKed: nothing more arrives while nothing changes"),
    check("S3.no-resend-after-nack", "S3", Must, false,
        "CDS NACKed: the rejected version is not sent again"),
    check("S4.stale-nonce-ignored", "S4", Should, false,
        "an EDS request carrying a superseded nonce gets no response"),
    check("S5.named-set", "S5", Must, false,
        "EDS [a] then [a,b]: the second response holds a and b"),
    check("S6.wildcard", "S6", Must, false,
        "CDS with no names and CDS with `*` (two streams) give the same non-empty set"),
    check("S6.empty-unsubscribes", "S6", Must, false,
        "EDS [a] then []: no response with resources follows"),
    check("S7.types-independent", "S7", Must, false,
        "CDS and LDS subscribed, CDS ACKed: no other type's response follows"),
    check("S8.delta-fields", "S8", Must, false,
        "Delta: every resource carries its name and a version"),
    check("S8.delta-only-new", "S8", Must, false,
        "Delta EDS: subscribing b after a sends b alone"),
    check("S8.delta-missing-removed", "S8", Should, false,
        "Delta: a subscribed name that does not exist is reported (removed_resources)"),
    check("S9.initial-versions", "S9", Must, false,
        "Delta reconnect declaring held versions: unchanged wildcard resources are not resent"),
    check("S9.named-answered", "S9", Should, false,
        "Delta reconnect declaring a held version and subscribing it: it is answered"),
    check("S12.unknown-type", "S12", Must, false,
        "a request for an unknown type URL leaves the stream serving EDS"),
    check("S12.malformed-isolated", "S12", Must, false,
        "a malformed request on another connection leaves this stream serving EDS"),
    check("FX.push-on-edit", "S3", Must, true,
        "an edited fixture is pushed as a new version"),
    check("FX.nack-then-change", "S3", Must, true,
        "a NACKed version is not resent; the next edit is pushed as a new version"),
    check("S11.make-before-break", "S11", Must, true,
        "a new cluster comes before its endpoints; on deletion the endpoints go first"),
    check("S10.delta-unsubscribe", "S10", Must, true,
        "Delta: an unsubscribed resource is not pushed when it changes"),
    check("FX.delta-changes", "S8", Must, true,
        "Delta wildcard: an edit sends only the changed resource; a deletion removes both"),
    check("S13.large", "S13", Must, false,
        "a CDS response above gRPC's 4 MiB default arrives whole (own file with --fixtures)"),
    check("FX.bad-edit-keeps-last-good", "S3", Must, true,
        "an invalid fixture changes nothing a client holds; removing it is pushed"),
];

/// The checks `only` selects, in run order: each entry is a check id or a rule (`S5`, `FX`).
/// An empty list selects all.
pub fn select(only: &[String]) -> Result<Vec<Check>, String> {
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
