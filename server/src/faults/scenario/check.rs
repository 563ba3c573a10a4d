//! `xdsloop-server scenario check FILE`: a scenario file read and checked exactly as
//! `--scenario FILE` reads it, with no server, and a summary of its rules for people.

use std::{fmt::Write as _, path::Path};

use super::{
    model::{Action, Scenario},
    watch::read,
};
use xdsloop_proto::type_url;

/// The file's rules, one line each, or why the server would refuse it (`FILE:line:col: ...`).
pub fn check_file(path: &Path) -> Result<String, String> {
    let (scenario, _) = read(path)?;
    Ok(summary(path, &scenario))
}

fn summary(path: &Path, scenario: &Scenario) -> String {
    let count = scenario.rules.len();
    let plural = if count == 1 { "" } else { "s" };
    let mut text = format!("{}: OK, {count} rule{plural}\n", path.display());
    for rule in &scenario.rules {
        let of = rule
            .selector
            .type_url
            .as_deref()
            .map_or("any type".to_string(), |u| {
                type_url::short_name(u).to_string()
            });
        let times = rule.times.map_or(String::new(), |n| format!(", {n} times"));
        let _ = writeln!(
            text,
            "  {}: {} on {of}{times}{}",
            rule.id,
            rule.action.name(),
            detail(&rule.action)
        );
    }
    text
}

fn detail(action: &Action) -> String {
    match action {
        Action::Delay(d) => format!(" ({})", humantime::format_duration(*d)),
        Action::Oversize { bytes } => format!(" (to {bytes} bytes)"),
        Action::Withhold { names } | Action::Flap { names, .. } => {
            format!(" ({})", names.join(", "))
        }
        _ => String::new(),
    }
}
