//! Scenario text → [`Scenario`]. Pure. Unknown fields are errors, and every error says where:
//! the semantic checks run inside deserialisation (`try_from`), so serde_yaml_ng's location of
//! the rule comes with them, and the path (`rules[2].do`) comes with it.

use std::{fmt, time::Duration};

use serde::Deserialize;
use xdsloop_proto::yaml_depth;

mod raw;

use self::raw::*;
use super::model::{
    Action, GRPC_CODES, Match, Place, Requested, ResetScope, Rule, Scenario, Service, Variant,
    When, resolve_type,
};

/// A scenario that could not be read: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based; 0 when the error has no place in the text.
    pub line: usize,
    /// 1-based; 0 when the error has no place in the text.
    pub column: usize,
    /// What is wrong, naming the rule (`rules[0] (id): ...`).
    pub message: String,
}

impl std::error::Error for ParseError {}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}:{}: {}", self.line, self.column, self.message)
        }
    }
}

/// Parses and checks a scenario file's text.
pub(crate) fn parse(text: &str) -> Result<Scenario, ParseError> {
    // The YAML parser's cost grows with the square of the depth: refuse deep text first.
    yaml_depth::check(text, yaml_depth::MAX_DEPTH).map_err(|e| ParseError {
        line: e.line,
        column: e.column,
        message: e.to_string(),
    })?;
    let file: RawFile = serde_yaml_ng::from_str(text).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        ParseError {
            line,
            column,
            message: strip_location(&e.to_string()),
        }
    })?;
    if file.version != 1 {
        return Err(ParseError {
            line: 1,
            column: 1,
            message: format!(
                "version: {} is not known (this server reads version: 1)",
                file.version
            ),
        });
    }
    let mut rules: Vec<Rule> = file.rules.into_iter().map(|r| r.0).collect();
    for (i, rule) in rules.iter_mut().enumerate() {
        if rule.id.is_empty() {
            rule.id = format!("rule-{}", i + 1);
        }
    }
    let scenario = Scenario { rules };
    scenario.check().map_err(|message| {
        let (line, column) = duplicate_id_place(text, &scenario).unwrap_or((0, 0));
        ParseError {
            line,
            column,
            message,
        }
    })?;
    Ok(scenario)
}

/// serde_yaml_ng ends its messages with "at line L column C"; ours lead with the place.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// Where the second use of a rule id is (the only check that needs the whole file).
fn duplicate_id_place(text: &str, scenario: &Scenario) -> Option<(usize, usize)> {
    let mut seen = std::collections::BTreeSet::new();
    let dup = scenario
        .rules
        .iter()
        .find(|r| !seen.insert(r.id.as_str()))?;
    let mut hits = text.lines().enumerate().filter_map(|(i, line)| {
        let at = line.find("id:")?;
        let value = line[at + 3..].trim().trim_matches(['"', '\'']);
        (value == dup.id).then_some((i + 1, at + 1))
    });
    hits.nth(1)
}

/// A rule, checked while it is read (so errors carry its location).
#[derive(Deserialize)]
#[serde(try_from = "RawRule")]
struct Checked(Rule);

impl TryFrom<RawRule> for Checked {
    type Error = String;

    fn try_from(raw: RawRule) -> Result<Self, String> {
        let id = raw.id.clone().unwrap_or_default();
        let named = |e: String| match id.as_str() {
            "" => e,
            id => format!("({id}) {e}"),
        };
        let rule = Rule {
            id: id.clone(),
            selector: selector(raw.selector).map_err(named)?,
            when: when(raw.when).map_err(named)?,
            times: raw.times,
            per_stream: raw.per_stream,
            action: action(raw.action).map_err(named)?,
        };
        // The default id is given once every rule is read; check with a stand-in.
        let mut checked = rule.clone();
        if checked.id.is_empty() {
            checked.id = "rule".into();
        }
        checked.check().map_err(named)?;
        Ok(Checked(rule))
    }
}

fn selector(raw: RawMatch) -> Result<Match, String> {
    Ok(Match {
        node: raw.node,
        variant: raw.variant.map(|v| match v {
            RawVariant::Sotw => Variant::Sotw,
            RawVariant::Delta => Variant::Delta,
        }),
        service: raw.service.map(|s| match s {
            RawService::Ads => Service::Ads,
            RawService::PerType => Service::PerType,
            RawService::Rest => Service::Rest,
        }),
        type_url: raw
            .type_url
            .as_deref()
            .map(resolve_type)
            .transpose()
            .map_err(|e| format!("match.type: {e}"))?,
    })
}

fn when(raw: RawWhen) -> Result<When, String> {
    Ok(When {
        nth: raw.nth,
        every: raw.every,
        version: raw.version,
        after_ack: raw.after_ack,
        after: raw
            .after
            .as_deref()
            .map(|t| duration("when.after", t))
            .transpose()?,
        requested: raw
            .requested
            .map(|r| {
                let type_url =
                    resolve_type(&r.type_url).map_err(|e| format!("when.requested.type: {e}"))?;
                Ok::<_, String>(Requested {
                    type_url,
                    name: r.name,
                })
            })
            .transpose()?,
    })
}

fn action(raw: RawAction) -> Result<Action, String> {
    Ok(match raw {
        RawAction::Delay(text) => Action::Delay(duration("delay", &text)?),
        RawAction::Drop(_) => Action::Drop,
        RawAction::Close(close) => Action::Close {
            code: code(close.code.as_deref().unwrap_or("UNAVAILABLE"))?,
            message: close
                .message
                .unwrap_or_else(|| "closed by an xdsloop scenario".into()),
        },
        RawAction::Reset(reset) => Action::Reset {
            scope: match reset.scope {
                RawScope::Stream => ResetScope::Stream,
                RawScope::Connection => ResetScope::Connection,
            },
        },
        RawAction::Hang(hang) => Action::Hang {
            duration: hang
                .duration
                .as_deref()
                .map(|t| duration("hang.for", t))
                .transpose()?,
        },
        RawAction::StaleNonce(_) => Action::StaleNonce,
        RawAction::WrongTypeUrl(w) => Action::WrongTypeUrl {
            place: match w.place.unwrap_or(RawPlace::Resource) {
                RawPlace::Resource => Place::Resource,
                RawPlace::Response => Place::Response,
            },
            type_url: resolve_type(&w.type_url).map_err(|e| format!("wrong_type_url.type: {e}"))?,
        },
        RawAction::Duplicate(pick) => Action::Duplicate {
            resource: pick.resource,
        },
        RawAction::Corrupt(pick) => Action::Corrupt {
            resource: pick.resource,
        },
        RawAction::Oversize(o) => Action::Oversize {
            bytes: size(&o.bytes)?,
        },
        RawAction::Reorder(_) => Action::Reorder,
        RawAction::Withhold(w) => Action::Withhold { names: w.names },
        RawAction::Flap(f) => Action::Flap {
            names: f.names,
            period: duration("flap.period", &f.period)?,
        },
        RawAction::IgnoreAcks(i) => Action::IgnoreAcks { nacks: i.nacks },
        RawAction::Outage(o) => Action::Outage {
            duration: duration("outage.for", &o.duration)?,
        },
    })
}

fn duration(field: &str, text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("{field}: {text:?} is not a duration ({e}; e.g. 500ms, 2s, 1m)"))
}

fn code(name: &str) -> Result<i32, String> {
    let upper = name.trim().to_ascii_uppercase();
    GRPC_CODES
        .iter()
        .position(|c| *c == upper)
        .map(|i| i as i32)
        .ok_or_else(|| {
            format!(
                "close.code: {name:?} is not a gRPC code name ({})",
                GRPC_CODES[1..].join(", ")
            )
        })
}

/// `1048576`, `512KiB`, `8MiB`, `1GiB` (also `KB`/`MB`/`GB` as powers of 1000).
fn size(raw: &RawSize) -> Result<usize, String> {
    let text = match raw {
        RawSize::Number(n) => return usize::try_from(*n).map_err(|e| e.to_string()),
        RawSize::Text(text) => text.trim(),
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => {
            return Err(format!(
                "oversize.bytes: {text:?}: unknown unit (B, KiB, MiB, GiB)"
            ));
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("oversize.bytes: {text:?} is not a size (e.g. 8MiB)"))?;
    n.checked_mul(scale)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| format!("oversize.bytes: {text:?} is too large"))
}
