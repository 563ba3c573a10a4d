//! `--output junit`: the run as JUnit XML, the format CI systems read test results in. One
//! `testsuite` for the server judged, one `testcase` per check (its class the spec section,
//! its name the check id); a FAIL is a `failure` whose message holds the sentence id, the
//! level and the quote, and whose text holds every failed case; a SKIP is `skipped`.

use std::fmt::Write as _;

use super::report::{CheckReport, Outcome};

/// The whole document.
pub(super) fn document(report: &CheckReport) -> String {
    let s = report.summary();
    let failed = s.failed_must + s.failed_should;
    let tests = report.results.len();
    let time: f64 = report.results.iter().map(|r| r.elapsed.as_secs_f64()).sum();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"xdsloop-client check\" tests=\"{tests}\" failures=\"{failed}\" errors=\"{}\" skipped=\"{}\" time=\"{time:.3}\">",
        usize::from(report.unjudged.is_some()),
        s.skipped
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failed}\" errors=\"{}\" skipped=\"{}\" time=\"{time:.3}\">",
        escape(&report.server),
        usize::from(report.unjudged.is_some()),
        s.skipped
    );
    if let Some(why) = &report.unjudged {
        let _ = writeln!(
            xml,
            "    <testcase classname=\"xdsloop-client check\" name=\"reach the server\" time=\"0\">\n      <error message=\"{}\"/>\n    </testcase>",
            escape(why)
        );
    }
    for r in &report.results {
        let check = &r.check;
        let class = check.spec().next().map_or("xdsloop", |s| s.slug());
        let _ = write!(
            xml,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
            escape(class),
            escape(check.id),
            r.elapsed.as_secs_f64()
        );
        match &r.outcome {
            Outcome::Pass(text) => {
                let _ = writeln!(
                    xml,
                    ">\n      <system-out>{}</system-out>\n    </testcase>",
                    escape(text)
                );
            }
            Outcome::Skip(why) => {
                let _ = writeln!(
                    xml,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    escape(why)
                );
            }
            Outcome::Fail(_) => {
                let message = format!("({}) {}", check.strength(), check.cite());
                let cases: Vec<String> = r
                    .cases
                    .iter()
                    .filter(|c| matches!(c.outcome, Outcome::Fail(_)))
                    .map(|c| format!("{}: {}", c.case, c.outcome.text()))
                    .collect();
                let _ = writeln!(
                    xml,
                    ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                    escape(&message),
                    check.strength(),
                    escape(&cases.join("\n"))
                );
            }
        }
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}

/// Text safe in an XML attribute or element: the five entities, and control characters
/// (which XML 1.0 cannot carry) as `\u{..}`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::check::catalog::CHECKS;
    use crate::check::report::{CaseResult, CheckResult};

    #[test]
    fn a_failure_carries_the_sentence_id_level_and_quote_and_text_is_escaped() {
        let check = *CHECKS
            .iter()
            .find(|c| c.id == "resource-updates.3")
            .unwrap();
        let cases = vec![CaseResult {
            case: "eds sotw ads".into(),
            outcome: Outcome::Fail("answered <stale> & \"late\"\u{1}".into()),
        }];
        let report = CheckReport {
            server: "a&b".into(),
            results: vec![CheckResult::of(check, cases, Duration::from_millis(5))],
            ..CheckReport::default()
        };
        let xml = document(&report);
        assert!(
            xml.contains("<testsuite name=\"a&amp;b\" tests=\"1\" failures=\"1\""),
            "{xml}"
        );
        assert!(
            xml.contains("<testcase classname=\"resource-updates\" name=\"resource-updates.3\""),
            "{xml}"
        );
        assert!(
            xml.contains("<failure message=\"(SHOULD NOT) resource-updates.3 &quot;The management server should not send"),
            "{xml}"
        );
        assert!(
            xml.contains(
                "eds sotw ads: answered &lt;stale&gt; &amp; &quot;late&quot;\\u{1}</failure>"
            ),
            "{xml}"
        );
    }
}
