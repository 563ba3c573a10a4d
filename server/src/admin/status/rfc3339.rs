//! Times in the status document are RFC 3339 UTC strings with milliseconds
//! (`2025-01-31T12:00:00.123Z`): readable in a terminal, sortable as text, and parsed by every
//! JSON consumer (`jq`, `date -d`).

use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

pub(super) fn format(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

pub(super) fn serialize<S: Serializer>(at: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_rfc3339_millis(*at))
}

pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    let text = String::deserialize(d)?;
    humantime::parse_rfc3339(&text).map_err(D::Error::custom)
}

/// The same for optional times (`null` when absent).
pub(super) mod option {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        at: &Option<SystemTime>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match at {
            Some(at) => super::serialize(at, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        let parse = |t: String| humantime::parse_rfc3339(&t).map_err(D::Error::custom);
        text.map(parse).transpose()
    }
}
