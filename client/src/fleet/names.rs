//! The dependent names a node subscribes to (EDS names from its clusters, RDS names from its
//! listeners), interned fleet-wide.
//!
//! Every node of a load test usually wants the very same list of names (one per cluster): kept
//! per node as strings, those lists would be most of the fleet's memory, and allocating them
//! much of its CPU. A node builds the sorted list from slices of the response it is reading,
//! and the [`Interner`] hands back the one shared copy (with its SotW wire encoding) that any
//! node already made, or makes it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;

use super::outgoing::encode_names;

/// One sorted, deduplicated name list and its encoding as SotW `resource_names` entries.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct NameList {
    names: Box<[Box<str>]>,
    wire: Bytes,
}

/// A shared name list; nodes holding equal lists hold the same one.
pub(crate) type Names = Arc<NameList>;

impl NameList {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.binary_search_by(|n| (**n).cmp(name)).is_ok()
    }

    /// The encoded `resource_names` entries, appended to every SotW request of the type.
    pub(crate) fn wire(&self) -> &Bytes {
        &self.wire
    }

    /// Names here that `other` lacks, in order.
    pub(crate) fn missing_from(&self, other: &NameList) -> Vec<String> {
        (self.iter().filter(|n| !other.contains(n)))
            .map(str::to_string)
            .collect()
    }

    fn equals(&self, names: &[&str]) -> bool {
        self.names.len() == names.len() && self.iter().zip(names).all(|(a, b)| a == *b)
    }
}

/// The fleet's live name lists, by content. Holds them weakly: a list is freed when the last
/// node lets go of it.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    inner: Mutex<Lists>,
}

#[derive(Debug, Default)]
struct Lists {
    by_hash: HashMap<u64, Vec<Weak<NameList>>>,
    /// Lists made since dead entries were last swept out, and the entries that sweep kept: a
    /// sweep comes after as many new lists as it found live ones (at least 64), so its cost
    /// is spread over the lists made in between.
    since_sweep: usize,
    after_sweep: usize,
}

impl Interner {
    /// The shared list equal to `names`, which must be sorted and free of duplicates.
    pub(crate) fn intern(&self, names: &[&str]) -> Names {
        debug_assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
        let mut hasher = DefaultHasher::new();
        for name in names {
            hasher.write(name.as_bytes());
            hasher.write_u8(0xff); // Not UTF-8: separates "ab","c" from "a","bc".
        }
        let hash = hasher.finish();
        let mut lists = self.inner.lock().expect("name interner poisoned");
        let bucket = lists.by_hash.entry(hash).or_default();
        if let Some(found) = bucket
            .iter()
            .filter_map(Weak::upgrade)
            .find(|list| list.equals(names))
        {
            return found;
        }
        let list = Arc::new(NameList {
            names: names.iter().map(|n| Box::from(*n)).collect(),
            wire: encode_names(names.iter().copied()),
        });
        bucket.retain(|w| w.strong_count() > 0);
        bucket.push(Arc::downgrade(&list));
        lists.since_sweep += 1;
        if lists.since_sweep >= lists.after_sweep.max(64) {
            lists.by_hash.retain(|_, bucket| {
                bucket.retain(|w| w.strong_count() > 0);
                !bucket.is_empty()
            });
            lists.since_sweep = 0;
            lists.after_sweep = lists.by_hash.len();
        }
        list
    }

    /// Live lists (for tests).
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        let lists = self.inner.lock().expect("name interner poisoned");
        let weak = lists.by_hash.values().flatten();
        weak.filter(|w| w.strong_count() > 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_lists_are_shared_and_freed_with_their_last_holder() {
        let interner = Interner::default();
        let a = interner.intern(&["a", "b"]);
        let b = interner.intern(&["a", "b"]);
        assert!(Arc::ptr_eq(&a, &b));
        let other = interner.intern(&["a", "bc"]);
        let split = interner.intern(&["ab", "c"]);
        assert!(!Arc::ptr_eq(&a, &other) && !Arc::ptr_eq(&other, &split));
        assert_eq!(interner.live(), 3);
        drop((a, other, split));
        assert_eq!(interner.live(), 1);
        assert_eq!(b.iter().collect::<Vec<_>>(), ["a", "b"]);
        drop(b);
        assert_eq!(interner.live(), 0);
        // Sweeping drops the dead entries themselves, not only their contents.
        for i in 0..200 {
            drop(interner.intern(&[&i.to_string()]));
        }
        assert!(interner.inner.lock().unwrap().by_hash.len() <= 64);
    }

    #[test]
    fn differences_and_lookups_follow_the_sorted_lists() {
        let interner = Interner::default();
        let old = interner.intern(&["a", "b", "c"]);
        let new = interner.intern(&["b", "c", "d"]);
        assert_eq!(new.missing_from(&old), ["d"]);
        assert_eq!(old.missing_from(&new), ["a"]);
        assert!(new.contains("d") && !new.contains("a"));
        assert_eq!((new.len(), NameList::default().is_empty()), (3, true));
    }
}
