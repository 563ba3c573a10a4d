//! Requests as the fleet sends them. A SotW request repeats the type's whole name list on every
//! ACK (every EDS name, per node, per response); building each one as a `DiscoveryRequest`
//! would clone every name. The list is encoded once, when it changes, and each request is its
//! own few fields plus that shared, already-encoded list.

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};

use crate::core::request::Outgoing;

/// One request: `message` (for SotW without its `resource_names`) and `names`, the encoded
/// `resource_names` entries (empty for Delta).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FleetRequest {
    pub message: Outgoing,
    pub names: Bytes,
}

impl FleetRequest {
    pub(crate) fn delta(message: xdsloop_proto::discovery::DeltaDiscoveryRequest) -> Self {
        Self {
            message: Outgoing::Delta(message),
            names: Bytes::new(),
        }
    }

    pub(crate) fn encoded_len(&self) -> usize {
        let message = match &self.message {
            Outgoing::Sotw(r) => r.encoded_len(),
            Outgoing::Delta(r) => r.encoded_len(),
        };
        message + self.names.len()
    }

    /// Writes the message: its own fields, then the names (protobuf lets a repeated field's
    /// entries come after the other fields).
    pub(crate) fn encode(&self, buf: &mut impl BufMut) {
        match &self.message {
            Outgoing::Sotw(r) => r.encode_raw(buf),
            Outgoing::Delta(r) => r.encode_raw(buf),
        }
        buf.put_slice(&self.names);
    }

    /// The request as one length-prefixed gRPC message, ready for the wire. A node queues
    /// these (32 bytes a slot) rather than `FleetRequest`s (650 bytes a slot, allocated 32
    /// slots at a time per node).
    pub(crate) fn frame(&self) -> Bytes {
        let len = self.encoded_len();
        let mut buf = BytesMut::with_capacity(5 + len);
        buf.put_u8(0);
        buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
        self.encode(&mut buf);
        buf.freeze()
    }

    /// The complete message, as a server decodes it.
    #[cfg(test)]
    pub(crate) fn to_outgoing(&self) -> Outgoing {
        let mut buf = Vec::with_capacity(self.encoded_len());
        self.encode(&mut buf);
        match &self.message {
            Outgoing::Sotw(_) => Outgoing::Sotw(decode(&buf)),
            Outgoing::Delta(_) => Outgoing::Delta(decode(&buf)),
        }
    }
}

#[cfg(test)]
fn decode<M: Message + Default>(buf: &[u8]) -> M {
    M::decode(buf).expect("the fleet encodes valid requests")
}

/// The encoded `resource_names` entries (field 3) of `names`.
pub(crate) fn encode_names<'a>(names: impl IntoIterator<Item = &'a str> + Clone) -> Bytes {
    const FIELD: u32 = 3;
    let entry = |n: &str| encoded_len_varint(n.len() as u64) + n.len();
    let len: usize = names.clone().into_iter().map(|n| 1 + entry(n)).sum();
    let mut buf = Vec::with_capacity(len);
    for name in names {
        encode_key(FIELD, WireType::LengthDelimited, &mut buf);
        encode_varint(name.len() as u64, &mut buf);
        buf.put_slice(name.as_bytes());
    }
    buf.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdsloop_proto::discovery::DiscoveryRequest;

    #[test]
    fn shared_names_decode_as_part_of_the_request() {
        let long = "x".repeat(200); // A two-byte length.
        let names = ["a", "b", long.as_str()];
        let request = FleetRequest {
            message: Outgoing::Sotw(DiscoveryRequest {
                version_info: "v1".into(),
                response_nonce: "n1".into(),
                ..Default::default()
            }),
            names: encode_names(names),
        };
        let Outgoing::Sotw(decoded) = request.to_outgoing() else {
            panic!("SotW in, SotW out");
        };
        assert_eq!(decoded.resource_names, names);
        assert_eq!(
            (
                decoded.version_info.as_str(),
                decoded.response_nonce.as_str()
            ),
            ("v1", "n1")
        );
        assert_eq!(request.encoded_len(), decoded.encoded_len());
        let framed = request.frame();
        let prefix: [u8; 5] = framed[..5].try_into().unwrap();
        assert_eq!(prefix[0], 0, "not compressed");
        let len = u32::from_be_bytes(prefix[1..].try_into().unwrap()) as usize;
        assert_eq!(len, framed.len() - 5);
        assert_eq!(DiscoveryRequest::decode(&framed[5..]).unwrap(), decoded);
    }
}
