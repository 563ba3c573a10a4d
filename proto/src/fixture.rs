//! Fixture documents → encoded resources.
//!
//! A document is one of (Envoy's filesystem-xDS shapes):
//! - a `DiscoveryResponse`: `{version_info, type_url?, resources: [{"@type": ..}, ..]}`;
//! - a single resource with `@type`;
//! - a list of resources.
//!
//! YAML files may hold several documents separated by `---`.

use crate::{
    Codec, DecodeError, Position, Resource,
    locate::{Failure, Step},
    parse::{self, Format, kind},
};

/// One decoded document: its explicit `version_info` (if it is DiscoveryResponse-shaped and
/// sets one) and its resources, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixtureDoc {
    /// The document's `version_info`; `None` for a bare resource or list, or when unset.
    pub version_info: Option<String>,
    /// The document's resources, encoded, in file order.
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
    /// Decodes a whole fixture file. Errors carry the line and column, and for content the
    /// resource and field path; the caller adds the file name. They never quote secret
    /// material ([`crate::secret`]).
    pub fn decode_fixture(
        &self,
        text: &str,
        format: Format,
    ) -> Result<Vec<FixtureDoc>, DecodeError> {
        self.decode_located(text, format)
            .map_err(DecodeError::scrubbed)
    }

    fn decode_located(&self, text: &str, format: Format) -> Result<Vec<FixtureDoc>, DecodeError> {
        let documents = parse::documents(text, format)?;
        let count = documents.len();
        let mut docs = Vec::with_capacity(count);
        let mut counter = 0usize;
        for (number, document) in documents.into_iter().enumerate() {
            let doc = self
                .decode_document(number + 1, count, document.value, &mut counter)
                .map_err(|failure| failure.located(text, format, document.index))?;
            docs.push(doc);
        }
        Ok(docs)
    }

    fn decode_document(
        &self,
        document: usize,
        documents: usize,
        value: serde_json::Value,
        counter: &mut usize,
    ) -> Result<FixtureDoc, Failure> {
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
                resources: vec![self.encode(serde_json::Value::Object(object), &label(None))?],
            }),
            serde_json::Value::Object(object) => self.decode_response(document, object, &mut label),
            serde_json::Value::Array(items) => {
                let resources = items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| {
                        self.encode(item, &label(Some(i)))
                            .map_err(|f| f.under(&[Step::Index(i)]))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(FixtureDoc {
                    version_info: None,
                    resources,
                })
            }
            other => Err(shape(
                document,
                format!(
                    "expected a resource, a list of resources or a DiscoveryResponse, found {}",
                    kind(&other)
                ),
                Vec::new(),
            )),
        }
    }

    /// A DiscoveryResponse-shaped document.
    fn decode_response(
        &self,
        document: usize,
        mut object: serde_json::Map<String, serde_json::Value>,
        label: &mut impl FnMut(Option<usize>) -> String,
    ) -> Result<FixtureDoc, Failure> {
        let key_step = |key: &str| vec![Step::Key(key.to_string())];
        if let Some(key) = object.keys().find(|k| !RESPONSE_KEYS.contains(&k.as_str())) {
            let message = format!(
                "unknown key `{key}`: a document is a resource with \"@type\", a list of \
                 resources, or a DiscoveryResponse (version_info, type_url, resources)"
            );
            return Err(shape(document, message, Vec::new()).at(key_step(key), true));
        }
        let version_key = ["version_info", "versionInfo"]
            .into_iter()
            .find(|k| object.contains_key(*k));
        let version_info = match version_key.map(|k| (k, &object[k])) {
            None => None,
            Some((_, serde_json::Value::String(v))) => Some(v.clone()),
            Some((key, other)) => {
                let message = format!("version_info must be a string, found {}", kind(other));
                return Err(shape(document, message, key_step(key)));
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
                let message = format!("resources must be a list, found {}", kind(&other));
                return Err(shape(document, message, key_step("resources")));
            }
        };
        let mut resources = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let label = label(Some(i));
            let prefix = [Step::Key("resources".into()), Step::Index(i)];
            let resource = self.encode(item, &label).map_err(|f| f.under(&prefix))?;
            if let Some(expected) = type_url.as_ref().filter(|t| **t != resource.type_url) {
                let error = DecodeError::TypeMismatch {
                    at: Position::default(),
                    resource: label,
                    expected: expected.clone(),
                    found: resource.type_url,
                };
                let mut path = prefix.to_vec();
                path.push(Step::Key("@type".into()));
                return Err(Failure::new(error).at(path, false));
            }
            resources.push(resource);
        }
        Ok(FixtureDoc {
            version_info,
            resources,
        })
    }
}

fn shape(document: usize, message: String, path: Vec<Step>) -> Failure {
    let error = DecodeError::Shape {
        at: Position::default(),
        document,
        message,
    };
    Failure::new(error).at(path, false)
}

#[cfg(test)]
mod tests;
