//! Responses as the state machines return them: the stream's own fields plus resource entries
//! encoded once per fixture generation and shared by every stream
//! ([`crate::snapshot::entries`]). The transport writes both without copying the entries.
//! Protobuf lets fields come in any order and concatenates repeated fields, so the bytes
//! decode (with any protobuf library) to the same message the plain path builds; the tests
//! check that.

use std::sync::Arc;

use bytes::{BufMut, Bytes};
use prost::Message;
use xdsloop_proto::{
    Resource,
    discovery::{DeltaDiscoveryResponse, DiscoveryResponse},
};

use crate::snapshot::views::View;

mod edit;

/// A response: the stream's own fields in `head` (its repeated resources field left empty)
/// and the resource entries, each already encoded as one element of that repeated field.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outbound<M> {
    pub head: M,
    pub entries: Vec<Bytes>,
    /// Which resources the entries hold, for observers; dropped with the response once it is
    /// written, so it never keeps a snapshot generation alive.
    pub manifest: Manifest,
}

/// The resources in a response, in entry order, as shared pointers (no copies).
#[derive(Debug, Clone, Default)]
pub(crate) enum Manifest {
    /// Built in memory without one (tests).
    #[default]
    Unknown,
    /// SotW: the view the one entry buffer was encoded from.
    Sotw(Arc<View>),
    /// Delta: one resource per entry.
    Delta(Arc<[Arc<Resource>]>),
    /// A heartbeat (S15): the resources it keeps alive, one per entry; their bodies are not
    /// in it (the entries are wrappers without `resource`).
    Heartbeat(Arc<[Arc<Resource>]>),
    /// A replayed response (SotW or Delta): one resource per entry.
    Replayed(Arc<[Arc<Resource>]>),
}

impl Manifest {
    /// The resources, in entry order (empty when unknown).
    pub(crate) fn resources(&self) -> &[Arc<Resource>] {
        match self {
            Manifest::Unknown => &[],
            Manifest::Sotw(view) => &view.picked,
            Manifest::Delta(resources)
            | Manifest::Heartbeat(resources)
            | Manifest::Replayed(resources) => resources,
        }
    }

    pub(crate) fn is_heartbeat(&self) -> bool {
        matches!(self, Manifest::Heartbeat(_))
    }

    /// The resources the entries carry as one shared list (a pointer copy); a heartbeat
    /// carries none.
    pub(crate) fn shared(&self) -> Option<Arc<[Arc<Resource>]>> {
        match self {
            Manifest::Unknown | Manifest::Heartbeat(_) => None,
            Manifest::Sotw(view) => Some(view.picked.clone()),
            Manifest::Delta(resources) | Manifest::Replayed(resources) => Some(resources.clone()),
        }
    }
}

pub(crate) type SotwResponse = Outbound<DiscoveryResponse>;
pub(crate) type DeltaResponse = Outbound<DeltaDiscoveryResponse>;

impl<M: Message + Default> Outbound<M> {
    pub(crate) fn encoded_len(&self) -> usize {
        self.head.encoded_len() + self.entries.iter().map(Bytes::len).sum::<usize>()
    }

    /// Writes the message: the head's fields, then the shared entries. `buf` must grow as
    /// needed (a `Vec` or `BytesMut` does).
    pub(crate) fn encode(&self, buf: &mut impl BufMut) {
        self.head.encode_raw(buf);
        for entry in &self.entries {
            buf.put_slice(entry);
        }
    }

    /// The plain message, decoded from the wire bytes: for unary answers (Fetch, REST), the
    /// per-type services, and tests. Our own encoding of a valid message cannot fail to decode.
    pub(crate) fn to_message(&self) -> M {
        let mut buf = Vec::with_capacity(self.encoded_len());
        self.encode(&mut buf);
        M::decode(buf.as_slice()).expect("the encoder writes valid protobuf")
    }
}

#[cfg(test)]
mod tests;
