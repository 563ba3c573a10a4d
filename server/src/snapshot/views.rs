//! The resources a SotW subscription receives (its "view") and their hash, computed once per
//! snapshot type and shared by every stream asking for the same names. In a fleet every node
//! subscribes the same EDS names: one lookup and one hash per push serve all of them, instead
//! of one per stream.

use std::sync::{Arc, Mutex, OnceLock};

use bytes::{Bytes, BytesMut};
use xdsloop_proto::Resource;

use super::{TypeResources, names::SharedNames};

/// Resources picked for a view, in name order.
pub(crate) type Picked = Arc<[Arc<Resource>]>;

/// What one subscription receives of one type, shared by the streams that ask the same.
#[derive(Debug)]
pub(crate) struct View {
    pub picked: Picked,
    /// Changes whenever a picked resource's name or version does.
    pub hash: u64,
    /// For a named view, [`TypeResources::named_stamp`] of its names: also changes when the
    /// `version_info` standing for a picked resource is bumped. For the wildcard view, `hash`.
    pub stamp: u64,
    /// The SotW `resources` field of `picked`, encoded on first use: one buffer sent by every
    /// stream with this view, with the type URL it was built for.
    sotw: OnceLock<(String, Bytes)>,
    /// The same with TTL'd resources wrapped (S14), for clients that unwrap them.
    sotw_wrapped: OnceLock<(String, Bytes)>,
    /// The smallest TTL among the picked resources (computed once: streams ask on every push).
    min_ttl: Option<std::time::Duration>,
}

impl View {
    pub(crate) fn new(picked: Picked, hash: u64) -> Self {
        Self::stamped(picked, hash, hash)
    }

    pub(crate) fn stamped(picked: Picked, hash: u64, stamp: u64) -> Self {
        let min_ttl = picked.iter().filter_map(|r| r.ttl).min();
        Self {
            min_ttl,
            picked,
            hash,
            stamp,
            sotw: OnceLock::new(),
            sotw_wrapped: OnceLock::new(),
        }
    }

    /// Whether any picked resource has a TTL.
    pub(crate) fn has_ttl(&self) -> bool {
        self.min_ttl.is_some()
    }

    /// The smallest TTL among the picked resources.
    pub(crate) fn min_ttl(&self) -> Option<std::time::Duration> {
        self.min_ttl
    }

    /// The encoded `resources` entries of this view as one shared buffer; with `wrap`, TTL'd
    /// resources wrapped (S14).
    pub(crate) fn sotw_entries(&self, url: &str, all: &TypeResources, wrap: bool) -> Bytes {
        let wrap = wrap && self.has_ttl();
        let encode = || {
            let picked = self.picked.iter().map(|r| r.as_ref());
            let entries = all.sotw_entries(url, picked, wrap);
            let mut body = BytesMut::with_capacity(entries.iter().map(Bytes::len).sum());
            entries.iter().for_each(|e| body.extend_from_slice(e));
            body.freeze()
        };
        let cache = if wrap { &self.sotw_wrapped } else { &self.sotw };
        let (cached_url, body) = cache.get_or_init(|| (url.to_string(), encode()));
        if cached_url == url {
            body.clone()
        } else {
            encode()
        }
    }
}

impl TypeResources {
    /// The view of the resources among `names` (sorted), hashed by the formula of the content
    /// hash: shared by SotW streams that send it and Delta streams that hash what their client
    /// holds.
    pub(crate) fn named_view(&self, names: &SharedNames) -> Arc<View> {
        self.views.named(names, || {
            let picked: Picked = names
                .iter()
                .filter_map(|n| self.resources.get(n))
                .cloned()
                .collect();
            let parts: Vec<&[u8]> = picked
                .iter()
                .flat_map(|r| [r.name.as_bytes(), r.version.as_bytes()])
                .collect();
            let hash = xdsloop_proto::version::fnv1a(&parts);
            let stamp = self.stamp_of(picked.iter());
            View::stamped(picked, hash, stamp)
        })
    }
}

/// Lives beside a `TypeResources`, so it is dropped with the snapshot it describes. One slot
/// for named views: streams with identical interest hit it; a stream asking for other names
/// computes its view and takes the slot.
#[derive(Debug, Default)]
pub(crate) struct ViewCache {
    all: OnceLock<Arc<View>>,
    named: Mutex<Option<(SharedNames, Arc<View>)>>,
}

impl ViewCache {
    /// Every resource (a wildcard view).
    pub(crate) fn all(&self, compute: impl FnOnce() -> View) -> Arc<View> {
        self.all.get_or_init(|| Arc::new(compute())).clone()
    }

    /// The view of `names`, from the slot if it holds the same names.
    pub(crate) fn named(&self, names: &SharedNames, compute: impl FnOnce() -> View) -> Arc<View> {
        let mut slot = self.named.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, view)) = slot.as_ref().filter(|(n, _)| n == names) {
            return view.clone();
        }
        let view = Arc::new(compute());
        *slot = Some((names.clone(), view.clone()));
        view
    }
}

impl Clone for ViewCache {
    /// A cache is derived data: a clone starts empty.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for ViewCache {
    /// A cache says nothing about content.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ViewCache {}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> SharedNames {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn equal_names_share_one_view_and_other_names_recompute() {
        let cache = ViewCache::default();
        let mut computed = 0;
        let mut compute = |hash| {
            computed += 1;
            View::new(Picked::from(Vec::new()), hash)
        };
        assert_eq!(cache.named(&names(&["a", "b"]), || compute(1)).hash, 1);
        // Equal names in another allocation (another stream) hit the slot.
        assert_eq!(cache.named(&names(&["a", "b"]), || compute(2)).hash, 1);
        assert_eq!(cache.named(&names(&["a"]), || compute(3)).hash, 3);
        assert_eq!(computed, 2);
    }
}
