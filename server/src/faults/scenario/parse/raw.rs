//! The scenario file's shape as serde reads it; [`super`] checks each part and turns it into
//! the model. Nothing here is read from a detached value, so whatever serde refuses carries
//! the place the YAML reader was at.

use std::fmt;

use serde::{
    Deserialize,
    de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor},
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) version: u32,
    #[serde(default)]
    pub(super) rules: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRule {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default, rename = "match")]
    pub(super) selector: RawMatch,
    #[serde(default)]
    pub(super) when: RawWhen,
    #[serde(default)]
    pub(super) times: Option<u64>,
    #[serde(default)]
    pub(super) per_stream: Option<u64>,
    #[serde(rename = "do", deserialize_with = "one_action")]
    pub(super) action: RawAction,
}

/// `do:` holds exactly one action (`do: { delay: 2s }`); none, or several, is
/// refused naming what was found and the rule "one action per rule".
fn one_action<'de, D: de::Deserializer<'de>>(d: D) -> Result<RawAction, D::Error> {
    d.deserialize_map(OneAction)
}

struct OneAction;

impl<'de> Visitor<'de> for OneAction {
    type Value = RawAction;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("one action, e.g. `do: { delay: 2s }`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawAction, A::Error> {
        let Some((action, name)) = map.next_key_seed(ActionKey)? else {
            return Err(de::Error::custom(
                "no action given; one action per rule, e.g. `do: { delay: 2s }`",
            ));
        };
        let action = action.read(&mut map)?;
        let mut others = Vec::new();
        while let Some(other) = map.next_key::<String>()? {
            map.next_value::<IgnoredAny>()?;
            others.push(other);
        }
        if others.is_empty() {
            return Ok(action);
        }
        others.insert(0, name);
        Err(de::Error::custom(format!(
            "{} actions given ({}); one action per rule: give each its own rule",
            others.len(),
            others.join(", ")
        )))
    }
}

/// The key under `do:`: which action.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum ActionName {
    Delay,
    Drop,
    Close,
    Reset,
    Hang,
    StaleNonce,
    WrongTypeUrl,
    Duplicate,
    Corrupt,
    Oversize,
    Reorder,
    Withhold,
    Flap,
    IgnoreAcks,
    Outage,
}

impl ActionName {
    /// The action's own fields, read from the value under its name.
    fn read<'de, A: MapAccess<'de>>(self, map: &mut A) -> Result<RawAction, A::Error> {
        Ok(match self {
            ActionName::Delay => RawAction::Delay(map.next_value()?),
            ActionName::Drop => RawAction::Drop(optional_fields(map)?),
            ActionName::Close => RawAction::Close(optional_fields(map)?),
            ActionName::Reset => RawAction::Reset(map.next_value()?),
            ActionName::Hang => RawAction::Hang(optional_fields(map)?),
            ActionName::StaleNonce => RawAction::StaleNonce(optional_fields(map)?),
            ActionName::WrongTypeUrl => RawAction::WrongTypeUrl(map.next_value()?),
            ActionName::Duplicate => RawAction::Duplicate(optional_fields(map)?),
            ActionName::Corrupt => RawAction::Corrupt(optional_fields(map)?),
            ActionName::Oversize => RawAction::Oversize(map.next_value()?),
            ActionName::Reorder => RawAction::Reorder(optional_fields(map)?),
            ActionName::Withhold => RawAction::Withhold(map.next_value()?),
            ActionName::Flap => RawAction::Flap(map.next_value()?),
            ActionName::IgnoreAcks => RawAction::IgnoreAcks(optional_fields(map)?),
            ActionName::Outage => RawAction::Outage(map.next_value()?),
        })
    }
}

/// An action whose fields are all optional: `null` (`drop: null`, `drop: ~`) is `{}`, as an
/// empty value (`drop:`) is.
fn optional_fields<'de, A: MapAccess<'de>, T: Deserialize<'de> + Default>(
    map: &mut A,
) -> Result<T, A::Error> {
    Ok(map.next_value::<Option<T>>()?.unwrap_or_default())
}

/// Reads the key under `do:` as the action it names and the name as written. An unknown
/// name is refused while the reader is on the key, so the refusal points at it.
struct ActionKey;

impl<'de> DeserializeSeed<'de> for ActionKey {
    type Value = (ActionName, String);

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for ActionKey {
    type Value = (ActionName, String);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an action's name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
        let action = ActionName::deserialize(de::value::StrDeserializer::<E>::new(name))?;
        Ok((action, name.to_string()))
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatch {
    pub(super) node: Option<String>,
    pub(super) variant: Option<RawVariant>,
    pub(super) service: Option<RawService>,
    #[serde(rename = "type")]
    pub(super) type_url: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub(super) enum RawVariant {
    Sotw,
    Delta,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub(super) enum RawService {
    Ads,
    PerType,
    Rest,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWhen {
    pub(super) nth: Option<u64>,
    pub(super) every: Option<u64>,
    pub(super) version: Option<String>,
    pub(super) after_ack: Option<String>,
    pub(super) after: Option<String>,
    pub(super) requested: Option<RawRequested>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRequested {
    #[serde(rename = "type")]
    pub(super) type_url: String,
    pub(super) name: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct Empty {}

/// What `do:` holds, read by [`one_action`].
pub(super) enum RawAction {
    Delay(String),
    Drop(Empty),
    Close(RawClose),
    Reset(RawReset),
    Hang(RawHang),
    StaleNonce(Empty),
    WrongTypeUrl(RawWrongType),
    Duplicate(RawPick),
    Corrupt(RawPick),
    Oversize(RawOversize),
    Reorder(Empty),
    Withhold(RawNames),
    Flap(RawFlap),
    IgnoreAcks(RawIgnoreAcks),
    Outage(RawOutage),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOutage {
    #[serde(rename = "for")]
    pub(super) duration: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClose {
    #[serde(default)]
    pub(super) code: Option<String>,
    #[serde(default)]
    pub(super) message: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReset {
    pub(super) scope: RawScope,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RawScope {
    Stream,
    Connection,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHang {
    #[serde(default, rename = "for")]
    pub(super) duration: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWrongType {
    #[serde(rename = "in", default)]
    pub(super) place: Option<RawPlace>,
    #[serde(rename = "type")]
    pub(super) type_url: String,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub(super) enum RawPlace {
    Resource,
    Response,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPick {
    #[serde(default)]
    pub(super) resource: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOversize {
    pub(super) bytes: RawSize,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawSize {
    Number(u64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNames {
    pub(super) names: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFlap {
    pub(super) names: Vec<String>,
    pub(super) period: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIgnoreAcks {
    #[serde(default)]
    pub(super) nacks: bool,
}
