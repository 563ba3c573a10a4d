//! What the proto3 JSON mapping lets through but a fixture must not hold, checked on the decoded
//! message:
//! - an enum given as a number the enum does not define (proto3 enums are open, so the decoder
//!   keeps `lb_policy: 99`; in a fixture it is a typo, and clients would each treat it their way);
//! - a NaN or infinite float or double (the JSON strings `"NaN"`, `"Infinity"`, `"-Infinity"`
//!   are valid proto3 JSON; fixtures refuse them like YAML's `.nan`, see [`crate::parse`]);
//! - a nested `Any` whose `@type` is not `type.googleapis.com/<message>` (the decoder resolves
//!   any prefix; clients that look extensions up by full type URL would not).

use prost_reflect::{DescriptorPool, DynamicMessage, Kind, MapKey, ReflectMessage, Value};

use crate::{locate::Step, type_url};

/// One refusal: where (the field path) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub path: Vec<Step>,
    pub message: String,
}

/// The first violation in `message`, walking fields in field-number order.
pub(crate) fn check(message: &DynamicMessage, pool: &DescriptorPool) -> Result<(), Violation> {
    Walk {
        pool,
        path: Vec::new(),
    }
    .message(message)
}

struct Walk<'a> {
    pool: &'a DescriptorPool,
    path: Vec<Step>,
}

impl Walk<'_> {
    fn fail(&self, message: String) -> Result<(), Violation> {
        Err(Violation {
            path: self.path.clone(),
            message,
        })
    }

    fn message(&mut self, message: &DynamicMessage) -> Result<(), Violation> {
        let descriptor = message.descriptor();
        let name = descriptor.full_name();
        if name == "google.protobuf.Any" {
            return self.any(message);
        }
        // The other well-known types have their own JSON forms (a wrapper is its bare value):
        // their fields are checked where the value is written, without a step of their own.
        let own_steps = !name.starts_with("google.protobuf.");
        for (field, value) in message.fields() {
            if own_steps {
                self.path.push(Step::Field {
                    name: field.name().to_string(),
                    json: field.json_name().to_string(),
                });
            }
            self.value(&field.kind(), value)?;
            if own_steps {
                self.path.pop();
            }
        }
        Ok(())
    }

    fn value(&mut self, kind: &Kind, value: &Value) -> Result<(), Violation> {
        match value {
            Value::EnumNumber(number) => self.enum_number(kind, *number),
            Value::F32(v) if !v.is_finite() => self.fail(non_finite(f64::from(*v))),
            Value::F64(v) if !v.is_finite() => self.fail(non_finite(*v)),
            Value::Message(message) => self.message(message),
            Value::List(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.path.push(Step::Index(index));
                    self.value(kind, item)?;
                    self.path.pop();
                }
                Ok(())
            }
            Value::Map(map) => {
                let Kind::Message(entry) = kind else {
                    return Ok(());
                };
                let value_kind = entry.map_entry_value_field().kind();
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                for (key, value) in entries {
                    self.path.push(Step::Key(key_text(key)));
                    self.value(&value_kind, value)?;
                    self.path.pop();
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn enum_number(&self, kind: &Kind, number: i32) -> Result<(), Violation> {
        let Kind::Enum(descriptor) = kind else {
            return Ok(());
        };
        if descriptor.get_value(number).is_some() {
            return Ok(());
        }
        let valid: Vec<String> = descriptor
            .values()
            .map(|v| format!("{} ({})", v.name(), v.number()))
            .collect();
        self.fail(format!(
            "{number} is not a value of enum {}; use one of: {}",
            descriptor.full_name(),
            valid.join(", ")
        ))
    }

    fn any(&mut self, any: &DynamicMessage) -> Result<(), Violation> {
        let field = |name: &str| any.get_field_by_name(name).map(|v| v.into_owned());
        let Some(Value::String(url)) = field("type_url") else {
            return Ok(());
        };
        let Some(Value::Bytes(bytes)) = field("value") else {
            return Ok(());
        };
        if url.is_empty() && bytes.is_empty() {
            return Ok(());
        }
        let payload = type_url::fixture_message_name(&url)
            .and_then(|name| self.pool.get_message_by_name(name));
        let Some(descriptor) = payload else {
            self.path.push(Step::Key("@type".to_string()));
            return self.fail(format!(
                "@type \"{url}\" must be \"type.googleapis.com/<message name>\""
            ));
        };
        // The decoder produced these bytes from the same descriptor a moment ago.
        let Ok(payload) = DynamicMessage::decode(descriptor, bytes.as_ref()) else {
            return Ok(());
        };
        // A well-known type inside an Any is written under `value` (proto3 JSON mapping).
        let wrapped = payload
            .descriptor()
            .full_name()
            .starts_with("google.protobuf.");
        if wrapped {
            self.path.push(Step::Key("value".to_string()));
        }
        self.message(&payload)?;
        if wrapped {
            self.path.pop();
        }
        Ok(())
    }
}

fn non_finite(value: f64) -> String {
    let what = if value.is_nan() {
        "NaN"
    } else if value > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    };
    format!("{what} is not allowed: NaN and infinite numbers are errors in fixtures")
}

fn key_text(key: &MapKey) -> String {
    match key {
        MapKey::Bool(v) => v.to_string(),
        MapKey::I32(v) => v.to_string(),
        MapKey::I64(v) => v.to_string(),
        MapKey::U32(v) => v.to_string(),
        MapKey::U64(v) => v.to_string(),
        MapKey::String(v) => v.clone(),
    }
}
