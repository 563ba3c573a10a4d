//! Fixture documents → encoded resources.
//!
//! A document is one of (Envoy's filesystem-xDS shapes):
//! - a `DiscoveryResponse`: `{version_info, type_url?, resources: [{"@type": ..}, ..]}`;
//! - a single resource with `@type`;
//! - a list of resources.
//!
//! YAML files may hold several documents separated by `---`.

use std::path::Path;

use serde::Deserialize;

use crate::{Codec, DecodeError, Resource, codec::kind};

/// The syntax a fixture file is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
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

/// One decoded document: its explicit `version_info` (if it is DiscoveryResponse-shaped and
/// sets one) and its resources, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixtureDoc {
    pub version_info: Option<String>,
    pub resources: Vec<Resource>,
}

/// The keys a DiscoveryResponse-shaped document may carry.
const RESPONSE_KEYS: &[&str] = &[
    "version_info",
    "versionInfo",
    "type_url",
    "typeUrl",
    "resources",
];

impl Codec {
    /// Decodes a whole fixture file. Errors carry the line (syntax) or the resource and field
    /// path (content); the caller adds the file name.
    pub fn decode_fixture(
        &self,
        text: &str,
        format: Format,
    ) -> Result<Vec<FixtureDoc>, DecodeError> {
        let values = parse(text, format)?;
        let mut docs = Vec::with_capacity(values.len());
        let mut counter = 0usize;
        let documents = values.len();
        for (index, value) in values.into_iter().enumerate() {
            docs.push(self.decode_document(index + 1, documents, value, &mut counter)?);
        }
        Ok(docs)
    }

    fn decode_document(
        &self,
        document: usize,
        documents: usize,
        value: serde_json::Value,
        counter: &mut usize,
    ) -> Result<FixtureDoc, DecodeError> {
        let shape = |message: String| DecodeError::Shape { document, message };
        let mut label = |index: Option<usize>| {
            *counter += 1;
            let mut label = format!("resource #{counter}");
            if let Some(i) = index {
                label = format!("resources[{i}]");
            }
            if documents > 1 {
                label = format!("document {document}, {label}");
            }
            label
        };
        match value {
            serde_json::Value::Object(object) if object.contains_key("@type") => Ok(FixtureDoc {
                version_info: None,
                resources: vec![
                    self.encode_owned_resource(serde_json::Value::Object(object), &label(None))?,
                ],
            }),
            serde_json::Value::Object(mut object) => {
                if let Some(key) = object.keys().find(|k| !RESPONSE_KEYS.contains(&k.as_str())) {
                    return Err(shape(format!(
                        "unknown key `{key}`: a document is a resource with \"@type\", a list of \
                         resources, or a DiscoveryResponse (version_info, type_url, resources)"
                    )));
                }
                let version_info = match object.get("version_info").or(object.get("versionInfo")) {
                    None => None,
                    Some(serde_json::Value::String(v)) => Some(v.clone()),
                    Some(other) => {
                        return Err(shape(format!(
                            "version_info must be a string, found {}",
                            kind(other)
                        )));
                    }
                };
                let type_url = object
                    .get("type_url")
                    .or(object.get("typeUrl"))
                    .and_then(|t| t.as_str())
                    .map(str::to_string);
                let items = match object.remove("resources") {
                    Some(serde_json::Value::Array(items)) => items,
                    None | Some(serde_json::Value::Null) => Vec::new(),
                    Some(other) => {
                        return Err(shape(format!(
                            "resources must be a list, found {}",
                            kind(&other)
                        )));
                    }
                };
                let mut resources = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let label = label(Some(i));
                    let resource = self.encode_owned_resource(item, &label)?;
                    if let Some(expected) = type_url.as_ref().filter(|t| **t != resource.type_url) {
                        return Err(DecodeError::TypeMismatch {
                            resource: label,
                            expected: expected.clone(),
                            found: resource.type_url,
                        });
                    }
                    resources.push(resource);
                }
                Ok(FixtureDoc {
                    version_info,
                    resources,
                })
            }
            serde_json::Value::Array(items) => {
                let resources = items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| self.encode_owned_resource(item, &label(Some(i))))
                    .collect::<Result<_, _>>()?;
                Ok(FixtureDoc {
                    version_info: None,
                    resources,
                })
            }
            other => Err(shape(format!(
                "expected a resource, a list of resources or a DiscoveryResponse, found {}",
                kind(&other)
            ))),
        }
    }
}

/// Parses text into one JSON value per document; empty YAML documents are skipped.
fn parse(text: &str, format: Format) -> Result<Vec<serde_json::Value>, DecodeError> {
    match format {
        Format::Json => {
            if text.trim().is_empty() {
                return Ok(Vec::new());
            }
            serde_json::from_str(text)
                .map(|v| vec![v])
                .map_err(|e| DecodeError::Syntax {
                    line: e.line(),
                    column: e.column(),
                    message: e.to_string(),
                })
        }
        Format::Yaml => {
            let mut values = Vec::new();
            for document in serde_yaml_ng::Deserializer::from_str(text) {
                let value = serde_json::Value::deserialize(document).map_err(|e| {
                    let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
                    DecodeError::Syntax {
                        line,
                        column,
                        message: e.to_string(),
                    }
                })?;
                if !value.is_null() {
                    values.push(value);
                }
            }
            Ok(values)
        }
    }
}
