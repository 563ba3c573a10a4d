//! The descriptor pool and the conversions between the proto3 JSON mapping and encoded
//! resources. The pool starts from the complete Envoy API that `envoy-types` ships and can be
//! extended with user `FileDescriptorSet`s (`--descriptor-set`).

use std::sync::{Arc, LazyLock, OnceLock};

use bytes::Bytes;
use prost::Message;
use prost_reflect::{
    DescriptorPool, DeserializeOptions, DynamicMessage, MessageDescriptor, SerializeOptions,
};
use serde::de::IntoDeserializer;
use serde_path_to_error::Segment;

use crate::{
    DecodeError, Position, Resource,
    locate::{self, Failure, Step},
    parse,
    redact::{Secrets, Sensitive},
    secret, strict, type_url, version, wrapper, xdstp,
};

static ENVOY_DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/envoy.bin"));

static ENVOY_POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
    DescriptorPool::decode(ENVOY_DESCRIPTORS)
        .expect("the descriptor set embedded from envoy-types decodes")
});

/// The Envoy API's sensitive fields, found once per process and shared by every codec over
/// the Envoy pool alone.
static ENVOY_SENSITIVE: LazyLock<Arc<OnceLock<Sensitive>>> = LazyLock::new(Default::default);

/// The encoded `FileDescriptorSet` of the whole Envoy v3 API (for gRPC server reflection).
pub fn envoy_descriptor_set() -> &'static [u8] {
    ENVOY_DESCRIPTORS
}

/// Converts between fixture JSON and encoded resources. Cheap to clone (the pool is shared).
#[derive(Clone, Debug)]
pub struct Codec {
    pool: DescriptorPool,
    /// Found on first use: reading every field's options takes milliseconds, and most
    /// programs (a fleet, a conformance run) never display a resource.
    sensitive: Arc<OnceLock<Sensitive>>,
}

impl Default for Codec {
    fn default() -> Self {
        Self::envoy()
    }
}

impl Codec {
    /// A codec over the Envoy v3 API only.
    pub fn envoy() -> Self {
        Self {
            pool: ENVOY_POOL.clone(),
            sensitive: ENVOY_SENSITIVE.clone(),
        }
    }

    /// A codec over the Envoy API plus the given encoded `FileDescriptorSet`s.
    pub fn with_descriptor_sets<'a>(
        sets: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Self, DecodeError> {
        let mut pool = ENVOY_POOL.clone();
        for set in sets {
            pool.decode_file_descriptor_set(set)
                .map_err(|e| DecodeError::Descriptors(e.to_string()))?;
        }
        Ok(Self {
            pool,
            sensitive: Default::default(),
        })
    }

    /// The fields this pool marks `(udpa.annotations.sensitive)`.
    pub fn sensitive(&self) -> &Sensitive {
        self.sensitive.get_or_init(|| Sensitive::of(&self.pool))
    }

    /// `bytes` with every secret value hidden ([`crate::redact`]), or `None` when there was
    /// nothing to hide (the caller keeps the original bytes: re-encoding is avoided because it
    /// may reorder map entries).
    pub fn redacted(&self, type_url: &str, bytes: &[u8]) -> Result<Option<Bytes>, DecodeError> {
        let mut message = self.decode(type_url, bytes)?;
        Ok(self
            .sensitive()
            .redact(&mut message)
            .then(|| Bytes::from(message.encode_to_vec())))
    }

    /// The descriptor pool: the Envoy API plus any user descriptor sets.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// The message descriptor for a type URL, if the pool knows it.
    pub fn message(&self, type_url: &str) -> Option<MessageDescriptor> {
        self.pool
            .get_message_by_name(type_url::message_name(type_url))
    }

    /// Encodes one resource object in the proto3 JSON mapping (with its `@type`).
    /// `label` names the resource in errors (e.g. `resource #2`).
    pub fn encode_resource(
        &self,
        value: &serde_json::Value,
        label: &str,
    ) -> Result<Resource, DecodeError> {
        self.encode_owned_resource(value.clone(), label)
    }

    /// [`Codec::encode_resource`] of a value the caller no longer needs (no copy is made).
    pub fn encode_owned_resource(
        &self,
        value: serde_json::Value,
        label: &str,
    ) -> Result<Resource, DecodeError> {
        self.encode(value, label).map_err(|failure| *failure.error)
    }

    /// An already encoded resource of `type_url`, checked and named like a fixture. Its version
    /// hashes its JSON form, as a fixture's does: the same message may encode its map fields
    /// in any order, and equal content must keep one version.
    pub fn encode_bytes(&self, type_url: &str, bytes: &[u8]) -> Result<Resource, DecodeError> {
        let json = self.to_json(type_url, bytes)?;
        let label = format!("a {}", type_url::message_name(type_url));
        self.encode_owned_resource(json, &label)
    }

    /// [`Codec::encode_owned_resource`], keeping where in the resource a failure is.
    pub(crate) fn encode(
        &self,
        value: serde_json::Value,
        label: &str,
    ) -> Result<Resource, Failure> {
        let mut object = match value {
            serde_json::Value::Object(object) => object,
            other => {
                return Err(Failure::new(DecodeError::Field {
                    at: Position::default(),
                    resource: label.to_string(),
                    path: ".".into(),
                    message: format!(
                        "expected an object with \"@type\", found {}",
                        parse::kind(&other)
                    ),
                }));
            }
        };
        if object.get("@type").and_then(|t| t.as_str()) == Some(wrapper::RESOURCE_WRAPPER) {
            let encode = |inner| self.encode(inner, label);
            return wrapper::unwrap(object, label, &self.pool, encode);
        }
        let (type_url, label, desc) = self.resource_type(&object, label)?;
        // Hash the JSON rather than the encoding: prost-reflect encodes map fields in hash-map
        // order, which differs between processes, and versions must survive restarts. The
        // JSON (with its `@type`) is serialized straight into the hash, before `@type` goes.
        let mut hash = version::Fnv1a::new();
        hash.update(type_url.as_bytes());
        hash.end_part();
        serde_json::to_writer(&mut hash, &object).expect("JSON values serialize");
        hash.end_part();
        object.remove("@type");
        let mut message = decode_json(desc, serde_json::Value::Object(object))
            .map_err(|(path, key, text)| field_failure(&type_url, &label, path, key, text))?;
        strict::check(&message, &self.pool)
            .map_err(|v| field_failure(&type_url, &label, v.path, false, v.message))?;
        let Some(name) = name_of(&message, &type_url) else {
            let field = type_url::name_field(&type_url);
            let step = Step::Field {
                name: field.to_string(),
                json: type_url::json_name(field).to_string(),
            };
            let error = DecodeError::MissingName {
                at: Position::default(),
                resource: label,
                field: field.to_string(),
            };
            return Err(Failure::new(error).at(vec![step], true));
        };
        let name = xdstp::fixture_name(&mut message, &type_url, name, &label)?;
        Ok(Resource {
            type_url,
            name,
            bytes: Bytes::from(message.encode_to_vec()),
            version: version::short(hash.finish()),
            ttl: None,
        })
    }

    /// A resource object's type URL, its label for errors (with the name, when it has one)
    /// and its message descriptor.
    fn resource_type(
        &self,
        object: &serde_json::Map<String, serde_json::Value>,
        label: &str,
    ) -> Result<(String, String, MessageDescriptor), Failure> {
        let Some(type_url) = object.get("@type").and_then(|t| t.as_str()) else {
            return Err(Failure::new(DecodeError::MissingType {
                at: Position::default(),
                resource: label.to_string(),
            }));
        };
        let type_url = type_url.to_string();
        let label = match peek_name(object, &type_url) {
            Some(name) => format!("{label} ({} \"{name}\")", type_url::message_name(&type_url)),
            None => label.to_string(),
        };
        let at = Position::default();
        let error = match type_url::fixture_message_name(&type_url) {
            None => DecodeError::BadTypeUrl {
                at,
                resource: label,
                type_url,
            },
            Some(name) => match self.pool.get_message_by_name(name) {
                Some(desc) => return Ok((type_url, label, desc)),
                None => DecodeError::UnknownType {
                    at,
                    resource: label,
                    type_url,
                },
            },
        };
        Err(Failure::new(error).at(vec![Step::Key("@type".into())], false))
    }

    /// Decodes an encoded resource of `type_url` (e.g. an `Any.value` from the wire).
    pub fn decode(&self, type_url: &str, bytes: &[u8]) -> Result<DynamicMessage, DecodeError> {
        let desc = self.message(type_url).ok_or_else(|| DecodeError::Wire {
            type_url: type_url.to_string(),
            message: "type not in the descriptor pool".into(),
        })?;
        DynamicMessage::decode(desc, bytes).map_err(|e| DecodeError::Wire {
            type_url: type_url.to_string(),
            message: e.to_string(),
        })
    }

    /// The name of an encoded resource (`name`, or `cluster_name` for endpoints).
    /// The whole message is decoded (an undecodable resource is an error, C6); the Envoy
    /// resource types go through their generated prost structs, several times faster than
    /// the descriptor-driven `DynamicMessage` (which stays for user-added types).
    pub fn resource_name(&self, type_url: &str, bytes: &[u8]) -> Result<String, DecodeError> {
        let name = match typed_name(type_url, bytes) {
            Some(decoded) => decoded.map_err(|e| DecodeError::Wire {
                type_url: type_url.to_string(),
                message: e.to_string(),
            })?,
            None => name_of(&self.decode(type_url, bytes)?, type_url).unwrap_or_default(),
        };
        if name.is_empty() {
            return Err(DecodeError::Wire {
                type_url: type_url.to_string(),
                message: format!("resource has no `{}`", type_url::name_field(type_url)),
            });
        }
        Ok(name)
    }

    /// The resource as proto3 JSON with `@type` first-class, using proto field names, secret
    /// values hidden ([`crate::redact`]).
    pub fn to_json(&self, type_url: &str, bytes: &[u8]) -> Result<serde_json::Value, DecodeError> {
        self.to_json_with(type_url, bytes, Secrets::Hide)
    }

    /// [`Codec::to_json`], showing secret values with [`Secrets::Show`].
    pub fn to_json_with(
        &self,
        type_url: &str,
        bytes: &[u8],
        secrets: Secrets,
    ) -> Result<serde_json::Value, DecodeError> {
        let mut message = self.decode(type_url, bytes)?;
        if secrets == Secrets::Hide {
            self.sensitive().redact(&mut message);
        }
        let options = SerializeOptions::new().use_proto_field_name(true);
        let value = message
            .serialize_with_options(serde_json::value::Serializer, &options)
            .map_err(|e| DecodeError::Wire {
                type_url: type_url.to_string(),
                message: e.to_string(),
            })?;
        let mut object = serde_json::Map::new();
        object.insert(
            "@type".into(),
            serde_json::Value::String(type_url.to_string()),
        );
        if let serde_json::Value::Object(fields) = value {
            object.extend(fields);
        }
        Ok(serde_json::Value::Object(object))
    }
}

/// Decodes one of the Envoy resource types with its generated struct and returns its name;
/// `None` for other types.
fn typed_name(type_url: &str, bytes: &[u8]) -> Option<Result<String, prost::DecodeError>> {
    use crate::envoy::envoy::config::{
        cluster::v3::Cluster,
        core::v3::TypedExtensionConfig,
        endpoint::v3::ClusterLoadAssignment,
        listener::v3::Listener,
        route::v3::{RouteConfiguration, ScopedRouteConfiguration, VirtualHost},
    };
    use crate::envoy::envoy::extensions::transport_sockets::tls::v3::Secret;
    use crate::envoy::envoy::service::runtime::v3::Runtime;
    let name = match type_url {
        type_url::CLUSTER => Cluster::decode(bytes).map(|m| m.name),
        type_url::ENDPOINT => ClusterLoadAssignment::decode(bytes).map(|m| m.cluster_name),
        type_url::LISTENER => Listener::decode(bytes).map(|m| m.name),
        type_url::ROUTE => RouteConfiguration::decode(bytes).map(|m| m.name),
        type_url::SCOPED_ROUTE => ScopedRouteConfiguration::decode(bytes).map(|m| m.name),
        type_url::VIRTUAL_HOST => VirtualHost::decode(bytes).map(|m| m.name),
        type_url::SECRET => Secret::decode(bytes).map(|m| m.name),
        type_url::RUNTIME => Runtime::decode(bytes).map(|m| m.name),
        type_url::EXTENSION_CONFIG => TypedExtensionConfig::decode(bytes).map(|m| m.name),
        _ => return None,
    };
    Some(name)
}

/// A decoding failure inside a resource: the path to the offending value (or, with `key`, to
/// the offending map key) and the decoder's message.
type Refused = (Vec<Step>, bool, String);

fn decode_json(
    desc: MessageDescriptor,
    value: serde_json::Value,
) -> Result<DynamicMessage, Refused> {
    let options = DeserializeOptions::new().deny_unknown_fields(true);
    let mut track = serde_path_to_error::Track::new();
    let deserializer =
        serde_path_to_error::Deserializer::new(value.into_deserializer(), &mut track);
    DynamicMessage::deserialize_with_options(desc, deserializer, &options).map_err(|e| {
        let message = e.to_string();
        let mut path: Vec<Step> = track
            .path()
            .iter()
            .map_while(|segment| match segment {
                Segment::Seq { index } => Some(Step::Index(*index)),
                Segment::Map { key } => Some(Step::Key(key.clone())),
                Segment::Enum { .. } | Segment::Unknown => None,
            })
            .collect();
        // An unknown field fails at its parent, so its own name (which prost-reflect puts in
        // the message) is appended: users look for the typo, and its line is the key's.
        let unknown = message
            .strip_prefix("unrecognized field name '")
            .and_then(|rest| rest.split('\'').next());
        if let Some(name) = unknown {
            path.push(Step::Key(name.to_string()));
        }
        (path, unknown.is_some(), message)
    })
}

/// A field error, with the decoder's message redacted where the value may be secret material.
fn field_failure(
    type_url: &str,
    label: &str,
    path: Vec<Step>,
    key: bool,
    message: String,
) -> Failure {
    let message = if secret::holds_secret(type_url, &path) {
        secret::redact_values(&message)
    } else {
        message
    };
    let error = DecodeError::Field {
        at: Position::default(),
        resource: label.to_string(),
        path: locate::display_path(&path),
        message,
    };
    Failure::new(error).at(path, key)
}

fn name_of(message: &DynamicMessage, type_url: &str) -> Option<String> {
    let field = type_url::name_field(type_url);
    let name = message.get_field_by_name(field)?.as_str()?.to_string();
    (!name.is_empty()).then_some(name)
}

fn peek_name(
    object: &serde_json::Map<String, serde_json::Value>,
    type_url: &str,
) -> Option<String> {
    let field = type_url::name_field(type_url);
    object
        .get(field)
        .or_else(|| object.get(type_url::json_name(field)))?
        .as_str()
        .map(str::to_string)
}
