//! Secret material kept out of what xdsloop displays: `/snapshot`, the client's `--dump` and
//! update lines, anything else that turns a resource into JSON for a person.
//!
//! Which fields are secret is Envoy's own answer: the API marks them with the field option
//! `(udpa.annotations.sensitive) = true` (SDS private keys, passwords, PKCS#12 blobs, session
//! ticket keys, generic secrets, credentials of a few extensions), and Envoy's config dump
//! redacts by the same option. User `--descriptor-set` types that carry the option are covered
//! the same way. A hidden value becomes `[redacted, N bytes]`; a `DataSource` keeps its
//! `filename` or `environment_variable` (a reference, not the secret). `Any` fields are
//! unpacked so an inline certificate inside a cluster's `transport_socket` is found too.
//!
//! The wire is not touched: xDS clients still receive the secrets they are configured with.

use std::collections::HashSet;

use bytes::Bytes;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, ReflectMessage, Value};

use crate::type_url;

/// The option that marks secret fields (`udpa/annotations/sensitive.proto`).
const SENSITIVE: &str = "udpa.annotations.sensitive";
const ANY: &str = "google.protobuf.Any";
const DATA_SOURCE: &str = "envoy.config.core.v3.DataSource";
const STRING_VALUE: &str = "google.protobuf.StringValue";

/// Whether a display shows secret values or hides them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Secrets {
    /// `[redacted, N bytes]` in their place (the default everywhere).
    #[default]
    Hide,
    /// As they are (`--show-secrets`, for local debugging).
    Show,
}

/// What replaces a secret value of `len` bytes.
pub fn marker(len: usize) -> String {
    format!("[redacted, {len} bytes]")
}

/// The fields of a descriptor pool marked sensitive, by full name.
#[derive(Debug, Default)]
pub struct Sensitive {
    fields: HashSet<String>,
}

impl Sensitive {
    /// Reads the option off every field of every message in `pool`.
    pub fn of(pool: &DescriptorPool) -> Self {
        let Some(option) = pool.get_extension_by_name(SENSITIVE) else {
            return Self::default();
        };
        let marked = |field: &prost_reflect::FieldDescriptor| {
            let options = field.options();
            options.has_extension(&option) && options.get_extension(&option).as_bool() == Some(true)
        };
        let fields = pool
            .all_messages()
            .flat_map(|message| message.fields().collect::<Vec<_>>())
            .filter(marked)
            .map(|field| field.full_name().to_string())
            .collect();
        Self { fields }
    }

    /// Whether the field with this full name (`package.Message.field`) is marked sensitive.
    pub fn contains(&self, field: &str) -> bool {
        self.fields.contains(field)
    }

    /// How many fields of the pool are marked sensitive.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the pool marks no field sensitive (it lacks the option, or never uses it).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Hides every sensitive value in `message`, looking inside `Any`s the pool knows. Returns
    /// whether anything was hidden: callers re-encode only then (prost-reflect writes maps in
    /// hash order, so an unchanged message re-encoded may not be byte-identical).
    pub fn redact(&self, message: &mut DynamicMessage) -> bool {
        if message.descriptor().full_name() == ANY {
            return self.any(message);
        }
        let mut changed = false;
        for (field, value) in message.fields_mut() {
            changed |= if self.contains(field.full_name()) {
                hide(value)
            } else {
                self.value(value)
            };
        }
        changed
    }

    fn value(&self, value: &mut Value) -> bool {
        match value {
            Value::Message(message) => self.redact(message),
            Value::List(items) => items.iter_mut().fold(false, |c, v| self.value(v) | c),
            Value::Map(map) => map.values_mut().fold(false, |c, v| self.value(v) | c),
            _ => false,
        }
    }

    /// An `Any` of a type the pool knows: unpacked, redacted, and packed again if changed.
    fn any(&self, any: &mut DynamicMessage) -> bool {
        let pool = any.descriptor().parent_pool().clone();
        let (Some(url), Some(bytes)) = (
            any.get_field_by_name("type_url"),
            any.get_field_by_name("value"),
        ) else {
            return false;
        };
        let (Some(url), Some(bytes)) = (url.as_str(), bytes.as_bytes()) else {
            return false;
        };
        let Some(desc) = pool.get_message_by_name(type_url::message_name(url)) else {
            return false;
        };
        let Ok(mut inner) = DynamicMessage::decode(desc, bytes.clone()) else {
            return false;
        };
        if !self.redact(&mut inner) {
            return false;
        }
        any.set_field_by_name("value", Value::Bytes(inner.encode_to_vec().into()));
        true
    }
}

/// Hides the value of a sensitive field: text and bytes become the marker, a `DataSource`
/// keeps only its reference, an `Any` becomes a `StringValue` of the marker, any other
/// message has every text and bytes leaf hidden. Numbers, booleans and enums are not secret
/// material and stay.
fn hide(value: &mut Value) -> bool {
    match value {
        Value::String(text) if !text.is_empty() => {
            *text = marker(text.len());
            true
        }
        Value::Bytes(bytes) if !bytes.is_empty() => {
            *bytes = Bytes::from(marker(bytes.len()));
            true
        }
        Value::List(items) => items.iter_mut().fold(false, |c, v| hide(v) | c),
        Value::Map(map) => map.values_mut().fold(false, |c, v| hide(v) | c),
        Value::Message(message) => match message.descriptor().full_name() {
            DATA_SOURCE => hide_data_source(message),
            ANY => hide_any(message),
            _ => message.fields_mut().fold(false, |c, (_, v)| hide(v) | c),
        },
        _ => false,
    }
}

fn hide_data_source(source: &mut DynamicMessage) -> bool {
    let inline = ["inline_bytes", "inline_string"]
        .into_iter()
        .find_map(|name| {
            let value = source.get_field_by_name(name)?;
            match &*value {
                Value::Bytes(b) if source.has_field_by_name(name) => Some(b.len()),
                Value::String(s) if source.has_field_by_name(name) => Some(s.len()),
                _ => None,
            }
        });
    let Some(len) = inline else {
        return false;
    };
    // Setting one member of the `specifier` oneof clears the others.
    source.set_field_by_name("inline_string", Value::String(marker(len)));
    true
}

fn hide_any(any: &mut DynamicMessage) -> bool {
    let len = any
        .get_field_by_name("value")
        .and_then(|v| v.as_bytes().map(Bytes::len))
        .unwrap_or(0);
    let pool = any.descriptor().parent_pool().clone();
    let Some(string_value) = pool.get_message_by_name(STRING_VALUE) else {
        any.clear_field_by_name("value");
        return true;
    };
    let mut text = DynamicMessage::new(string_value);
    text.set_field_by_name("value", Value::String(marker(len)));
    let url = format!("{}{STRING_VALUE}", type_url::PREFIX);
    any.set_field_by_name("type_url", Value::String(url));
    any.set_field_by_name("value", Value::Bytes(text.encode_to_vec().into()));
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Codec;

    #[test]
    fn envoy_marks_the_sds_secret_fields_sensitive() {
        let sensitive = Sensitive::of(Codec::envoy().pool());
        let tls = "envoy.extensions.transport_sockets.tls.v3";
        for field in [
            format!("{tls}.TlsCertificate.private_key"),
            format!("{tls}.TlsCertificate.password"),
            format!("{tls}.TlsCertificate.pkcs12"),
            format!("{tls}.TlsSessionTicketKeys.keys"),
            format!("{tls}.GenericSecret.secret"),
        ] {
            assert!(sensitive.contains(&field), "{field}");
        }
        assert!(!sensitive.contains(&format!("{tls}.TlsCertificate.certificate_chain")));
        assert!(sensitive.len() >= 20, "{} fields", sensitive.len());
    }

    #[test]
    fn a_pool_without_the_option_has_no_sensitive_fields() {
        assert!(Sensitive::of(&DescriptorPool::new()).is_empty());
    }

    #[test]
    fn hide_keeps_references_and_non_text_values() {
        let mut number = Value::U32(7);
        assert!(!hide(&mut number));
        let mut empty = Value::String(String::new());
        assert!(!hide(&mut empty), "nothing to hide");
        let mut text = Value::String("hunter2".into());
        assert!(hide(&mut text));
        assert_eq!(text.as_str(), Some("[redacted, 7 bytes]"));
        let pool = Codec::envoy().pool().clone();
        let desc = pool.get_message_by_name(DATA_SOURCE).unwrap();
        let mut file = DynamicMessage::new(desc.clone());
        file.set_field_by_name("filename", Value::String("/etc/key.pem".into()));
        let mut value = Value::Message(file.clone());
        assert!(!hide(&mut value), "a file name is a reference");
        let mut inline = DynamicMessage::new(desc);
        inline.set_field_by_name("inline_bytes", Value::Bytes(Bytes::from_static(b"KEY")));
        let mut value = Value::Message(inline);
        assert!(hide(&mut value));
        let hidden = value.as_message().unwrap();
        assert!(!hidden.has_field_by_name("inline_bytes"));
        let shown = hidden.get_field_by_name("inline_string").unwrap();
        assert_eq!(shown.as_str(), Some("[redacted, 3 bytes]"));
    }
}
