//! Results and how they are shown: one text line per check as it finishes and a summary, or
//! one JSON document (`--output json`) for CI.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::catalog::{Check, Level};
use super::fixtures::Restored;

/// What one check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// What was seen that shows the rule holds.
    Pass(String),
    /// The evidence: the messages (types, versions, nonces, names) that break the rule.
    Fail(String),
    /// Why the check could not run against this server (a missing prerequisite).
    Skip(String),
}

impl Outcome {
    /// `PASS`, `FAIL` or `SKIP`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Pass(_) => "PASS",
            Outcome::Fail(_) => "FAIL",
            Outcome::Skip(_) => "SKIP",
        }
    }

    /// What the check found (the evidence, or why it was skipped).
    pub fn text(&self) -> &str {
        match self {
            Outcome::Pass(t) | Outcome::Fail(t) | Outcome::Skip(t) => t,
        }
    }
}

/// One check and its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    /// The check that ran.
    pub check: Check,
    /// Its verdict and evidence.
    pub outcome: Outcome,
    /// How long it took.
    pub elapsed: Duration,
}

/// Width of the id column: the longest id plus two spaces.
const ID_WIDTH: usize = 29;

impl CheckResult {
    /// `PASS  S1.nonce-fresh   14 responses, ...`; a FAIL says its level and quotes the
    /// sentence it breaks.
    pub fn line(&self) -> String {
        let (label, id, text) = (self.outcome.label(), self.check.id, self.outcome.text());
        match self.outcome {
            Outcome::Fail(_) => {
                let (level, spec) = (self.check.level, self.check.spec);
                format!("{label}  {id:<ID_WIDTH$}({level}) {text} — spec: {spec}")
            }
            _ => format!("{label}  {id:<ID_WIDTH$}{text}"),
        }
    }

    fn json(&self) -> CheckJson<'_> {
        let (evidence, why) = match &self.outcome {
            Outcome::Pass(t) | Outcome::Fail(t) => (Some(t.as_str()), None),
            Outcome::Skip(t) => (None, Some(t.as_str())),
        };
        CheckJson {
            id: self.check.id,
            rule: self.check.rule,
            level: self.check.level,
            result: self.outcome.label(),
            evidence,
            why,
            spec: self.check.spec,
            ms: u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// `--output json`, field order as documented in docs/check.md.
#[derive(Serialize)]
struct ReportJson<'a> {
    schema: &'static str,
    server: &'a str,
    node_id: &'a str,
    strict: bool,
    interrupted: bool,
    notes: &'a [String],
    checks: Vec<CheckJson<'a>>,
    fixtures: Option<Value>,
    summary: SummaryJson,
}

#[derive(Serialize)]
struct CheckJson<'a> {
    id: &'static str,
    rule: &'static str,
    level: Level,
    result: &'static str,
    evidence: Option<&'a str>,
    why: Option<&'a str>,
    spec: &'static str,
    ms: u64,
}

#[derive(Serialize)]
struct SummaryJson {
    passed: usize,
    failed: usize,
    failed_must: usize,
    failed_should: usize,
    skipped: usize,
    exit: u8,
}

/// The whole run.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// The server judged.
    pub server: String,
    /// The node id the suite's streams used.
    pub node_id: String,
    /// Whether a SHOULD failure fails the run (`--strict`).
    pub strict: bool,
    /// Every check run, in catalog order.
    pub results: Vec<CheckResult>,
    /// Set with `--fixtures`: whether the directory was put back as found.
    pub fixtures: Option<Restored>,
    /// Ctrl-C ended the run early.
    pub interrupted: bool,
    /// Findings about the server as a whole, said once before the checks (Delta not served,
    /// a fixture directory the server does not serve); the checks they affect SKIP.
    pub notes: Vec<String>,
}

/// What [`crate::check::run`] reports as the run goes.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A finding about the server as a whole, before the checks.
    Note(&'a str),
    /// A check finished.
    Result(&'a CheckResult),
}

/// `NOTE  Delta not served: …`
pub fn note_line(note: &str) -> String {
    format!("NOTE  {note}")
}

/// Counts and the exit code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Checks that passed.
    pub passed: usize,
    /// MUST checks that failed.
    pub failed_must: usize,
    /// SHOULD checks that failed.
    pub failed_should: usize,
    /// Checks skipped (a prerequisite was missing).
    pub skipped: usize,
    /// 0: no MUST failure; 1: a MUST failure (or a SHOULD one with `--strict`); 2: the run
    /// was interrupted or the fixture directory could not be put back.
    pub exit: u8,
}

impl CheckReport {
    /// The counts of each outcome.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for r in &self.results {
            match (&r.outcome, r.check.level) {
                (Outcome::Pass(_), _) => s.passed += 1,
                (Outcome::Skip(_), _) => s.skipped += 1,
                (Outcome::Fail(_), Level::Must) => s.failed_must += 1,
                (Outcome::Fail(_), Level::Should) => s.failed_should += 1,
            }
        }
        let restored = self.fixtures.as_ref().is_none_or(Restored::ok);
        s.exit = if self.interrupted || !restored {
            2
        } else if s.failed_must > 0 || (self.strict && s.failed_should > 0) {
            1
        } else {
            0
        };
        s
    }

    /// The lines after the per-check lines: the fixture directory, then the summary.
    pub fn text_tail(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.interrupted {
            lines.push("interrupted: the remaining checks did not run".to_string());
        }
        if let Some(restored) = &self.fixtures {
            lines.extend(restored.lines());
        }
        let s = self.summary();
        let failed = s.failed_must + s.failed_should;
        let (must, should) = (s.failed_must, s.failed_should);
        let strict = if self.strict { ", --strict" } else { "" };
        lines.push(format!(
            "summary: {} passed, {failed} failed ({must} MUST, {should} SHOULD{strict}), {} skipped — exit {}",
            s.passed, s.skipped, s.exit
        ));
        lines
    }

    /// The `--output json` document, pretty-printed, fields in the documented order.
    pub fn to_json(&self) -> String {
        let s = self.summary();
        let doc = ReportJson {
            schema: "xdsloop.check.v1",
            server: &self.server,
            node_id: &self.node_id,
            strict: self.strict,
            interrupted: self.interrupted,
            notes: &self.notes,
            checks: self.results.iter().map(CheckResult::json).collect(),
            fixtures: self.fixtures.as_ref().map(Restored::json),
            summary: SummaryJson {
                passed: s.passed,
                failed: s.failed_must + s.failed_should,
                failed_must: s.failed_must,
                failed_should: s.failed_should,
                skipped: s.skipped,
                exit: s.exit,
            },
        };
        serde_json::to_string_pretty(&doc).expect("plain data serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::catalog::CHECKS;

    fn result(id: &str, outcome: Outcome) -> CheckResult {
        let check = *CHECKS.iter().find(|c| c.id == id).unwrap();
        let elapsed = Duration::from_millis(12);
        CheckResult {
            check,
            outcome,
            elapsed,
        }
    }

    fn report(results: Vec<CheckResult>) -> CheckReport {
        CheckReport {
            server: "127.0.0.1:18000".into(),
            node_id: "xdsloop-check".into(),
            results,
            ..CheckReport::default()
        }
    }

    #[test]
    fn a_should_failure_exits_zero_unless_strict_and_a_must_failure_exits_one() {
        let stale = result("S4.stale-nonce-ignored", Outcome::Fail("answered".into()));
        let mut r = report(vec![
            result("S5.named-set", Outcome::Pass("ok".into())),
            stale,
        ]);
        assert_eq!(r.summary().exit, 0);
        assert_eq!(r.summary().failed_should, 1);
        r.strict = true;
        assert_eq!(r.summary().exit, 1);
        r.strict = false;
        r.results
            .push(result("S6.wildcard", Outcome::Fail("differ".into())));
        assert_eq!(r.summary().exit, 1);
        r.interrupted = true;
        assert_eq!(r.summary().exit, 2);
    }

    #[test]
    fn lines_align_ids_and_mark_should_failures() {
        let fail = result("S4.stale-nonce-ignored", Outcome::Fail("answered".into()));
        let line = fail.line();
        assert!(
            line.starts_with("FAIL  S4.stale-nonce-ignored       (SHOULD) answered — spec: \"The management server should not send"),
            "{line}"
        );
        let skip = result(
            "S10.delta-unsubscribe",
            Outcome::Skip("needs --fixtures".into()),
        );
        assert_eq!(
            skip.line(),
            "SKIP  S10.delta-unsubscribe        needs --fixtures"
        );
        let tail = report(vec![fail, skip]).text_tail();
        assert_eq!(
            tail,
            ["summary: 0 passed, 1 failed (0 MUST, 1 SHOULD), 1 skipped — exit 0"]
        );
    }

    #[test]
    fn json_has_schema_checks_and_summary() {
        let r = report(vec![result("S1.type-url", Outcome::Skip("why".into()))]);
        let text = r.to_json();
        assert!(
            text.starts_with("{\n  \"schema\": \"xdsloop.check.v1\",\n  \"server\""),
            "{text}"
        );
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["schema"], "xdsloop.check.v1");
        assert_eq!(doc["checks"][0]["id"], "S1.type-url");
        assert_eq!(doc["checks"][0]["level"], "MUST");
        assert_eq!(doc["checks"][0]["result"], "SKIP");
        assert_eq!(doc["checks"][0]["why"], "why");
        assert_eq!(doc["checks"][0]["evidence"], Value::Null);
        assert!(
            doc["checks"][0]["spec"]
                .as_str()
                .unwrap()
                .contains("type URL")
        );
        assert_eq!(doc["notes"], serde_json::json!([]));
        assert_eq!(doc["summary"]["skipped"], 1);
        assert_eq!(doc["fixtures"], Value::Null);
    }
}
