//! Responses as the state machines return them: the stream's own fields plus resource entries
//! encoded once per fixture generation and shared by every stream
//! ([`crate::snapshot::entries`]). The transport writes both without copying the entries.
//! Protobuf lets fields come in any order and concatenates repeated fields, so the bytes
//! decode (with any protobuf library) to the same message the plain path builds; the tests
//! check that.

use bytes::{BufMut, Bytes};
use prost::Message;
use xdsloop_proto::discovery::{DeltaDiscoveryResponse, DiscoveryResponse};

/// A response: the stream's own fields in `head` (its repeated resources field left empty)
/// and the resource entries, each already encoded as one element of that repeated field.
#[derive(Debug, Clone, Default)]
pub struct Outbound<M> {
    pub head: M,
    pub entries: Vec<Bytes>,
}

pub type SotwResponse = Outbound<DiscoveryResponse>;
pub type DeltaResponse = Outbound<DeltaDiscoveryResponse>;

impl<M: Message + Default> Outbound<M> {
    pub fn encoded_len(&self) -> usize {
        self.head.encoded_len() + self.entries.iter().map(Bytes::len).sum::<usize>()
    }

    /// Writes the message: the head's fields, then the shared entries. `buf` must grow as
    /// needed (a `Vec` or `BytesMut` does).
    pub fn encode(&self, buf: &mut impl BufMut) {
        self.head.encode_raw(buf);
        for entry in &self.entries {
            buf.put_slice(entry);
        }
    }

    /// The plain message, decoded from the wire bytes: for unary answers (Fetch, REST), the
    /// per-type services, and tests. Our own encoding of a valid message cannot fail to decode.
    pub fn to_message(&self) -> M {
        let mut buf = Vec::with_capacity(self.encoded_len());
        self.encode(&mut buf);
        M::decode(buf.as_slice()).expect("the encoder writes valid protobuf")
    }

    /// Bytes of the resource entries (close to the message's encoded size).
    pub fn entry_bytes(&self) -> usize {
        self.entries.iter().map(Bytes::len).sum()
    }
}

#[cfg(test)]
mod tests;
