//! A response a scenario rule changed, as REST-JSON, and a `close` rule's gRPC status as an
//! HTTP one. The rules change the protobuf response ([`crate::protocol::wire::Edit`]); here
//! each change gets its JSON form:
//!
//! - `duplicate`, `withhold`, `wrong_type_url` show as they are (a resource twice, one left
//!   out, a foreign `@type` on a resource or a foreign `type_url` on the response);
//! - `corrupt`: bytes no decoder takes have no proto3 JSON form, so the resource's object
//!   keeps its `@type` and nothing but its name field, holding the number 15 (`0x0f`, the
//!   byte a stream would send): no proto3 JSON parser takes a number for a string field,
//!   whether or not it ignores unknown fields;
//! - `oversize`: the body is padded with trailing spaces (valid JSON, so only a size limit
//!   stops it) to at least the size the rule asked for.

use axum::http::StatusCode;
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor, SerializeOptions};
use serde_json::{Value, json};
use xdsloop_proto::{Codec, discovery::Any, type_url};

use crate::protocol::response::SotwResponse;

/// What `corrupt` puts in the resource's name field.
const CORRUPT_NAME: u8 = 0x0f;

/// `response` as JSON: `real_type` is the type its resources are (the path's). A response an
/// `oversize` rule padded (its unknown field is dropped on decoding) gets a body at least as
/// large as the padded protobuf.
pub(crate) fn changed(
    codec: &Codec,
    descriptor: &MessageDescriptor,
    response: &SotwResponse,
    real_type: &str,
) -> Result<Vec<u8>, String> {
    let mut message = response.to_message();
    let padded = response.encoded_len() > message.encoded_len();
    let resources = std::mem::take(&mut message.resources);
    let mut json = to_value(descriptor, &message)?;
    let items = resources
        .iter()
        .map(|any| resource(codec, any, real_type))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(object) = json.as_object_mut() {
        object.insert("resources".into(), Value::Array(items));
    }
    let mut body = serde_json::to_vec(&json).map_err(|e| e.to_string())?;
    if padded {
        let at_least = response.encoded_len();
        if body.len() < at_least {
            body.resize(at_least, b' ');
        }
    }
    Ok(body)
}

/// One resource: decoded as `real_type` (whatever its `@type` now says), or the `corrupt`
/// form when its bytes do not decode.
fn resource(codec: &Codec, any: &Any, real_type: &str) -> Result<Value, String> {
    let descriptor = codec
        .message(real_type)
        .ok_or_else(|| format!("{real_type} is not in the descriptor pool"))?;
    let mut value = match DynamicMessage::decode(descriptor, any.value.as_slice()) {
        Ok(message) => serialize(&message)?,
        Err(_) => json!({ type_url::name_field(real_type): CORRUPT_NAME }),
    };
    if let Some(object) = value.as_object_mut() {
        object.insert("@type".into(), Value::String(any.type_url.clone()));
    }
    Ok(value)
}

/// A message as proto3 JSON with proto field names (as [`super::Rest`] writes answers).
fn to_value<M: Message>(descriptor: &MessageDescriptor, message: &M) -> Result<Value, String> {
    let dynamic = DynamicMessage::decode(descriptor.clone(), message.encode_to_vec().as_slice())
        .map_err(|e| e.to_string())?;
    serialize(&dynamic)
}

fn serialize(message: &DynamicMessage) -> Result<Value, String> {
    let options = SerializeOptions::new().use_proto_field_name(true);
    message
        .serialize_with_options(serde_json::value::Serializer, &options)
        .map_err(|e| e.to_string())
}

/// The HTTP status a `close` rule's gRPC code becomes on REST: the mapping `google.rpc.Code`
/// documents (and gRPC-HTTP gateways use).
pub(crate) fn http_status(code: i32) -> StatusCode {
    let status = match code {
        1 => 499,          // CANCELLED: client closed request
        3 | 9 | 11 => 400, // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
        4 => 504,          // DEADLINE_EXCEEDED
        5 => 404,          // NOT_FOUND
        6 | 10 => 409,     // ALREADY_EXISTS, ABORTED
        7 => 403,          // PERMISSION_DENIED
        8 => 429,          // RESOURCE_EXHAUSTED
        12 => 501,         // UNIMPLEMENTED
        14 => 503,         // UNAVAILABLE
        16 => 401,         // UNAUTHENTICATED
        _ => 500,          // UNKNOWN, INTERNAL, DATA_LOSS
    };
    StatusCode::from_u16(status).expect("a valid status code")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_codes_map_to_the_documented_http_statuses() {
        let cases = [
            (14, 503),
            (8, 429),
            (16, 401),
            (7, 403),
            (5, 404),
            (3, 400),
            (4, 504),
            (12, 501),
            (13, 500),
            (1, 499),
        ];
        for (code, http) in cases {
            assert_eq!(http_status(code).as_u16(), http, "gRPC code {code}");
        }
    }
}
