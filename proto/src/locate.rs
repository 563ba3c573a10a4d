//! The line and column of a path inside YAML or JSON text (fixtures, scenario files).
//!
//! Decoding works on parsed values, which carry no positions. When a check fails, the text is
//! parsed once more, walking down the failing path; at its end the walk raises an error, and the
//! YAML or JSON parser stamps that error with the position it is at. Only failures pay for this.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::{DecodeError, Position, parse::Format};

/// One step into a fixture document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A map key, as written.
    Key(String),
    /// A message field, which may be written under its proto name or its JSON name.
    Field {
        /// The proto field name (`connect_timeout`).
        name: String,
        /// Its JSON name (`connectTimeout`).
        json: String,
    },
    /// A list element.
    Index(usize),
}

impl Step {
    /// The key or field name (proto name for fields), if this step is not an index.
    pub fn name(&self) -> Option<&str> {
        match self {
            Step::Key(key) => Some(key),
            Step::Field { name, .. } => Some(name),
            Step::Index(_) => None,
        }
    }

    fn matches(&self, key: &str) -> bool {
        match self {
            Step::Key(k) => k == key,
            Step::Field { name, json } => name == key || json == key,
            Step::Index(_) => false,
        }
    }
}

/// Renders a path the way users write it: `endpoints[0].load_balancing_weight`.
pub(crate) fn display_path(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(_) | Step::Field { .. } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(step.name().unwrap_or_default());
            }
        }
    }
    if out.is_empty() { ".".to_string() } else { out }
}

/// A decode error and where it is inside its document: the value at `path`, or with `key`, the
/// map key that ends the path. [`Failure::located`] turns the path into a line and column.
#[derive(Debug)]
pub(crate) struct Failure {
    /// Boxed: failures travel up several `Result`s on the error path only.
    pub error: Box<DecodeError>,
    pub path: Vec<Step>,
    pub key: bool,
}

impl Failure {
    /// A failure at the root of what is being decoded.
    pub(crate) fn new(error: DecodeError) -> Self {
        Self {
            error: Box::new(error),
            path: Vec::new(),
            key: false,
        }
    }

    pub(crate) fn at(mut self, path: Vec<Step>, key: bool) -> Self {
        self.path = path;
        self.key = key;
        self
    }

    /// The failure seen from `prefix` up (a resource's path inside its document).
    pub(crate) fn under(mut self, prefix: &[Step]) -> Self {
        self.path.splice(0..0, prefix.iter().cloned());
        self
    }

    /// The error, with its position in YAML document `document` (0-based, counting empty
    /// documents) of `text`.
    pub(crate) fn located(self, text: &str, format: Format, document: usize) -> DecodeError {
        let mut error = *self.error;
        if let Some(at) = error.position_mut() {
            *at = position(text, format, document, &self.path, self.key);
        }
        error
    }
}

/// Where `path` is in YAML document `document` (0-based) of `text`: the value at its end, or
/// with `key` the map key that ends it. A path that does not exist in the text (it cannot, for
/// paths taken from the same text, but a best effort beats a panic) gives its longest existing
/// prefix; none of it, [`Position::default`].
pub fn position(text: &str, format: Format, document: usize, path: &[Step], key: bool) -> Position {
    let mut path = path;
    let mut key = key;
    loop {
        if let Some(position) = locate_exact(text, format, document, path, key) {
            return position;
        }
        match path.split_last() {
            Some((_, parent)) => path = parent,
            None => return Position::default(),
        }
        key = false;
    }
}

/// Raised at the end of the path; any other error means the path was not found.
const FOUND: &str = "\u{0}xdsloop: located";

fn locate_exact(
    text: &str,
    format: Format,
    document: usize,
    path: &[Step],
    key: bool,
) -> Option<Position> {
    let walk = Walk { path, key };
    match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            let e = walk.deserialize(&mut de).err()?;
            (e.to_string().contains(FOUND) && e.line() > 0)
                .then(|| Position::new(e.line(), e.column()))
        }
        Format::Yaml => {
            let de = serde_yaml_ng::Deserializer::from_str(text).nth(document)?;
            let e = walk.deserialize(de).err()?;
            let location = e.location()?;
            e.to_string()
                .contains(FOUND)
                .then(|| Position::new(location.line(), location.column()))
        }
    }
}

/// Walks down `path`; at its end fails with [`FOUND`] from inside the parser (so the parser
/// adds its position), on the value, or with `key` on the key that ends the path.
#[derive(Clone, Copy)]
struct Walk<'a> {
    path: &'a [Step],
    key: bool,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Walk<'_> {
    fn here<E: de::Error>(&self) -> Result<(), E> {
        if self.path.is_empty() {
            Err(E::custom(FOUND))
        } else {
            Ok(())
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.here()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.here()
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.here()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.here()
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.here()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.here()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.here()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.here()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.here()
    }
    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.here()?;
        let Some((Step::Index(index), rest)) = self.path.split_first() else {
            return Ok(());
        };
        for _ in 0..*index {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        let rest = Walk {
            path: rest,
            key: self.key,
        };
        seq.next_element_seed(rest)?;
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.here()?;
        let Some((step, rest)) = self.path.split_first() else {
            return Ok(());
        };
        let on_key = self.key && rest.is_empty();
        while let Some(matched) = map.next_key_seed(KeyMatch { step, on_key })? {
            if matched {
                let rest = Walk {
                    path: rest,
                    key: self.key,
                };
                return map.next_value_seed(rest);
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

/// Reads one map key: whether it is `step`'s, failing with [`FOUND`] on it when `on_key`.
struct KeyMatch<'a> {
    step: &'a Step,
    on_key: bool,
}

impl<'de> DeserializeSeed<'de> for KeyMatch<'_> {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyMatch<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        let matched = self.step.matches(key);
        if matched && self.on_key {
            return Err(E::custom(FOUND));
        }
        Ok(matched)
    }

    // Non-string YAML keys (`1:`, `true:`) are never on a fixture path.
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
}
