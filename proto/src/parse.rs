//! Fixture text → one JSON value per document, refusing what the parsers would otherwise
//! accept silently: a duplicate key (both serde_json and serde_yaml_ng keep the last value) and
//! a NaN or infinite number (YAML `.nan`, `.inf`, `-.inf`; a JSON value cannot hold one, so
//! it would become `null`, which the decoder takes as "unset"). Both are refused from inside the
//! parser, so the error carries the exact line and column.

use std::{cell::Cell, fmt, path::Path};

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::{DecodeError, Position};

/// The syntax a fixture file is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One JSON value per file.
    Json,
    /// YAML, possibly several documents separated by `---`.
    Yaml,
}

impl Format {
    /// The format for a path by extension (`.json`, `.yaml`, `.yml`), if it is a fixture file.
    pub fn from_path(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "json" => Some(Format::Json),
            "yaml" | "yml" => Some(Format::Yaml),
            _ => None,
        }
    }
}

/// One parsed document: its index among all documents of the file (empty YAML documents
/// included, for [`crate::locate`]) and its value.
pub(crate) struct Document {
    pub index: usize,
    pub value: Value,
}

/// Parses text into one value per document; empty YAML documents are skipped.
pub(crate) fn documents(text: &str, format: Format) -> Result<Vec<Document>, DecodeError> {
    let refusal = Cell::new(None);
    let strict = Strict { refusal: &refusal };
    match format {
        Format::Json => {
            if text.trim().is_empty() {
                return Ok(Vec::new());
            }
            let mut de = serde_json::Deserializer::from_str(text);
            let value = strict
                .deserialize(&mut de)
                .and_then(|value| de.end().map(|()| value))
                .map_err(|e| error(e.to_string(), e.line(), e.column(), refusal.take()))?;
            Ok(vec![Document { index: 0, value }])
        }
        Format::Yaml => {
            // The YAML parser's cost grows with the square of the depth: refuse deep text first.
            crate::yaml_depth::check(text, crate::yaml_depth::MAX_DEPTH).map_err(|e| {
                DecodeError::Syntax {
                    line: e.line,
                    column: e.column,
                    message: e.to_string(),
                }
            })?;
            let mut documents = Vec::new();
            for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
                let value = strict.deserialize(document).map_err(|e| {
                    let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
                    error(e.to_string(), line, column, refusal.take())
                })?;
                if !value.is_null() {
                    documents.push(Document { index, value });
                }
            }
            Ok(documents)
        }
    }
}

/// What [`Strict`] refused; the parser's error only carries the position.
enum Refusal {
    DuplicateKey(String),
    NonFinite(f64),
}

fn error(message: String, line: usize, column: usize, refusal: Option<Refusal>) -> DecodeError {
    let at = Position::new(line, column);
    match refusal {
        Some(Refusal::DuplicateKey(key)) => DecodeError::DuplicateKey { at, key },
        Some(Refusal::NonFinite(value)) => DecodeError::NonFinite {
            at,
            value: if value.is_nan() {
                "NaN".to_string()
            } else if value > 0.0 {
                "infinity".to_string()
            } else {
                "-infinity".to_string()
            },
        },
        None => DecodeError::Syntax {
            line,
            column,
            message,
        },
    }
}

/// Builds a `serde_json::Value` as its own `Deserialize` does, refusing duplicate keys and
/// non-finite numbers.
#[derive(Clone, Copy)]
struct Strict<'a> {
    refusal: &'a Cell<Option<Refusal>>,
}

impl Strict<'_> {
    fn refuse<E: de::Error>(&self, refusal: Refusal) -> E {
        self.refusal.set(Some(refusal));
        E::custom("refused by the fixture parser")
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        let number: Result<Number, E> =
            de::Deserialize::deserialize(de::value::I128Deserializer::new(v));
        number.map(Value::Number)
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        let number: Result<Number, E> =
            de::Deserialize::deserialize(de::value::U128Deserializer::new(v));
        number.map(Value::Number)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        match Number::from_f64(v) {
            Some(number) => Ok(Value::Number(number)),
            None => Err(self.refuse(Refusal::NonFinite(v))),
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key_seed(NewKey {
            strict: self,
            object: &object,
        })? {
            let value = map.next_value_seed(self)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// A map key that must not be in `object` yet. Refused while the parser is on the key, so the
/// position is the duplicate's, not the map's.
struct NewKey<'a> {
    strict: Strict<'a>,
    object: &'a Map<String, Value>,
}

impl<'de> DeserializeSeed<'de> for NewKey<'_> {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_string(self)
    }
}

impl<'de> Visitor<'de> for NewKey<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<String, E> {
        self.visit_string(key.to_string())
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<String, E> {
        if self.object.contains_key(&key) {
            return Err(self.strict.refuse(Refusal::DuplicateKey(key)));
        }
        Ok(key)
    }
}

/// What a JSON value is, for error messages ("found a list").
pub(crate) fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}
