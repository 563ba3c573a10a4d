//! The resources a SotW subscription receives (its "view") and their hash, computed once per
//! snapshot type and shared by every stream asking for the same names. At large fleets every
//! node subscribes the same EDS names, and each of N streams looking up and hashing the same
//! 1,000 names on every push was the server's largest cost.

use std::sync::{Arc, Mutex, OnceLock};

use xdsloop_proto::Resource;

use crate::subscription::SharedNames;

/// Resources picked for a view, in name order.
pub type Picked = Arc<[Arc<Resource>]>;

#[derive(Debug)]
struct NamedView {
    names: SharedNames,
    picked: Picked,
    hash: u64,
}

/// Lives beside a `TypeResources`, so it is dropped with the snapshot it describes. One slot
/// for named views: streams with identical interest hit it; others recompute as before.
#[derive(Debug, Default)]
pub struct ViewCache {
    all: OnceLock<Picked>,
    named: Mutex<Option<NamedView>>,
}

impl ViewCache {
    /// Every resource (a wildcard view).
    pub fn all(&self, compute: impl FnOnce() -> Picked) -> Picked {
        self.all.get_or_init(compute).clone()
    }

    /// The view of `names` and its hash, from the slot if it holds the same names.
    pub fn named(
        &self,
        names: &SharedNames,
        compute: impl FnOnce() -> (Picked, u64),
    ) -> (Picked, u64) {
        let mut slot = self.named.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(view) = slot.as_ref().filter(|v| v.names == *names) {
            return (view.picked.clone(), view.hash);
        }
        let (picked, hash) = compute();
        *slot = Some(NamedView {
            names: names.clone(),
            picked: picked.clone(),
            hash,
        });
        (picked, hash)
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
            (Picked::from(Vec::new()), hash)
        };
        assert_eq!(cache.named(&names(&["a", "b"]), || compute(1)).1, 1);
        // Equal names in another allocation (another stream) hit the slot.
        assert_eq!(cache.named(&names(&["a", "b"]), || compute(2)).1, 1);
        assert_eq!(cache.named(&names(&["a"]), || compute(3)).1, 3);
        assert_eq!(computed, 2);
    }
}
