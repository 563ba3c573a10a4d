//! Requests as they come off a stream.
//!
//! A SotW client repeats its whole name list on every request: each ACK of a node that watches
//! a thousand clusters carries a thousand EDS names, almost always the list the stream already
//! holds. Decoded with prost, every one would be a string allocated and freed per ACK. A
//! [`SotwRequest`] decodes every other field as usual and keeps the names as slices of the
//! received message; the state machine compares them with its interest in place and copies
//! them only when they changed.

use std::borrow::Cow;

use bytes::{BufMut, Bytes};
use prost::Message;
use prost::encoding::{WireType, decode_varint, encode_key, encode_varint};
use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DiscoveryRequest},
    xdstp,
};

/// `DiscoveryRequest.resource_names`.
const RESOURCE_NAMES: u32 = 3;

/// A SotW request: `head` is the request without its `resource_names`, which stay in the
/// received bytes until [`Self::names`] reads them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SotwRequest {
    pub head: DiscoveryRequest,
    /// The encoded message the names are in.
    message: Bytes,
    /// Where each name is in `message` (start, length), in request order; checked UTF-8.
    names: Vec<(u32, u32)>,
}

impl SotwRequest {
    /// Decodes one encoded `DiscoveryRequest`, failing as prost would (bad wire format, a
    /// name that is not UTF-8).
    pub(crate) fn decode(message: Bytes) -> Result<Self, String> {
        let mut names = Vec::new();
        let mut rest = Vec::new();
        let mut at = message.as_ref();
        while !at.is_empty() {
            let field_start = message.len() - at.len();
            let key = decode_varint(&mut at).map_err(|e| e.to_string())?;
            let len = match key & 7 {
                0 => {
                    decode_varint(&mut at).map_err(|e| e.to_string())?;
                    0
                }
                1 => 8,
                2 => usize::try_from(decode_varint(&mut at).map_err(|e| e.to_string())?)
                    .unwrap_or(usize::MAX),
                5 => 4,
                other => return Err(format!("unsupported wire type {other}")),
            };
            let value = at.get(..len).ok_or("a field runs past the end")?;
            let value_start = message.len() - at.len();
            at = &at[len..];
            if key == u64::from(RESOURCE_NAMES << 3 | 2) {
                std::str::from_utf8(value).map_err(|_| "a resource name is not UTF-8")?;
                let span = |n: usize| u32::try_from(n).map_err(|_| "request too large");
                names.push((span(value_start)?, span(len)?));
            } else {
                // Everything else is small (the node, once per stream; nonce, version, type).
                rest.extend_from_slice(&message[field_start..value_start + len]);
            }
        }
        let head = DiscoveryRequest::decode(rest.as_slice()).map_err(|e| e.to_string())?;
        Ok(Self {
            head,
            message,
            names,
        })
    }

    /// The requested names, in request order, `xdstp://` names normalised (S18: a name is
    /// matched whatever the order of its context parameters). Other names are not copied.
    pub(crate) fn names(&self) -> Vec<Cow<'_, str>> {
        let name = |&(start, len): &(u32, u32)| {
            let bytes = &self.message[start as usize..(start + len) as usize];
            xdstp::normalize(std::str::from_utf8(bytes).expect("checked when decoded"))
        };
        self.names.iter().map(name).collect()
    }
}

impl From<DiscoveryRequest> for SotwRequest {
    /// A request built in memory (tests, fetches): its names encoded as they would arrive.
    fn from(mut head: DiscoveryRequest) -> Self {
        let mut message = Vec::new();
        let mut names = Vec::new();
        for name in std::mem::take(&mut head.resource_names) {
            encode_key(RESOURCE_NAMES, WireType::LengthDelimited, &mut message);
            encode_varint(name.len() as u64, &mut message);
            let start = u32::try_from(message.len()).expect("names fit in 4 GiB");
            names.push((start, name.len() as u32));
            message.put_slice(name.as_bytes());
        }
        Self {
            head,
            message: message.into(),
            names,
        }
    }
}

/// A request type a stream can carry.
pub(crate) trait Inbound: Sized + Send + 'static {
    fn decode(message: Bytes) -> Result<Self, String>;
}

impl Inbound for SotwRequest {
    fn decode(message: Bytes) -> Result<Self, String> {
        SotwRequest::decode(message)
    }
}

impl Inbound for DeltaDiscoveryRequest {
    fn decode(message: Bytes) -> Result<Self, String> {
        Message::decode(message).map_err(|e| e.to_string())
    }
}

/// S18: the names a Delta request subscribes, unsubscribes and declares held, with `xdstp://`
/// names normalised as the snapshot's are.
pub(crate) fn normalize_delta(request: &mut DeltaDiscoveryRequest) {
    let names = request.resource_names_subscribe.iter_mut();
    names
        .chain(request.resource_names_unsubscribe.iter_mut())
        .for_each(xdstp::normalize_owned);
    let declared = &mut request.initial_resource_versions;
    if declared.keys().any(|n| xdstp::is_xdstp(n)) {
        *declared = std::mem::take(declared)
            .into_iter()
            .map(|(mut name, version)| {
                xdstp::normalize_owned(&mut name);
                (name, version)
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::full_request as full;

    #[test]
    fn decodes_what_prost_decodes_with_the_names_in_place() {
        let request = full();
        let decoded = SotwRequest::decode(request.encode_to_vec().into()).unwrap();
        assert_eq!(decoded.names(), request.resource_names);
        let head = DiscoveryRequest {
            resource_names: Vec::new(),
            ..request.clone()
        };
        assert_eq!(decoded.head, head);
        let built = SotwRequest::from(request.clone());
        assert_eq!((&built.head, built.names()), (&head, decoded.names()));
        // Names may come between other fields, as protobuf allows.
        let mut split = DiscoveryRequest {
            resource_names: vec!["x".into()],
            ..Default::default()
        }
        .encode_to_vec();
        split.extend(request.encode_to_vec());
        let decoded = SotwRequest::decode(split.into()).unwrap();
        assert_eq!(decoded.names(), ["x", "b", "a", &"é".repeat(100)]);
        assert_eq!(decoded.head.response_nonce, "1-1");
    }

    #[test]
    fn rejects_what_prost_rejects() {
        let bytes = full().encode_to_vec();
        let truncated = Bytes::copy_from_slice(&bytes[..bytes.len() - 1]);
        assert!(SotwRequest::decode(truncated).is_err());
        let bad_name = Bytes::from_static(&[0x1a, 0x02, 0xc3, 0x28]);
        assert!(DiscoveryRequest::decode(bad_name.clone()).is_err());
        let error = SotwRequest::decode(bad_name).unwrap_err();
        assert!(error.contains("UTF-8"), "{error}");
        let bad_nonce = Bytes::from_static(&[0x2a, 0x01, 0xff]);
        assert!(SotwRequest::decode(bad_nonce).is_err());
    }
}
