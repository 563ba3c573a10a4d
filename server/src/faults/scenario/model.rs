//! A scenario as typed rules: what `--scenario FILE`, `PUT /scenario` and Rust code install.
//! Every field is public and every struct has a `Default`, so tests build rules in code as
//! easily as in YAML; [`Rule::check`] holds the rules both paths must obey.

use std::time::Duration;

use xdsloop_proto::type_url;

/// Names in rules are globs; the machines apply them too (`flap`), so the matcher is the core's.
pub(crate) use crate::protocol::mask::glob_matches;

/// The rules in force, in file order (several may fire on one response, in that order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scenario {
    /// The rules, in file order.
    pub rules: Vec<Rule>,
}

/// One rule: which streams, at what moment, how often, and what it does.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// `[a-z0-9-]+`, unique in the scenario; the file default is `rule-<n>` (1-based).
    pub id: String,
    /// Which streams it applies to (`match` in the file).
    pub selector: Match,
    /// At what moment it fires.
    pub when: When,
    /// Firings server-wide, then the rule is spent; `None`: no limit.
    pub times: Option<u64>,
    /// Firings per stream; `None`: no limit.
    pub per_stream: Option<u64>,
    /// What it does (`do` in the file).
    pub action: Action,
}

impl Default for Rule {
    fn default() -> Self {
        Self {
            id: "rule-1".to_string(),
            selector: Match::default(),
            when: When::default(),
            times: None,
            per_stream: None,
            action: Action::Drop,
        }
    }
}

/// Which streams a rule applies to: all the fields that are set must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Match {
    /// A node id glob (`*` any run, `?` one character).
    pub node: Option<String>,
    /// SotW or Delta.
    pub variant: Option<Variant>,
    /// ADS, a per-type service, or REST.
    pub service: Option<Service>,
    /// A full type URL (the file takes aliases: `cds`, `eds` ...).
    pub type_url: Option<String>,
}

pub use xdsloop_proto::Variant;

/// How the stream reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// The aggregated service (ADS).
    Ads,
    /// A per-type service (CDS, EDS ... on their own streams).
    PerType,
    /// Envoy's REST-JSON polling.
    Rest,
}

/// The moment a rule fires at; all the fields that are set must hold, none set: every response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct When {
    /// The Nth response of the rule's type on the stream (1-based; `reorder`: the Nth batch).
    pub nth: Option<u64>,
    /// Every Nth response (from `nth` on when both are set).
    pub every: Option<u64>,
    /// The response carrying this `version_info` (Delta: `system_version_info`).
    pub version: Option<String>,
    /// The first response after the client ACKed this version of the rule's type.
    pub after_ack: Option<String>,
    /// The stream is at least this old; a stream-ending action with no other moment fires at
    /// this age by itself. On a server-wide rule (`outage`): the time since the scenario was
    /// installed.
    pub after: Option<Duration>,
    /// Server-wide: the first request, by any client, that asks for this resource (the
    /// moment gRPC's interop control plane stops at to test xDS fallback).
    pub requested: Option<Requested>,
}

/// A resource some client asks for: `when.requested`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requested {
    /// A full type URL (the file takes aliases).
    pub type_url: String,
    /// A name glob (`*` any run, `?` one character). A wildcard subscription (SotW LDS/CDS
    /// with no names, Delta `*`) asks for every name of its type.
    pub name: String,
}

impl When {
    /// Only a time since the stream started (or nothing) is set.
    pub fn is_only_time(&self) -> bool {
        self.nth.is_none()
            && self.every.is_none()
            && self.version.is_none()
            && self.after_ack.is_none()
            && self.requested.is_none()
    }
}

/// What a rule does (one action per rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send the response this much later; the stream reads nothing meanwhile.
    Delay(Duration),
    /// Never send the response.
    Drop,
    /// End the stream with this gRPC status instead of the response.
    Close {
        /// The gRPC status code (`14` is UNAVAILABLE).
        code: i32,
        /// The status message the client gets.
        message: String,
    },
    /// End the stream (RST_STREAM) or its whole connection without a status.
    Reset {
        /// The stream alone, or its whole connection.
        scope: ResetScope,
    },
    /// Stop reading and writing, for this long or until the client leaves.
    Hang {
        /// How long; `None`: until the client leaves.
        duration: Option<Duration>,
    },
    /// Send the response with the previous nonce of its type on the stream.
    StaleNonce,
    /// A foreign type URL on one resource (`Any.type_url`) or on the response itself.
    WrongTypeUrl {
        /// On one resource or on the response.
        place: Place,
        /// The foreign type URL sent.
        type_url: String,
    },
    /// The named resource (default: the first) twice in one response.
    Duplicate {
        /// The resource's name; `None`: the response's first.
        resource: Option<String>,
    },
    /// The named resource's (default: the first) bytes replaced by undecodable ones.
    Corrupt {
        /// The resource's name; `None`: the response's first.
        resource: Option<String>,
    },
    /// Pad the response with an unknown field up to at least this many bytes.
    Oversize {
        /// The least size of the padded response, in bytes.
        bytes: usize,
    },
    /// Send a batch of responses dependents first (EDS before CDS, RDS before LDS).
    Reorder,
    /// Never mention these resources (globs) of the rule's type.
    Withhold {
        /// Resource name globs (`*` any run, `?` one character).
        names: Vec<String>,
    },
    /// These resources are alternately gone and back, toggling every `period`.
    Flap {
        /// Resource name globs (`*` any run, `?` one character).
        names: Vec<String>,
        /// How long each phase (gone, back) lasts.
        period: Duration,
    },
    /// After every ACK (and NACK with `nacks`), send the same content again.
    IgnoreAcks {
        /// NACKs too, not only ACKs.
        nacks: bool,
    },
    /// Server-wide: end every stream and close the xDS listener for this long (new
    /// connections are refused), then listen again.
    Outage {
        /// How long the listener stays closed.
        duration: Duration,
    },
}

/// What `reset` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetScope {
    /// The stream alone (RST_STREAM).
    Stream,
    /// The whole connection, with every stream on it.
    Connection,
}

/// Where `wrong_type_url` puts the foreign type URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// On one resource (`Any.type_url`).
    Resource,
    /// On the response's `type_url`.
    Response,
}

impl Action {
    /// The action's name as the scenario file spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Delay(_) => "delay",
            Action::Drop => "drop",
            Action::Close { .. } => "close",
            Action::Reset { .. } => "reset",
            Action::Hang { .. } => "hang",
            Action::StaleNonce => "stale_nonce",
            Action::WrongTypeUrl { .. } => "wrong_type_url",
            Action::Duplicate { .. } => "duplicate",
            Action::Corrupt { .. } => "corrupt",
            Action::Oversize { .. } => "oversize",
            Action::Reorder => "reorder",
            Action::Withhold { .. } => "withhold",
            Action::Flap { .. } => "flap",
            Action::IgnoreAcks { .. } => "ignore_acks",
            Action::Outage { .. } => "outage",
        }
    }

    /// Ends (or freezes) the whole stream rather than changing one response.
    pub fn is_stream_level(&self) -> bool {
        matches!(
            self,
            Action::Close { .. } | Action::Reset { .. } | Action::Hang { .. }
        )
    }

    /// Acts on the whole server, not on one stream: no stream's fault stage takes it.
    pub fn is_server_wide(&self) -> bool {
        matches!(self, Action::Outage { .. })
    }

    /// Shapes which resources exist rather than acting on a response.
    pub fn is_state(&self) -> bool {
        matches!(self, Action::Withhold { .. } | Action::Flap { .. })
    }

    /// Why REST polling cannot do this action, if it cannot: a poll is one request and one
    /// answer, with no stream to end or reset, no nonce the client echoes and no ACK.
    pub fn rest_refusal(&self) -> Option<&'static str> {
        match self {
            Action::Delay(_)
            | Action::Close { .. }
            | Action::Hang { .. }
            | Action::Withhold { .. }
            | Action::Duplicate { .. }
            | Action::Corrupt { .. }
            | Action::Oversize { .. }
            | Action::WrongTypeUrl { .. } => None,
            Action::Drop => Some("a poll left unanswered is `hang`"),
            Action::Reset { .. } => {
                Some("a poll has no stream to reset (`close` answers with an HTTP error)")
            }
            Action::StaleNonce => Some("a REST client echoes no nonce"),
            Action::Reorder => Some("a poll gets one response, never a batch to reorder"),
            Action::IgnoreAcks { .. } => Some("REST has no ACKs to ignore"),
            Action::Flap { .. } => Some("a poll has no stream to push changes on"),
            Action::Outage { .. } => Some("an outage is server-wide: leave out `service`"),
        }
    }
}

/// The largest `oversize.bytes`: the server's own `--max-message-bytes` default (64 MiB). A
/// larger response shows a client nothing more (it is refused for size either way), and each
/// stream would build it in memory.
pub(crate) const MAX_OVERSIZE_BYTES: usize = 64 << 20;
/// The longest `delay`, `hang.for` and `when.after`: a longer wait is indistinguishable from
/// forever in a test run (`hang` without `for` is forever).
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(24 * 60 * 60);
/// The shortest `flap.period`: each turn is a push to every stream the rule applies to.
pub(crate) const MIN_FLAP_PERIOD: Duration = Duration::from_millis(10);
/// The longest `close.message`: it travels in an HTTP/2 trailer (`grpc-message`), which
/// clients bound (gRPC: 8 KiB of headers in all).
pub(crate) const MAX_CLOSE_MESSAGE_BYTES: usize = 1024;

/// Why a rule breaks a check: the field it is about, as the file writes it, and what is wrong.
/// The file's reader turns the field into a line and column; code that builds rules gets the
/// message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The dotted path from the rule (`do.delay`, `when.nth`); empty: the rule as a whole.
    pub(crate) field: String,
    /// The key is what is wrong (it does not belong there), not its value.
    pub(crate) key: bool,
    /// What is wrong, for people.
    pub(crate) message: String,
}

impl Refusal {
    /// The value of `field` is wrong; `field` as messages name it (`outage.for`, `when.nth`).
    pub(crate) fn value(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: written_at(field),
            key: false,
            message: message.into(),
        }
    }

    /// `field` does not belong where it is written.
    pub(crate) fn key(field: &str, message: impl Into<String>) -> Self {
        Self {
            key: true,
            ..Self::value(field, message)
        }
    }
}

/// Where a field that messages name `outage.for` or `when.nth` is written in a rule: an
/// action's fields are under `do`.
fn written_at(field: &str) -> String {
    match field.split('.').next().unwrap_or_default() {
        "" | "id" | "match" | "when" | "times" | "per_stream" | "do" => field.to_string(),
        _ => format!("do.{field}"),
    }
}

impl Rule {
    /// What every rule must obey, however it was written; the error says what is wrong, for
    /// people (the file parser adds where).
    pub fn check(&self) -> Result<(), String> {
        self.check_fields().map_err(|r| r.message)
    }

    /// [`Rule::check`], saying which field each refusal is about.
    pub(crate) fn check_fields(&self) -> Result<(), Refusal> {
        check_id(&self.id)?;
        if let Some(url) = &self.selector.type_url
            && url.is_empty()
        {
            return Err(Refusal::value("match.type", "`type` is empty"));
        }
        check_counts(self)?;
        check_bounds(self)?;
        if self.action.is_server_wide() || self.when.requested.is_some() {
            return check_server_wide(self);
        }
        check_moments(self)?;
        check_action(self)
    }
}

/// Every size and duration within its bound.
fn check_bounds(rule: &Rule) -> Result<(), Refusal> {
    let longest = |field: &str, d: Option<Duration>| match d {
        Some(d) if d > MAX_DURATION => {
            // Only hang has a way to wait longer; the other limits speak of themselves.
            let beyond = match field {
                "hang.for" => " (`hang` without `for` waits for ever)",
                _ => "",
            };
            let message = format!(
                "{field}: at most {}{beyond}, not {}",
                humantime::format_duration(MAX_DURATION),
                humantime::format_duration(d)
            );
            Err(Refusal::value(field, message))
        }
        _ => Ok(()),
    };
    longest("when.after", rule.when.after)?;
    match &rule.action {
        Action::Delay(d) => longest("delay", Some(*d)),
        Action::Outage { duration } => longest("outage.for", Some(*duration)),
        Action::Hang { duration } => longest("hang.for", *duration),
        Action::Oversize { bytes } if *bytes > MAX_OVERSIZE_BYTES => Err(Refusal::value(
            "oversize.bytes",
            format!(
                "oversize.bytes: at most {MAX_OVERSIZE_BYTES} (64MiB, the server's default \
                 --max-message-bytes: a larger response shows a client nothing more), not {bytes}"
            ),
        )),
        Action::Flap { period, .. } if *period < MIN_FLAP_PERIOD && !period.is_zero() => {
            Err(Refusal::value(
                "flap.period",
                format!(
                    "flap.period: at least {}, not {}",
                    humantime::format_duration(MIN_FLAP_PERIOD),
                    humantime::format_duration(*period)
                ),
            ))
        }
        Action::Flap { period, .. } => longest("flap.period", Some(*period)),
        Action::Close { message, .. } if message.len() > MAX_CLOSE_MESSAGE_BYTES => {
            Err(Refusal::value(
                "close.message",
                format!(
                    "close.message: at most {MAX_CLOSE_MESSAGE_BYTES} bytes (it travels in a \
                     trailer), not {}",
                    message.len()
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// A server-wide rule fires once per installation: at it, `when.after` later, or at the first
/// request for `when.requested`; `match` may narrow whose requests count, but not by type
/// (the requested resource says which).
fn check_server_wide(rule: &Rule) -> Result<(), Refusal> {
    let Action::Outage { duration } = &rule.action else {
        return Err(Refusal::key(
            "when.requested",
            format!(
                "`when.requested` is a server-wide moment: it goes with a server-wide action \
                 (`outage`), not `{}`",
                rule.action.name()
            ),
        ));
    };
    if duration.is_zero() {
        return Err(Refusal::value(
            "outage.for",
            "`outage.for` must be above zero",
        ));
    }
    let when = &rule.when;
    let per_response = [
        ("when.nth", when.nth.is_some()),
        ("when.every", when.every.is_some()),
        ("when.version", when.version.is_some()),
        ("when.after_ack", when.after_ack.is_some()),
        ("match.type", rule.selector.type_url.is_some()),
        ("per_stream", rule.per_stream.is_some()),
        ("times", rule.times.is_some_and(|n| n != 1)),
    ];
    if let Some((field, _)) = per_response.iter().find(|(_, set)| *set) {
        return Err(Refusal::key(
            field,
            format!(
                "`outage` is server-wide and fires once per installation: `{field}` does not \
                 apply (its moment is the installation, `when.after` or `when.requested`)"
            ),
        ));
    }
    if when.requested.is_some() && when.after.is_some() {
        return Err(Refusal::key(
            "when.after",
            "`outage` fires at `when.requested` or at `when.after`, not both",
        ));
    }
    if let Some(requested) = &when.requested {
        if requested.name.is_empty() {
            return Err(Refusal::value(
                "when.requested.name",
                "`when.requested.name` is empty",
            ));
        }
        if requested.type_url.is_empty() {
            return Err(Refusal::value(
                "when.requested.type",
                "`when.requested.type` is empty",
            ));
        }
    }
    if rule.selector.service == Some(Service::Rest) {
        return Err(Refusal::value(
            "match.service",
            "`outage` is not supported with `service: rest`: it is server-wide, leave out \
             `service`",
        ));
    }
    let narrowed = rule.selector.node.is_some()
        || rule.selector.variant.is_some()
        || rule.selector.service.is_some();
    if narrowed && when.requested.is_none() {
        return Err(Refusal::key(
            "match",
            "`outage` without `when.requested` takes down the whole port: `match` would not \
             narrow it (it narrows whose requests count for `when.requested`)",
        ));
    }
    Ok(())
}

fn check_id(id: &str) -> Result<(), Refusal> {
    let ok = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Refusal::value(
            "id",
            format!("id {id:?} must be [a-z0-9-]+"),
        ))
    }
}

fn check_counts(rule: &Rule) -> Result<(), Refusal> {
    let when = &rule.when;
    for (name, value) in [
        ("when.nth", when.nth),
        ("when.every", when.every),
        ("times", rule.times),
        ("per_stream", rule.per_stream),
    ] {
        if value == Some(0) {
            return Err(Refusal::value(name, format!("`{name}` must be at least 1")));
        }
    }
    Ok(())
}

fn check_moments(rule: &Rule) -> Result<(), Refusal> {
    let when = &rule.when;
    let needs_type = if when.nth.is_some() && !matches!(rule.action, Action::Reorder) {
        Some("when.nth")
    } else if when.every.is_some() && !matches!(rule.action, Action::Reorder) {
        Some("when.every")
    } else if when.after_ack.is_some() {
        Some("when.after_ack")
    } else if rule.action.is_state() {
        Some(rule.action.name())
    } else {
        None
    };
    if let Some(what) = needs_type
        && rule.selector.type_url.is_none()
    {
        return Err(Refusal::key(
            what,
            format!("`{what}` needs `match.type` (which type's responses?)"),
        ));
    }
    let only_time = matches!(rule.action, Action::IgnoreAcks { .. }) || rule.action.is_state();
    if only_time && let Some(moment) = response_moment(when) {
        return Err(Refusal::key(
            moment,
            format!(
                "`{}` is not about one response: its `when` may only hold `after`",
                rule.action.name()
            ),
        ));
    }
    Ok(())
}

/// The first moment set that is about one response rather than a time.
fn response_moment(when: &When) -> Option<&'static str> {
    [
        ("when.nth", when.nth.is_some()),
        ("when.every", when.every.is_some()),
        ("when.version", when.version.is_some()),
        ("when.after_ack", when.after_ack.is_some()),
        ("when.requested", when.requested.is_some()),
    ]
    .into_iter()
    .find_map(|(field, set)| set.then_some(field))
}

fn check_action(rule: &Rule) -> Result<(), Refusal> {
    let name = rule.action.name();
    match &rule.action {
        Action::Withhold { names } | Action::Flap { names, .. } if names.is_empty() => {
            return Err(Refusal::value(
                &format!("{name}.names"),
                format!("`{name}` needs at least one name"),
            ));
        }
        Action::Flap { period, .. } if period.is_zero() => {
            return Err(Refusal::value(
                "flap.period",
                "`flap.period` must be above zero",
            ));
        }
        Action::WrongTypeUrl { type_url, .. } if type_url.is_empty() => {
            return Err(Refusal::value(
                "wrong_type_url.type",
                "`wrong_type_url.type` is empty",
            ));
        }
        Action::Flap { .. } => check_flap(rule)?,
        Action::Close { code, .. } if *code == 0 => {
            return Err(Refusal::value(
                "close.code",
                "`close.code` OK would not close anything: pick an error code",
            ));
        }
        _ => {}
    }
    if rule.selector.service == Some(Service::Rest) {
        if let Some(why) = rule.action.rest_refusal() {
            return Err(Refusal::value(
                "match.service",
                format!("`{name}` is not supported with `service: rest`: {why}"),
            ));
        }
        if rule.when.after_ack.is_some() {
            return Err(Refusal::key(
                "when.after_ack",
                "`when.after_ack` is not supported with `service: rest`: REST has no ACKs",
            ));
        }
    }
    Ok(())
}

/// SotW absence removes only LDS and CDS resources (S5, C7): a `flap` of another type could
/// take nothing away from a SotW client, so such a rule must be about Delta streams.
fn check_flap(rule: &Rule) -> Result<(), Refusal> {
    let url = rule.selector.type_url.as_deref().unwrap_or_default();
    if type_url::full_state(url) || rule.selector.variant == Some(Variant::Delta) {
        return Ok(());
    }
    Err(Refusal::value(
        "match.type",
        format!(
            "`flap` of {} needs `match.variant: delta`: in SotW only LDS and CDS resources can \
             be removed (a SotW response without a {} resource leaves the client's copy alone)",
            type_url::short_name(url),
            type_url::short_name(url),
        ),
    ))
}

impl Scenario {
    /// Writes every rule's `match.type` as its full type URL: rules built in code take the
    /// aliases the file takes (`cds`, `eds`, ...), and the matcher compares full URLs.
    pub fn with_full_type_urls(mut self) -> Result<Self, String> {
        for (i, rule) in self.rules.iter_mut().enumerate() {
            if let Some(url) = &rule.selector.type_url
                && !url.is_empty()
            {
                let full = resolve_type(url)
                    .map_err(|e| format!("rules[{i}] ({}): match.type: {e}", rule.id))?;
                rule.selector.type_url = Some(full);
            }
        }
        Ok(self)
    }

    /// Checks every rule, then that ids are unique.
    pub fn check(&self) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for (i, rule) in self.rules.iter().enumerate() {
            rule.check()
                .map_err(|e| format!("rules[{i}] ({}): {e}", rule.id))?;
            if !seen.insert(rule.id.as_str()) {
                return Err(format!("rules[{i}]: the id {:?} is used twice", rule.id));
            }
        }
        Ok(())
    }
}

/// gRPC status codes by the names the scenario file uses.
pub(crate) const GRPC_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A gRPC code's name (`UNAVAILABLE`), for people.
pub(crate) fn code_name(code: i32) -> &'static str {
    usize::try_from(code)
        .ok()
        .and_then(|i| GRPC_CODES.get(i))
        .copied()
        .unwrap_or("UNKNOWN")
}

/// A type alias (`cds`), message name or full type URL, as its full type URL.
pub(crate) fn resolve_type(text: &str) -> Result<String, String> {
    type_url::resolve(text).ok_or_else(|| {
        format!("unknown type {text:?} (an alias such as cds, eds, lds, rds, or a type URL)")
    })
}
