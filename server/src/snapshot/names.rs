//! Subscribed resource names, stored once for the whole server.
//!
//! Every node of a fleet asks for the same EDS names (one per cluster), so per-stream copies
//! would make names most of the server's memory. A stream's names are a sorted, shared list
//! ([`SharedNames`]), interned: a stream that asks for a list another stream already holds gets
//! that list's allocation.
//! Lists are shared with `/status` records as well, so publishing status copies nothing.

use std::{
    collections::HashMap,
    hash::{BuildHasher, RandomState},
    ops::Deref,
    sync::{Arc, LazyLock, Mutex, Weak},
};

use serde::Serialize;

/// A sorted, duplicate-free list of names. Cheap to clone; equal lists usually share one
/// allocation (see [`SharedNames::interned`]).
#[derive(Debug, Clone)]
pub struct SharedNames(Arc<[String]>);

impl Default for SharedNames {
    fn default() -> Self {
        Self(Arc::from(Vec::new()))
    }
}

impl SharedNames {
    /// The list of `names` (sorted and deduplicated here), sharing the allocation of an equal
    /// list some stream holds, if any.
    pub fn interned(mut names: Vec<String>) -> Self {
        names.sort_unstable();
        names.dedup();
        if names.is_empty() {
            return Self::default();
        }
        INTERNER.intern(names)
    }

    /// Whether `name` is in the list (binary search).
    pub fn has(&self, name: &str) -> bool {
        self.0.binary_search_by(|n| n.as_str().cmp(name)).is_ok()
    }
}

impl PartialEq for SharedNames {
    /// Same list: the same allocation (the common case), else equal names.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for SharedNames {}

impl Deref for SharedNames {
    type Target = [String];
    fn deref(&self) -> &[String] {
        &self.0
    }
}

impl Serialize for SharedNames {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

impl FromIterator<String> for SharedNames {
    /// Sorted and deduplicated, like every list a stream holds.
    fn from_iter<I: IntoIterator<Item = String>>(names: I) -> Self {
        Self::interned(names.into_iter().collect())
    }
}

static INTERNER: LazyLock<Interner> = LazyLock::new(Interner::default);

/// Lists by content hash, held weakly: a list lives as long as some stream (or status record)
/// holds it, and the table is swept of dead entries as it grows, so it stays bounded by the
/// lists in use.
#[derive(Default)]
struct Interner {
    hasher: RandomState,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    lists: HashMap<u64, Weak<[String]>>,
    /// Sweep when the table reaches this size.
    sweep_at: usize,
}

impl Interner {
    fn intern(&self, names: Vec<String>) -> SharedNames {
        let key = self.hasher.hash_one(&names);
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = table.lists.get(&key).and_then(Weak::upgrade)
            && *list == *names
        {
            return SharedNames(list);
        }
        let list: Arc<[String]> = Arc::from(names);
        // On a hash collision the newer list takes the slot; the older one stays valid, only
        // unshared.
        table.lists.insert(key, Arc::downgrade(&list));
        if table.lists.len() >= table.sweep_at {
            table.lists.retain(|_, list| list.strong_count() > 0);
            table.sweep_at = (table.lists.len() * 2).max(64);
        }
        SharedNames(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(names: &[&str]) -> SharedNames {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn equal_lists_share_one_allocation_in_any_order() {
        let a = list(&["b", "a", "c"]);
        let b = list(&["c", "a", "b", "a"]);
        assert_eq!(&*a, ["a", "b", "c"]);
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert!(a.has("b") && !a.has("d"));
        assert!(!Arc::ptr_eq(&a.0, &list(&["a", "b"]).0));
    }

    #[test]
    fn lists_nobody_holds_are_swept_from_the_table() {
        for i in 0..1000 {
            drop(list(&[&format!("gone-{i}")]));
        }
        let kept = list(&["kept"]);
        let table = INTERNER.table.lock().unwrap();
        assert!(table.lists.len() < 200, "{} entries", table.lists.len());
        drop(table);
        assert!(kept.has("kept"));
    }
}
