//! Responses as they go on the wire, with the resources encoded once and shared.
//!
//! A 5,000-client fleet subscribed to the same 1,000 clusters would otherwise make 5,000
//! copies of every resource's bytes, wrap each in its own `Any`, and prost-encode it 5,000
//! times. Instead each resource's repeated-field entry (tag, length, `Any` or Delta
//! `Resource`) is encoded once per fixture generation and kept beside the snapshot
//! ([`EntryCache`]); a response is the stream's own small fields (nonce, version, type URL,
//! removals) plus a list of shared entries, and [`crate::transport::response_body`] writes both. Protobuf lets
//! fields come in any order and concatenates repeated fields, so the bytes decode (with any
//! protobuf library) to the same message the plain path builds; `wire_tests` checks that.

use std::{collections::BTreeMap, sync::OnceLock};

use bytes::{BufMut, Bytes};
use prost::Message;
use xdsloop_proto::{
    Resource,
    discovery::{Any, DeltaDiscoveryResponse, DiscoveryResponse, WireResource},
};

use crate::TypeResources;

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
    /// needed (a `Vec`, `BytesMut` or tonic's `EncodeBuf` do).
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

/// One resource's encoded entries for the two response kinds, built on first use and then
/// shared by every stream served from the same [`TypeResources`] (one fixture generation).
/// The `Any` carries the type URL it was built for (S1); a caller asking for another type URL
/// (never the case for snapshot lookups, which are by type URL) gets fresh entries.
#[derive(Debug, Clone, Default)]
pub struct EntryCache {
    sotw: OnceLock<(String, BTreeMap<String, Bytes>)>,
    delta: OnceLock<(String, BTreeMap<String, Bytes>)>,
}

impl PartialEq for EntryCache {
    /// A cache says nothing about content: two equal resource sets are equal, cached or not.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for EntryCache {}

impl TypeResources {
    /// The SotW `resources` entries of `picked`, stamped with `url`.
    pub fn sotw_entries<'a>(
        &self,
        url: &str,
        picked: impl IntoIterator<Item = &'a Resource>,
    ) -> Vec<Bytes> {
        entries(&self.entries.sotw, self, url, picked, sotw_entry)
    }

    /// The Delta `resources` entries of `picked` (name, version, `Any` stamped with `url`).
    pub fn delta_entries<'a>(
        &self,
        url: &str,
        picked: impl IntoIterator<Item = &'a Resource>,
    ) -> Vec<Bytes> {
        entries(&self.entries.delta, self, url, picked, delta_entry)
    }
}

fn entries<'a>(
    cache: &OnceLock<(String, BTreeMap<String, Bytes>)>,
    all: &TypeResources,
    url: &str,
    picked: impl IntoIterator<Item = &'a Resource>,
    encode: fn(&str, &Resource) -> Bytes,
) -> Vec<Bytes> {
    let (cached_url, by_name) = cache.get_or_init(|| {
        let by_name = all.resources.iter();
        let by_name = by_name.map(|(name, r)| (name.clone(), encode(url, r)));
        (url.to_string(), by_name.collect())
    });
    let picked = picked.into_iter();
    if cached_url != url {
        return picked.map(|r| encode(url, r)).collect();
    }
    picked
        .map(|r| match by_name.get(&r.name) {
            Some(entry) => entry.clone(),
            None => encode(url, r),
        })
        .collect()
}

/// S1: the `Any` is stamped with the response's type URL.
fn any(url: &str, resource: &Resource) -> Any {
    Any {
        type_url: url.to_string(),
        value: resource.bytes.to_vec(),
    }
}

/// A message whose only field is one element of the repeated field encodes as exactly that
/// element (tag, length, value): prost writes nothing for default fields.
fn sotw_entry(url: &str, resource: &Resource) -> Bytes {
    let one = DiscoveryResponse {
        resources: vec![any(url, resource)],
        ..Default::default()
    };
    one.encode_to_vec().into()
}

fn delta_entry(url: &str, resource: &Resource) -> Bytes {
    let one = DeltaDiscoveryResponse {
        resources: vec![WireResource {
            name: resource.name.clone(),
            version: resource.version.clone(),
            resource: Some(any(url, resource)),
            ..Default::default()
        }],
        ..Default::default()
    };
    one.encode_to_vec().into()
}

#[cfg(test)]
mod tests;
