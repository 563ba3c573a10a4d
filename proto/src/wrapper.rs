//! Resources wrapped in `envoy.service.discovery.v3.Resource` in a fixture, the way Envoy's
//! file-based xDS allows, to give them a time to live (S14):
//!
//! ```yaml
//! "@type": type.googleapis.com/envoy.service.discovery.v3.Resource
//! ttl: 30s
//! resource:
//!   "@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
//!   cluster_name: web
//! ```
//!
//! The wrapper is unwrapped here: what is served is the inner resource with its TTL, and the
//! server wraps it again for the wire. `name` may repeat the inner resource's name; the other
//! wrapper fields (`version`, `aliases`, `cache_control`, `metadata`, ...) are refused with why:
//! the server computes versions and sends heartbeats itself.

use std::time::Duration;

use prost_reflect::{DescriptorPool, DynamicMessage};
use serde::de::IntoDeserializer;

use crate::{
    DecodeError, Position, Resource,
    locate::{Failure, Step},
    parse::kind,
    version, xdstp,
};

/// The type URL of the wrapper, in fixtures and (SotW) on the wire.
pub const RESOURCE_WRAPPER: &str = "type.googleapis.com/envoy.service.discovery.v3.Resource";

type Object = serde_json::Map<String, serde_json::Value>;

/// The resource inside a wrapper document, with the wrapper's TTL; `encode` encodes the inner
/// resource (`pool` reads the TTL).
pub(crate) fn unwrap(
    mut object: Object,
    label: &str,
    pool: &DescriptorPool,
    encode: impl FnOnce(serde_json::Value) -> Result<Resource, Failure>,
) -> Result<Resource, Failure> {
    let refuse = |key: &str, on_key: bool, message: String| {
        let error = DecodeError::Field {
            at: Position::default(),
            resource: label.to_string(),
            path: key.to_string(),
            message,
        };
        Failure::new(error).at(vec![Step::Key(key.to_string())], on_key)
    };
    if let Some(key) = object
        .keys()
        .find(|k| !["@type", "name", "ttl", "resource"].contains(&k.as_str()))
    {
        return Err(refuse(key, true, unwanted(key)));
    }
    let Some(inner) = object.remove("resource") else {
        let message = "a Resource wrapper in a fixture needs `resource` (heartbeats, the \
                           wrapper without it, are the server's job)";
        return Err(refuse("@type", false, message.into()));
    };
    let nested = inner.get("@type").and_then(|t| t.as_str()) == Some(RESOURCE_WRAPPER);
    if nested {
        return Err(refuse(
            "resource",
            false,
            "a Resource wrapper inside another".into(),
        ));
    }
    let mut resource = encode(inner).map_err(|f| f.under(&[Step::Key("resource".into())]))?;
    if let Some(name) = object.get("name") {
        let same = name
            .as_str()
            .map(xdstp::normalize)
            .is_some_and(|n| n == resource.name);
        if !same {
            let message = format!(
                "{name} is not the name of the resource inside ({:?})",
                resource.name
            );
            return Err(refuse("name", false, message));
        }
    }
    if let Some(ttl) = object.get("ttl") {
        let ttl = duration(pool, ttl).map_err(|m| refuse("ttl", false, m))?;
        // The TTL is part of what is served: a new TTL reaches clients as a new version.
        let nanos = ttl.as_nanos().to_string();
        let parts: [&[u8]; 3] = [resource.version.as_bytes(), b"ttl", nanos.as_bytes()];
        resource.version = version::short(version::fnv1a(&parts));
        resource.ttl = Some(ttl);
    }
    Ok(resource)
}

/// A `google.protobuf.Duration` in the proto3 JSON mapping (`"30s"`, `"0.5s"`), positive.
fn duration(pool: &DescriptorPool, value: &serde_json::Value) -> Result<Duration, String> {
    let desc = pool
        .get_message_by_name("google.protobuf.Duration")
        .expect("the Envoy descriptor pool has google.protobuf.Duration");
    let wrong = || format!("expected a duration such as \"30s\", found {}", kind(value));
    let message = DynamicMessage::deserialize(desc, value.clone().into_deserializer())
        .map_err(|e| format!("{}: {e}", wrong()))?;
    let field = |name: &str| message.get_field_by_name(name).map(|v| v.into_owned());
    let seconds = field("seconds").and_then(|v| v.as_i64()).unwrap_or(0);
    let nanos = field("nanos").and_then(|v| v.as_i32()).unwrap_or(0);
    match (u64::try_from(seconds), u32::try_from(nanos)) {
        (Ok(s), Ok(n)) if s > 0 || n > 0 => Ok(Duration::new(s, n)),
        _ => Err(format!("the ttl must be positive, found {value}")),
    }
}

fn unwanted(key: &str) -> String {
    match key {
        "version" => {
            "the server computes versions; a wrapper in a fixture takes no `version`".into()
        }
        "aliases" | "resource_name" | "resourceName" | "cache_control" | "cacheControl"
        | "metadata" => {
            format!(
                "`{key}` is not supported in a fixture's Resource wrapper (only name, ttl, resource)"
            )
        }
        other => format!("unknown key `{other}`: a Resource wrapper has name, ttl and resource"),
    }
}
