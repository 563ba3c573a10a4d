//! `xdsloop-server scenario check FILE`: a scenario file read and checked exactly as
//! `--scenario FILE` reads it, with no server, and a summary of its rules for people.

use std::{fmt::Write as _, path::Path};

use super::{
    model::{Action, Place, ResetScope, Rule, Scenario, Service, When},
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
        let _ = writeln!(text, "  {}: {}", rule.id, describe(rule));
    }
    text
}

/// One rule in words: what it does, to which streams, at what moment, how often.
fn describe(rule: &Rule) -> String {
    let action = &rule.action;
    let mut line = format!("{}{}", action.name(), detail(action));
    let short = |u: &str| type_url::short_name(u).to_string();
    let on = rule.selector.type_url.as_deref().map(short);
    match (action.is_server_wide(), on) {
        (true, _) => line += " (server-wide)",
        (false, Some(t)) => line += &format!(" on {t}"),
        (false, None) => line += " on any type",
    }
    let selector = &rule.selector;
    if let Some(variant) = selector.variant {
        line += &format!(", {variant} streams");
    }
    if let Some(service) = selector.service {
        line += match service {
            Service::Ads => ", on ADS",
            Service::PerType => ", on the per-type services",
            Service::Rest => ", over REST",
        };
    }
    if let Some(node) = &selector.node {
        line += &format!(", nodes {node}");
    }
    line += &moment(&rule.when, action.is_server_wide());
    if let Some(n) = rule.times {
        line += &format!(", {n} time{}", if n == 1 { "" } else { "s" });
    }
    if let Some(n) = rule.per_stream {
        line += &format!(", at most {n} per stream");
    }
    line
}

/// When the rule fires, as a phrase after the rest (empty: at every chance).
fn moment(when: &When, server_wide: bool) -> String {
    let d = |d: &std::time::Duration| humantime::format_duration(*d).to_string();
    let mut parts = Vec::new();
    match (when.nth, when.every) {
        (Some(n), Some(e)) => parts.push(format!("from response {n}, every {e}")),
        (Some(n), None) => parts.push(format!("at response {n}")),
        (None, Some(e)) => parts.push(format!("every {e} responses")),
        (None, None) => {}
    }
    if let Some(v) = &when.version {
        parts.push(format!("at version {v:?}"));
    }
    if let Some(v) = &when.after_ack {
        parts.push(format!("after the ACK of version {v:?}"));
    }
    if let Some(after) = &when.after {
        parts.push(match server_wide {
            true => format!("{} after the scenario is installed", d(after)),
            false => format!("once the stream is {} old", d(after)),
        });
    }
    if let Some(r) = &when.requested {
        let t = type_url::short_name(&r.type_url);
        parts.push(format!("when a client first asks for {t} {}", r.name));
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(", {}", parts.join(", ")),
    }
}

fn detail(action: &Action) -> String {
    let d = |d: &std::time::Duration| humantime::format_duration(*d).to_string();
    match action {
        Action::Delay(delay) => format!(" ({})", d(delay)),
        Action::Oversize { bytes } => format!(" (to {bytes} bytes)"),
        Action::Withhold { names } => format!(" ({})", names.join(", ")),
        Action::Flap { names, period } => format!(" ({}, every {})", names.join(", "), d(period)),
        Action::Outage { duration } => format!(" for {}", d(duration)),
        Action::Hang { duration: Some(h) } => format!(" for {}", d(h)),
        Action::Hang { duration: None } => " (until the client leaves)".to_string(),
        Action::Close { code, message } if message.is_empty() => format!(" (code {code})"),
        Action::Close { code, message } => format!(" (code {code}, {message:?})"),
        Action::Reset { scope } => match scope {
            ResetScope::Stream => " (the stream)".to_string(),
            ResetScope::Connection => " (the whole connection)".to_string(),
        },
        Action::IgnoreAcks { nacks: true } => " (ACKs and NACKs)".to_string(),
        Action::WrongTypeUrl { place, type_url } => match place {
            Place::Resource => format!(" ({type_url} on a resource)"),
            Place::Response => format!(" ({type_url} on the response)"),
        },
        Action::Duplicate { resource: Some(r) } | Action::Corrupt { resource: Some(r) } => {
            format!(" ({r})")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(yaml: &str) -> Vec<String> {
        let scenario = Scenario::from_yaml(yaml).unwrap();
        let text = summary(Path::new("f.yaml"), &scenario);
        text.lines().skip(1).map(|l| l.trim().to_string()).collect()
    }

    /// A summary line says the moment, the length, the trigger and every limit a rule has.
    #[test]
    fn a_rule_is_summed_up_with_its_moment_length_trigger_and_limits() {
        let yaml = "version: 1\nrules:\n\
            - id: down-on-cds\n  when: { requested: { type: cds, name: web } }\n  do: { outage: { for: 3s } }\n\
            - id: later\n  when: { after: 2s }\n  do: { outage: { for: 1s } }\n\
            - id: flaps\n  match: { type: eds, variant: delta }\n  per_stream: 2\n  do: { flap: { names: [web], period: 500ms } }\n\
            - id: slow\n  match: { type: cds }\n  when: { nth: 2 }\n  times: 1\n  do: { delay: 2s }\n";
        assert_eq!(
            lines(yaml),
            [
                "down-on-cds: outage for 3s (server-wide), when a client first asks for cds web",
                "later: outage for 1s (server-wide), 2s after the scenario is installed",
                "flaps: flap (web, every 500ms) on eds, delta streams, at most 2 per stream",
                "slow: delay (2s) on cds, at response 2, 1 time",
            ]
        );
    }
}
