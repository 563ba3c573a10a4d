//! Field encodings shared by every line: type URLs written as short names, times as RFC 3339.

use std::{fmt, ops::Deref, time::SystemTime};

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};
use xdsloop_proto::type_url;

/// A full type URL in Rust, its short name in the file (`cds`; types without an alias keep
/// their full URL), so the file reads easily and still names every type exactly.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypeUrl(pub String);

impl TypeUrl {
    /// Wraps a full type URL as it is (no alias is resolved; see [`TypeUrl::parse`]).
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    /// `cds` for the known xDS types, the full URL for the rest.
    pub fn label(&self) -> &str {
        type_url::ORDERED
            .iter()
            .find(|(_, url)| *url == self.0)
            .map_or(self.0.as_str(), |(alias, _)| alias)
    }

    /// Reads what a person or the file says: an alias (`cds`, `clusters`), a message name or a
    /// full type URL.
    pub fn parse(text: &str) -> Result<Self, String> {
        type_url::resolve(text).map(Self).ok_or_else(|| {
            let aliases: Vec<&str> = type_url::ORDERED.iter().map(|(a, _)| *a).collect();
            format!(
                "unknown type {text:?} (expected {} or a type URL)",
                aliases.join(", ")
            )
        })
    }
}

impl Deref for TypeUrl {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TypeUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl Serialize for TypeUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

impl<'de> Deserialize<'de> for TypeUrl {
    /// The inverse of `serialize`: an alias of the table, or the URL as it was. Whatever a
    /// client sent as a type URL reads back unchanged (one that is itself an alias, such as a
    /// bare `cds`, is not a type URL any server serves).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let known = type_url::ORDERED.iter().find(|(alias, _)| *alias == text);
        Ok(Self(known.map_or(text, |(_, url)| url.to_string())))
    }
}

/// `SystemTime` as an RFC 3339 UTC time with microseconds (`2025-01-02T12:00:01.234567Z`).
pub mod rfc3339 {
    use super::*;

    /// Writes `t` as RFC 3339 UTC with microseconds.
    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_rfc3339_micros(*t))
    }

    /// Reads any RFC 3339 UTC time, whatever its precision.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_rfc3339(&text).map_err(|e| {
            de::Error::custom(format!(
                "time {text:?}: {e} (expected RFC 3339 UTC, e.g. 2025-01-02T12:00:01.234Z)"
            ))
        })
    }
}

/// `HH:MM:SS.mmm` (UTC) of a time: the column `transcript print` starts each line with.
pub fn clock(t: SystemTime) -> String {
    let full = humantime::format_rfc3339_millis(t).to_string();
    full.get(11..23).unwrap_or(&full).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_urls_are_short_in_the_file_and_full_in_rust() {
        let cds = TypeUrl::new(type_url::CLUSTER);
        assert_eq!(serde_json::to_string(&cds).unwrap(), "\"cds\"");
        let back: TypeUrl = serde_json::from_str("\"cds\"").unwrap();
        assert_eq!(back, cds);
        let own = TypeUrl::new("type.googleapis.com/acme.v1.Widget");
        let json = serde_json::to_string(&own).unwrap();
        assert_eq!(json, "\"type.googleapis.com/acme.v1.Widget\"");
        assert_eq!(serde_json::from_str::<TypeUrl>(&json).unwrap(), own);
    }

    #[test]
    fn any_type_url_a_client_sends_reads_back_unchanged() {
        for sent in ["example.com/acme.Widget", "garbage", "clusters", ""] {
            let json = serde_json::to_string(&TypeUrl::new(sent)).unwrap();
            assert_eq!(serde_json::from_str::<TypeUrl>(&json).unwrap().0, sent);
        }
    }

    #[test]
    fn people_get_aliases_resolved_and_typos_refused() {
        assert_eq!(TypeUrl::parse("Clusters").unwrap().0, type_url::CLUSTER);
        let error = TypeUrl::parse("cdz").unwrap_err();
        assert!(
            error.starts_with("unknown type \"cdz\" (expected cds, eds,"),
            "{error}"
        );
    }

    #[test]
    fn times_round_trip_to_the_microsecond_and_print_as_a_clock() {
        let t = humantime::parse_rfc3339("2025-01-02T12:00:01.234567Z").unwrap();
        #[derive(Serialize, Deserialize)]
        struct T {
            #[serde(with = "rfc3339")]
            t: SystemTime,
        }
        let json = serde_json::to_string(&T { t }).unwrap();
        assert_eq!(json, r#"{"t":"2025-01-02T12:00:01.234567Z"}"#);
        assert_eq!(serde_json::from_str::<T>(&json).unwrap().t, t);
        assert_eq!(clock(t), "12:00:01.234");
        let error = serde_json::from_str::<T>(r#"{"t":"noon"}"#).err().unwrap();
        assert!(error.to_string().contains("expected RFC 3339"), "{error}");
    }
}
