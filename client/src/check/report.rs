//! Results and how they are shown: one text line per check as it finishes (with a line per
//! failed case under a FAIL) and a summary, one JSON document (`--output json`), or JUnit XML
//! (`--output junit`) for CI.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::catalog::Check;
use super::fixtures::Restored;

/// What one check (or one of its cases) found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// What was seen that shows the sentence holds.
    Pass(String),
    /// The evidence: the messages (types, versions, nonces, names) that break it.
    Fail(String),
    /// Why it could not be judged against this server.
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

    /// What was found (the evidence, or why it was skipped).
    pub fn text(&self) -> &str {
        match self {
            Outcome::Pass(t) | Outcome::Fail(t) | Outcome::Skip(t) => t,
        }
    }
}

/// One case of a check: the way it was tried (`eds sotw ads`) and what came of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseResult {
    /// `eds sotw ads`, or `every response of the run` for what the whole run showed.
    pub case: String,
    /// What the case found.
    pub outcome: Outcome,
}

/// One check: its cases and their verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    /// The check that ran.
    pub check: Check,
    /// FAIL if a case failed, else PASS if one passed, else SKIP.
    pub outcome: Outcome,
    /// Each case, in matrix order.
    pub cases: Vec<CaseResult>,
    /// How long it took.
    pub elapsed: Duration,
}

/// Width of the id column: the longest id plus two spaces.
const ID_WIDTH: usize = 34;

impl CheckResult {
    /// The verdict of `cases`: the first FAIL's evidence, else the passes counted with the
    /// first one's evidence, else why they were skipped.
    pub fn of(check: Check, cases: Vec<CaseResult>, elapsed: Duration) -> Self {
        let count = |label: &str| cases.iter().filter(|c| c.outcome.label() == label).count();
        let (passed, failed, skipped) = (count("PASS"), count("FAIL"), count("SKIP"));
        let first = |label: &str| cases.iter().find(|c| c.outcome.label() == label);
        let tally = |n: usize| match (n, skipped) {
            (1, 0) if cases.len() == 1 => String::new(),
            (_, 0) => format!(" ({n} of {} cases)", cases.len()),
            _ => format!(" ({n} of {} cases; {skipped} skipped)", cases.len()),
        };
        let outcome = if let Some(c) = first("FAIL") {
            let more = match failed {
                1 => String::new(),
                n => format!(
                    " (and {} more failed case{})",
                    n - 1,
                    if n == 2 { "" } else { "s" }
                ),
            };
            Outcome::Fail(format!("{}: {}{more}", c.case, c.outcome.text()))
        } else if let Some(c) = first("PASS") {
            Outcome::Pass(format!("{}: {}{}", c.case, c.outcome.text(), tally(passed)))
        } else {
            match cases.first() {
                Some(c) if cases.len() == 1 => Outcome::Skip(c.outcome.text().to_string()),
                Some(c) => Outcome::Skip(format!(
                    "{}: {} (all {} cases skipped)",
                    c.case,
                    c.outcome.text(),
                    cases.len()
                )),
                None => Outcome::Skip("no case to run".to_string()),
            }
        };
        Self {
            check,
            outcome,
            cases,
            elapsed,
        }
    }

    /// `PASS  resource-hints.4   eds sotw ads: ...`; a FAIL says its level and quotes the
    /// sentence it breaks.
    pub fn line(&self) -> String {
        let (label, id, text) = (self.outcome.label(), self.check.id, self.outcome.text());
        match self.outcome {
            Outcome::Fail(_) => {
                let (level, spec) = (self.check.strength(), self.check.cite());
                format!("{label}  {id:<ID_WIDTH$}({level}) {text} — spec: {spec}")
            }
            _ => format!("{label}  {id:<ID_WIDTH$}{text}"),
        }
    }

    /// The text lines of this check: its line, then under a FAIL each failed case.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.line()];
        let failed: Vec<&CaseResult> = self
            .cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Fail(_)))
            .collect();
        if failed.len() > 1 {
            for c in failed {
                lines.push(format!("      {}: {}", c.case, c.outcome.text()));
            }
        }
        lines
    }

    fn json(&self) -> CheckJson<'_> {
        let (evidence, why) = match &self.outcome {
            Outcome::Pass(t) | Outcome::Fail(t) => (Some(t.as_str()), None),
            Outcome::Skip(t) => (None, Some(t.as_str())),
        };
        CheckJson {
            id: self.check.id,
            sentences: self.check.sentences,
            level: self.check.strength().word(),
            result: self.outcome.label(),
            evidence,
            why,
            spec: self.check.cite(),
            cases: self
                .cases
                .iter()
                .map(|c| CaseJson {
                    case: &c.case,
                    result: c.outcome.label(),
                    text: c.outcome.text(),
                })
                .collect(),
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
    /// Why the server could not be judged at all (then `checks` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    unjudged: Option<&'a str>,
    notes: &'a [String],
    checks: Vec<CheckJson<'a>>,
    fixtures: Option<Value>,
    summary: SummaryJson,
}

#[derive(Serialize)]
struct CheckJson<'a> {
    id: &'static str,
    sentences: &'static [&'static str],
    level: &'static str,
    result: &'static str,
    evidence: Option<&'a str>,
    why: Option<&'a str>,
    spec: String,
    cases: Vec<CaseJson<'a>>,
    ms: u64,
}

#[derive(Serialize)]
struct CaseJson<'a> {
    case: &'a str,
    result: &'static str,
    text: &'a str,
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

/// The `schema` of `--output json`.
pub const JSON_SCHEMA: &str = "xdsloop.check.v2";

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
    /// the per-type services not served, a fixture directory the server does not serve); the
    /// cases they affect SKIP.
    pub notes: Vec<String>,
    /// Why the server could not be judged at all (exit 2, no check ran).
    pub unjudged: Option<String>,
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
    /// MUST (NOT) checks that failed.
    pub failed_must: usize,
    /// SHOULD (NOT) checks that failed.
    pub failed_should: usize,
    /// Checks skipped (a prerequisite was missing).
    pub skipped: usize,
    /// 0: no MUST failure; 1: a MUST failure (or a SHOULD one with `--strict`); 2: the server
    /// could not be judged, the run was interrupted or the fixture directory could not be put
    /// back.
    pub exit: u8,
}

impl CheckReport {
    /// The counts of each outcome.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for r in &self.results {
            match &r.outcome {
                Outcome::Pass(_) => s.passed += 1,
                Outcome::Skip(_) => s.skipped += 1,
                Outcome::Fail(_) if r.check.strength().is_must() => s.failed_must += 1,
                Outcome::Fail(_) => s.failed_should += 1,
            }
        }
        let restored = self.fixtures.as_ref().is_none_or(Restored::ok);
        s.exit = if self.unjudged.is_some() || self.interrupted || !restored {
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
            schema: JSON_SCHEMA,
            server: &self.server,
            node_id: &self.node_id,
            strict: self.strict,
            interrupted: self.interrupted,
            unjudged: self.unjudged.as_deref(),
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

    fn check(id: &str) -> Check {
        *CHECKS.iter().find(|c| c.id == id).unwrap()
    }

    fn result(id: &str, cases: &[(&str, Outcome)]) -> CheckResult {
        let cases = cases
            .iter()
            .map(|(case, outcome)| CaseResult {
                case: case.to_string(),
                outcome: outcome.clone(),
            })
            .collect();
        CheckResult::of(check(id), cases, Duration::from_millis(12))
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
    fn a_check_fails_with_its_first_failed_case_and_passes_only_without_one() {
        let pass = Outcome::Pass("ok".into());
        let r = result(
            "resource-hints.4",
            &[
                ("cds sotw ads", pass.clone()),
                ("eds sotw ads", Outcome::Fail("b was not sent".into())),
                ("eds delta ads", Outcome::Fail("b was not sent".into())),
                ("rds sotw ads", Outcome::Skip("needs 2 rds names".into())),
            ],
        );
        assert_eq!(
            r.outcome,
            Outcome::Fail("eds sotw ads: b was not sent (and 1 more failed case)".into())
        );
        let lines = r.lines();
        assert!(
            lines[0].starts_with("FAIL  resource-hints.4                  (MUST) eds sotw ads"),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].contains("— spec: resource-hints.4 \"When the client sends a new request"),
            "{}",
            lines[0]
        );
        assert_eq!(
            lines[1..],
            [
                "      eds sotw ads: b was not sent",
                "      eds delta ads: b was not sent"
            ]
        );
        let passed = result(
            "resource-hints.4",
            &[
                ("cds sotw ads", pass),
                ("rds sotw ads", Outcome::Skip("why".into())),
            ],
        );
        assert_eq!(
            passed.outcome,
            Outcome::Pass("cds sotw ads: ok (1 of 2 cases; 1 skipped)".into())
        );
    }

    #[test]
    fn a_should_failure_exits_zero_unless_strict_and_a_must_failure_exits_one() {
        let stale = result(
            "resource-updates.3",
            &[("eds sotw ads", Outcome::Fail("answered".into()))],
        );
        let mut r = report(vec![stale]);
        assert_eq!(r.summary().exit, 0);
        assert_eq!(r.summary().failed_should, 1);
        r.strict = true;
        assert_eq!(r.summary().exit, 1);
        r.strict = false;
        r.results.push(result(
            "resource-hints.4",
            &[("cds sotw ads", Outcome::Fail("not sent".into()))],
        ));
        assert_eq!(r.summary().exit, 1);
        r.interrupted = true;
        assert_eq!(r.summary().exit, 2);
    }

    #[test]
    fn json_has_schema_sentences_cases_and_summary() {
        let r = report(vec![result(
            "basic-protocol.1",
            &[("cds sotw ads", Outcome::Skip("why".into()))],
        )]);
        let doc: Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(doc["schema"], JSON_SCHEMA);
        let check = &doc["checks"][0];
        assert_eq!(check["id"], "basic-protocol.1");
        assert_eq!(check["sentences"][0], "basic-protocol.1");
        assert_eq!(check["level"], "MUST");
        assert_eq!(check["result"], "SKIP");
        assert_eq!(check["why"], "why");
        assert_eq!(check["cases"][0]["case"], "cds sotw ads");
        assert!(
            check["spec"]
                .as_str()
                .unwrap()
                .contains("MUST is xdsloop's reading")
        );
        assert_eq!(doc["summary"]["skipped"], 1);
        assert!(doc.get("unjudged").is_none());
    }

    #[test]
    fn a_server_that_cannot_be_judged_still_gets_a_document_and_exit_2() {
        let r = CheckReport {
            unjudged: Some("cannot connect".into()),
            ..report(Vec::new())
        };
        assert_eq!(r.summary().exit, 2);
        let doc: Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(doc["unjudged"], "cannot connect");
        assert_eq!(doc["checks"], serde_json::json!([]));
        assert_eq!(doc["summary"]["exit"], 2);
    }
}
