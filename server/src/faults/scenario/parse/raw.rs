//! The scenario file's shape as serde reads it; [`super`] checks each part and turns it into
//! the model.

use serde::Deserialize;

use super::Checked;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) version: u32,
    #[serde(default)]
    pub(super) rules: Vec<Checked>,
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
fn one_action<'de, D: serde::Deserializer<'de>>(d: D) -> Result<RawAction, D::Error> {
    use serde::de::Error;
    let value = serde_yaml_ng::Value::deserialize(d)?;
    if let serde_yaml_ng::Value::Mapping(map) = &value
        && map.len() != 1
    {
        let keys: Vec<String> = map
            .keys()
            .map(|k| match k.as_str() {
                Some(key) => key.to_string(),
                None => format!("{k:?}"),
            })
            .collect();
        return Err(D::Error::custom(match keys.len() {
            0 => "do: no action given; one action per rule, e.g. `do: { delay: 2s }`".to_string(),
            n => format!(
                "do: {n} actions given ({}); one action per rule: give each its own rule",
                keys.join(", ")
            ),
        }));
    }
    serde_yaml_ng::with::singleton_map::deserialize(value).map_err(D::Error::custom)
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

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
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

#[derive(Deserialize)]
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

#[derive(Deserialize)]
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
