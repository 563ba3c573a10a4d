//! Scenario text → [`Scenario`]. Pure. Unknown fields are errors, and every error says where:
//! the YAML reader places what it refuses itself (syntax, unknown fields, wrong types); the
//! checks after it say which field of which rule they refuse ([`Refusal`]), and
//! [`locate`](xdsloop_proto::locate) finds that field in the text. Either way the message
//! names the rule: `rules[2] (id): ...`, or `rules[2]: ...` for a rule without an id.

use std::{fmt, time::Duration};

use xdsloop_proto::{
    Format,
    locate::{self, Step},
    yaml_depth,
};

mod raw;

use self::raw::*;
use super::model::{
    Action, GRPC_CODES, Match, Place, Refusal, Requested, ResetScope, Rule, Scenario, Service,
    Variant, When, resolve_type,
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
    let file: RawFile = serde_yaml_ng::from_str(text).map_err(|e| shape_error(text, &e))?;
    if file.version != 1 {
        let message = format!(
            "version: {} is not known (this server reads version: 1)",
            file.version
        );
        return Err(placed(text, &[Step::Key("version".into())], false, message));
    }
    let mut rules = Vec::with_capacity(file.rules.len());
    for (index, raw) in file.rules.into_iter().enumerate() {
        let written = raw.id.clone();
        let rule = rule(raw, index).map_err(|r| refused(text, index, written.as_deref(), r))?;
        rules.push((rule, written));
    }
    check_unique_ids(text, &rules)?;
    Ok(Scenario {
        rules: rules.into_iter().map(|(rule, _)| rule).collect(),
    })
}

/// One rule read and checked; an id left out is `rule-<n>` (1-based).
fn rule(raw: RawRule, index: usize) -> Result<Rule, Refusal> {
    let rule = Rule {
        id: raw.id.unwrap_or_else(|| format!("rule-{}", index + 1)),
        selector: selector(raw.selector)?,
        when: when(raw.when)?,
        times: raw.times,
        per_stream: raw.per_stream,
        action: action(raw.action)?,
    };
    rule.check_fields()?;
    Ok(rule)
}

/// The second use of an id is refused at it. A default id (`rule-2`) may meet one written out:
/// the refusal says which rule's default it is.
fn check_unique_ids(text: &str, rules: &[(Rule, Option<String>)]) -> Result<(), ParseError> {
    let mut seen = std::collections::BTreeMap::new();
    for (index, (rule, written)) in rules.iter().enumerate() {
        let id = rule.id.as_str();
        let Some(&(first, first_written)) = seen.get(id) else {
            seen.insert(id, (index, written.is_some()));
            continue;
        };
        let refusal = match (first_written, written.is_some()) {
            (true, true) => Refusal::value("id", format!("the id {id:?} is used twice")),
            (false, _) => Refusal::value(
                "id",
                format!("the id {id:?} is the default id of rules[{first}]: pick another"),
            ),
            (true, false) => Refusal::value(
                "",
                format!("its default id {id:?} is the id of rules[{first}]: give it another"),
            ),
        };
        return Err(refused(text, index, written.as_deref(), refusal));
    }
    Ok(())
}

/// How a refusal names its rule: by position, and by id when the file gives one.
fn rule_name(index: usize, id: Option<&str>) -> String {
    match id {
        Some(id) => format!("rules[{index}] ({id})"),
        None => format!("rules[{index}]"),
    }
}

/// A refusal of rule `index`, placed at its field in `text`.
fn refused(text: &str, index: usize, id: Option<&str>, refusal: Refusal) -> ParseError {
    let mut path = vec![Step::Key("rules".into()), Step::Index(index)];
    path.extend(
        refusal
            .field
            .split('.')
            .filter(|key| !key.is_empty())
            .map(|key| Step::Key(key.into())),
    );
    let message = format!("{}: {}", rule_name(index, id), refusal.message);
    placed(text, &path, refusal.key, message)
}

fn placed(text: &str, path: &[Step], key: bool, message: String) -> ParseError {
    let at = locate::position(text, Format::Yaml, 0, path, key);
    ParseError {
        line: at.line,
        column: at.column,
        message,
    }
}

/// What the YAML reader refused, where it says. Its path leads the message
/// (`rules[1].when.nth: invalid type ...`); a rule in it is named as the checks name it.
fn shape_error(text: &str, e: &serde_yaml_ng::Error) -> ParseError {
    let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
    let message = strip_location(&e.to_string());
    ParseError {
        line,
        column,
        message: name_the_rule(text, &message).unwrap_or(message),
    }
}

/// `rules[1].when.nth: what` as `rules[1] (id): when.nth: what`; `None` when the message is
/// not about a rule.
fn name_the_rule(text: &str, message: &str) -> Option<String> {
    let (index, rest) = message.strip_prefix("rules[")?.split_once(']')?;
    let index: usize = index.parse().ok()?;
    let rest = match rest.strip_prefix('.') {
        Some(path) => path,
        None => rest.strip_prefix(": ")?,
    };
    // Only refusals pay for the second reading, and a text the reader refused may have no id.
    let id = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
        .ok()
        .and_then(|file| {
            let id = file.get("rules")?.get(index)?.get("id")?;
            id.as_str().map(str::to_string)
        });
    Some(format!("{}: {rest}", rule_name(index, id.as_deref())))
}

/// serde_yaml_ng ends its messages with "at line L column C"; ours lead with the place.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

fn selector(raw: RawMatch) -> Result<Match, Refusal> {
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
            .map(|t| type_of("match.type", t))
            .transpose()?,
    })
}

fn when(raw: RawWhen) -> Result<When, Refusal> {
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
                Ok::<_, Refusal>(Requested {
                    type_url: type_of("when.requested.type", &r.type_url)?,
                    name: r.name,
                })
            })
            .transpose()?,
    })
}

fn action(raw: RawAction) -> Result<Action, Refusal> {
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
            type_url: type_of("wrong_type_url.type", &w.type_url)?,
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

fn type_of(field: &str, text: &str) -> Result<String, Refusal> {
    resolve_type(text).map_err(|e| Refusal::value(field, format!("{field}: {e}")))
}

fn duration(field: &str, text: &str) -> Result<Duration, Refusal> {
    humantime::parse_duration(text.trim()).map_err(|e| {
        Refusal::value(
            field,
            format!("{field}: {text:?} is not a duration ({e}; e.g. 500ms, 2s, 1m)"),
        )
    })
}

fn code(name: &str) -> Result<i32, Refusal> {
    let upper = name.trim().to_ascii_uppercase();
    GRPC_CODES
        .iter()
        .position(|c| *c == upper)
        .map(|i| i as i32)
        .ok_or_else(|| {
            Refusal::value(
                "close.code",
                format!(
                    "close.code: {name:?} is not a gRPC code name ({})",
                    GRPC_CODES[1..].join(", ")
                ),
            )
        })
}

/// `1048576`, `512KiB`, `8MiB`, `1GiB` (also `KB`/`MB`/`GB` as powers of 1000).
fn size(raw: &RawSize) -> Result<usize, Refusal> {
    let refused = |message: String| Refusal::value("oversize.bytes", message);
    let text = match raw {
        RawSize::Number(n) => {
            return usize::try_from(*n).map_err(|e| refused(format!("oversize.bytes: {e}")));
        }
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
            return Err(refused(format!(
                "oversize.bytes: {text:?}: unknown unit (B, KiB, MiB, GiB)"
            )));
        }
    };
    let n: u64 = digits.parse().map_err(|_| {
        refused(format!(
            "oversize.bytes: {text:?} is not a size (e.g. 8MiB)"
        ))
    })?;
    n.checked_mul(scale)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| refused(format!("oversize.bytes: {text:?} is too large")))
}
