//! Each resource's response entries, encoded once per fixture generation and shared by every
//! stream.
//!
//! A fleet of streams subscribed to the same clusters would otherwise copy every resource's
//! bytes per stream, wrap each in its own `Any`, and prost-encode it again for each. Instead
//! each resource's repeated-field entry (tag, length, `Any` or Delta `Resource`) is encoded
//! once and kept beside the snapshot ([`EntryCache`]); a response
//! ([`crate::protocol::response`]) is the stream's own small fields plus a list of these
//! shared entries.
//!
//! A resource with a TTL (S14) has a third encoding: for SotW clients that unwrap `Resource`
//! wrappers (`xds.config.resource-in-sotw`), an `Any` of `Resource{name, resource, ttl}`.
//! Delta entries carry the TTL always. Heartbeats (S15), the wrapper without `resource`, are a
//! few bytes each and encoded when sent.

use std::{collections::BTreeMap, sync::OnceLock, time::Duration};

use bytes::Bytes;
use prost::Message;
use xdsloop_proto::{
    Resource,
    discovery::{Any, DeltaDiscoveryResponse, DiscoveryResponse, WireResource},
    envoy::google::protobuf::Duration as ProtoDuration,
    wrapper::RESOURCE_WRAPPER,
};

use super::TypeResources;

/// One resource's encoded entries for the two response kinds, built on first use and then
/// shared by every stream served from the same [`TypeResources`] (one fixture generation).
/// The `Any` carries the type URL it was built for (S1); a caller asking for another type URL
/// (never the case for snapshot lookups, which are by type URL) gets fresh entries.
#[derive(Debug, Clone, Default)]
pub(crate) struct EntryCache {
    sotw: OnceLock<(String, BTreeMap<String, Bytes>)>,
    /// SotW entries with TTL'd resources wrapped (the others as in `sotw`).
    sotw_wrapped: OnceLock<(String, BTreeMap<String, Bytes>)>,
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
    /// The SotW `resources` entries of `picked`, stamped with `url`; with `wrap`, TTL'd
    /// resources wrapped in `Resource` with their TTL (S14).
    pub(crate) fn sotw_entries<'a>(
        &self,
        url: &str,
        picked: impl IntoIterator<Item = &'a Resource>,
        wrap: bool,
    ) -> Vec<Bytes> {
        if wrap && self.has_ttl() {
            return entries(&self.entries.sotw_wrapped, self, url, picked, wrapped_entry);
        }
        entries(&self.entries.sotw, self, url, picked, sotw_entry)
    }

    /// The Delta `resources` entries of `picked` (name, version, `Any` stamped with `url`).
    pub(crate) fn delta_entries<'a>(
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
pub(crate) fn sotw_entry(url: &str, resource: &Resource) -> Bytes {
    let one = DiscoveryResponse {
        resources: vec![any(url, resource)],
        ..Default::default()
    };
    one.encode_to_vec().into()
}

/// One Delta `resources` entry (name, version, `Any` stamped with `url`).
pub(crate) fn delta_entry(url: &str, resource: &Resource) -> Bytes {
    let one = DeltaDiscoveryResponse {
        resources: vec![WireResource {
            name: resource.name.clone(),
            version: resource.version.clone(),
            resource: Some(any(url, resource)),
            ttl: resource.ttl.map(duration),
            ..Default::default()
        }],
        ..Default::default()
    };
    one.encode_to_vec().into()
}

/// A TTL'd resource as a SotW entry: an `Any` of the wrapper, its `resource` stamped with
/// `url`. Others as [`sotw_entry`]. (The wrapper's version stays empty: clients take the
/// response's `version_info`.)
fn wrapped_entry(url: &str, resource: &Resource) -> Bytes {
    let Some(ttl) = resource.ttl else {
        return sotw_entry(url, resource);
    };
    let wrapper = WireResource {
        name: resource.name.clone(),
        resource: Some(any(url, resource)),
        ttl: Some(duration(ttl)),
        ..Default::default()
    };
    sotw_any(wrapper)
}

/// S15: a SotW heartbeat entry, the wrapper without `resource` (with the TTL, if any).
pub(crate) fn sotw_heartbeat(resource: &Resource) -> Bytes {
    sotw_any(WireResource {
        name: resource.name.clone(),
        ttl: resource.ttl.map(duration),
        ..Default::default()
    })
}

/// S15: a Delta heartbeat entry: name, the version the client holds, TTL, no `resource`.
pub(crate) fn delta_heartbeat(resource: &Resource) -> Bytes {
    let one = DeltaDiscoveryResponse {
        resources: vec![WireResource {
            name: resource.name.clone(),
            version: resource.version.clone(),
            ttl: resource.ttl.map(duration),
            ..Default::default()
        }],
        ..Default::default()
    };
    one.encode_to_vec().into()
}

fn sotw_any(wrapper: WireResource) -> Bytes {
    let one = DiscoveryResponse {
        resources: vec![Any {
            type_url: RESOURCE_WRAPPER.to_string(),
            value: wrapper.encode_to_vec(),
        }],
        ..Default::default()
    };
    one.encode_to_vec().into()
}

fn duration(ttl: Duration) -> ProtoDuration {
    ProtoDuration {
        seconds: i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(ttl.subsec_nanos()).unwrap_or(0),
    }
}
