//! Each resource's response entries, encoded once per fixture generation and shared by every
//! stream.
//!
//! A fleet of streams subscribed to the same clusters would otherwise copy every resource's
//! bytes per stream, wrap each in its own `Any`, and prost-encode it again for each. Instead
//! each resource's repeated-field entry (tag, length, `Any` or Delta `Resource`) is encoded
//! once and kept beside the snapshot ([`EntryCache`]); a response
//! ([`crate::protocol::response`]) is the stream's own small fields plus a list of these
//! shared entries.

use std::{collections::BTreeMap, sync::OnceLock};

use bytes::Bytes;
use prost::Message;
use xdsloop_proto::{
    Resource,
    discovery::{Any, DeltaDiscoveryResponse, DiscoveryResponse, WireResource},
};

use super::TypeResources;

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
pub fn sotw_entry(url: &str, resource: &Resource) -> Bytes {
    let one = DiscoveryResponse {
        resources: vec![any(url, resource)],
        ..Default::default()
    };
    one.encode_to_vec().into()
}

/// One Delta `resources` entry (name, version, `Any` stamped with `url`).
pub fn delta_entry(url: &str, resource: &Resource) -> Bytes {
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
