//! What `/status` shows of the conformance judge: per stream, how many violations, by check,
//! and the last few with their evidence; server-wide, the count by check since start-up.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::admin::registry::violations::Violations;

/// One stream's violations (`streams[].violations`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationsView {
    /// How many the judge found.
    pub count: u64,
    /// By check (`C5.nack-version`).
    pub by_check: BTreeMap<String, u64>,
    /// The last few, oldest first.
    pub last: Vec<ViolationView>,
}

/// One violation, with the judge's evidence in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationView {
    /// The rule in docs/protocol.md (`C5`).
    pub rule: String,
    /// The check within it (`C5.nack-version`).
    pub check: String,
    /// The type the offending request or response was about, `type` in the JSON.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_url: Option<String>,
    /// The judge's sentence: what was seen, against what was expected.
    pub message: String,
}

pub(crate) fn view(found: &Violations) -> ViolationsView {
    let by_check = found.by_check.iter();
    ViolationsView {
        count: found.count,
        by_check: by_check.map(|(c, n)| (c.to_string(), *n)).collect(),
        last: found
            .last
            .iter()
            .map(|v| ViolationView {
                rule: v.rule.to_string(),
                check: v.check.to_string(),
                type_url: v.type_url.as_deref().map(str::to_string),
                message: v.message.to_string(),
            })
            .collect(),
    }
}

/// Server-wide counts by check (`violations`).
pub(crate) fn totals(by_check: &BTreeMap<&'static str, u64>) -> BTreeMap<String, u64> {
    by_check.iter().map(|(c, n)| (c.to_string(), *n)).collect()
}
