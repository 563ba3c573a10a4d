//! The entries of a Delta response that sends many resources, joined into one buffer and shared
//! by every stream sending the same resources.
//!
//! A Delta response lists each resource as its own entry, and the transport copies entries
//! smaller than a few KiB into the stream's own chunk (one HTTP/2 chunk per 300-byte entry
//! costs more than the copy). When a fleet syncs, every stream sends the same thousand
//! resources, so those copies would be a full encoding of the type per stream, held until
//! written. Joined here once per (type's resources, list sent), they are one allocation for all of them,
//! like a SotW view's buffer ([`super::views`]), and so is the list itself (the response's
//! manifest). One slot, as for named views: streams sending the same list hit it; a stream
//! sending another list builds its own and takes the slot.

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use xdsloop_proto::Resource;

use super::TypeResources;

/// Below this many bytes, entries stay separate: the transport copies them anyway, and a join
/// of a few would only churn the slot.
const JOIN_AT_LEAST: usize = 4096;

/// Resources a Delta response sends, in entry order, shared with every stream sending them.
pub(crate) type Sent = Arc<[Arc<Resource>]>;

/// A joined list: the resources and their entries as one buffer, stamped with `url`.
#[derive(Debug)]
struct Joined {
    url: String,
    resources: Sent,
    entries: Bytes,
}

/// Lives beside a `TypeResources`, so it is dropped with the snapshot it describes.
#[derive(Debug, Default)]
pub(crate) struct JoinedCache {
    slot: Mutex<Option<Arc<Joined>>>,
}

impl TypeResources {
    /// The Delta `resources` entries of `picked` (stamped with `url`) and `picked` as a shared
    /// list. A large response is one buffer, shared with every stream sending the same list.
    pub(crate) fn delta_sent(&self, url: &str, picked: Vec<Arc<Resource>>) -> (Vec<Bytes>, Sent) {
        let entries = self.delta_entries(url, picked.iter().map(AsRef::as_ref));
        if entries.iter().map(Bytes::len).sum::<usize>() < JOIN_AT_LEAST {
            return (entries, picked.into());
        }
        let slot = &self.joined.slot;
        let held = slot.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(joined) = held.filter(|j| j.url == url && same(&j.resources, &picked)) {
            return (vec![joined.entries.clone()], joined.resources.clone());
        }
        let mut buffer = BytesMut::with_capacity(entries.iter().map(Bytes::len).sum());
        entries.iter().for_each(|e| buffer.extend_from_slice(e));
        let joined = Arc::new(Joined {
            url: url.to_string(),
            resources: picked.into(),
            entries: buffer.freeze(),
        });
        let out = (vec![joined.entries.clone()], joined.resources.clone());
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(joined);
        out
    }
}

/// The same resources of the same generation, in the same order.
fn same(a: &[Arc<Resource>], b: &[Arc<Resource>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y))
}

impl Clone for JoinedCache {
    /// A cache is derived data: a clone starts empty.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for JoinedCache {
    /// A cache says nothing about content.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for JoinedCache {}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

    use super::*;
    use crate::test_support::resource;

    fn resources(count: usize) -> TypeResources {
        let all = (0..count).map(|i| resource(CLUSTER, &format!("cluster-{i:03}"), "1"));
        let by_name: BTreeMap<_, _> = all.map(|r| (r.name.clone(), r)).collect();
        TypeResources::new(by_name, None)
    }

    #[test]
    fn the_same_list_shares_one_buffer_and_another_list_takes_the_slot() {
        let all = resources(500);
        let every: Vec<_> = all.resources.values().cloned().collect();
        let (a, listed) = all.delta_sent(CLUSTER, every.clone());
        let (b, again) = all.delta_sent(CLUSTER, every.clone());
        assert_eq!(a[0].as_ptr(), b[0].as_ptr());
        assert!(Arc::ptr_eq(&listed, &again));
        let fewer = every[1..].to_vec();
        let (c, _) = all.delta_sent(CLUSTER, fewer.clone());
        assert_ne!(c[0].as_ptr(), a[0].as_ptr());
        assert!(c[0].len() < a[0].len());
        let (d, _) = all.delta_sent(CLUSTER, fewer);
        assert_eq!(
            d[0].as_ptr(),
            c[0].as_ptr(),
            "the slot now holds the shorter list"
        );
        let (other, _) = all.delta_sent(ENDPOINT, every);
        assert_ne!(
            other[0], a[0],
            "S1: another type URL is stamped into its own buffer"
        );
    }
}
