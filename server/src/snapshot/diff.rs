//! What changed in one type between two snapshot generations, computed once per pair and
//! shared by every stream that moves from the one to the other.
//!
//! A Delta stream whose client held exactly its share of the old generation needs only the
//! resources that were added, changed or removed (S8): a one-resource edit then costs each
//! stream a look at one name, not at every resource of the type.

use std::sync::{Arc, Mutex, Weak};

use xdsloop_proto::Resource;

use super::TypeResources;

/// How `new` differs from `old`, both sorted by name.
#[derive(Debug, Default)]
pub(crate) struct Diff {
    /// Resources new in `new`, or at another version there.
    pub upserted: Vec<Arc<Resource>>,
    /// Names in `old` that `new` does not have.
    pub removed: Vec<String>,
}

/// Lives beside a `TypeResources` (the new side). One slot: the streams of a fleet move from
/// the same old generation (a stream whose `flap` mask gave it its own copy of the old side
/// takes the slot from them and the fleet's diff is computed again: slower while a flap
/// runs, never wrong). The old side is held weakly, so a generation never keeps its
/// predecessor alive (and, the allocation being kept by the `Weak`, its address is not reused
/// while the slot names it).
#[derive(Debug, Default)]
pub(crate) struct DiffCache {
    slot: Mutex<Option<(Weak<TypeResources>, Arc<Diff>)>>,
}

impl TypeResources {
    /// What changed from `old` to these resources.
    pub(crate) fn diff_from(&self, old: &Arc<TypeResources>) -> Arc<Diff> {
        if std::ptr::eq(self, Arc::as_ptr(old)) {
            // The common request (an ACK): nothing changed, and the slot stays for the pushes.
            return Arc::default();
        }
        let mut slot = self.diffs.slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, diff)) = slot
            .as_ref()
            .filter(|(o, _)| o.as_ptr() == Arc::as_ptr(old))
        {
            return diff.clone();
        }
        let diff = Arc::new(diff(old, self));
        *slot = Some((Arc::downgrade(old), diff.clone()));
        diff
    }
}

fn diff(old: &TypeResources, new: &TypeResources) -> Diff {
    let (old, new) = (&old.resources, &new.resources);
    let upserted = new.iter().filter(|(name, r)| {
        let before = old.get(*name);
        before.is_none_or(|b| b.version != r.version)
    });
    let removed = old.keys().filter(|name| !new.contains_key(*name));
    Diff {
        upserted: upserted.map(|(_, r)| r.clone()).collect(),
        removed: removed.cloned().collect(),
    }
}

impl Clone for DiffCache {
    /// A cache is derived data: a clone starts empty.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for DiffCache {
    /// A cache says nothing about content.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for DiffCache {}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use xdsloop_proto::type_url::CLUSTER;

    use super::*;
    use crate::test_support::resource;

    fn resources(list: &[(&str, &str)]) -> Arc<TypeResources> {
        let all = list
            .iter()
            .map(|(n, v)| (n.to_string(), resource(CLUSTER, n, v)));
        Arc::new(TypeResources::new(all.collect::<BTreeMap<_, _>>(), None))
    }

    #[test]
    fn a_diff_lists_added_changed_and_removed_names_once_per_pair() {
        let old = resources(&[("a", "1"), ("b", "1"), ("c", "1")]);
        let new = resources(&[("a", "1"), ("b", "2"), ("d", "1")]);
        let diff = new.diff_from(&old);
        let upserted: Vec<&str> = diff.upserted.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            (upserted, diff.removed.clone()),
            (vec!["b", "d"], vec!["c".into()])
        );
        assert!(Arc::ptr_eq(&diff, &new.diff_from(&old)), "computed once");
        let other = resources(&[("a", "1")]);
        let from_other = new.diff_from(&other);
        assert!(from_other.removed.is_empty() && from_other.upserted.len() == 2);
    }

    #[test]
    fn the_slot_does_not_keep_the_old_generation_alive() {
        let old = resources(&[("a", "1")]);
        let new = resources(&[("a", "2")]);
        new.diff_from(&old);
        let weak = Arc::downgrade(&old);
        drop(old);
        assert!(weak.upgrade().is_none());
    }
}
