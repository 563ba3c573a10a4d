//! Envoy's `WatchMap`: many watches of one type merged into the single interest set that goes
//! on the wire, so only names new to the whole subscription (or no longer wanted by anyone)
//! cause a request.

use std::collections::{BTreeMap, BTreeSet};

use xdsloop_proto::xdstp;

/// Identifies one watch (one [`crate::Subscription`]) for the lifetime of a client.
pub type WatchId = u64;

/// What one watch wants of its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interest {
    /// Every resource of the type the server has.
    Wildcard,
    /// Only these names. An empty set wants nothing (it is not a wildcard).
    Names(BTreeSet<String>),
}

impl Interest {
    /// Only these names.
    pub fn names<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self::Names(names.into_iter().map(Into::into).collect())
    }

    /// Whether `name` is wanted.
    pub fn wants(&self, name: &str) -> bool {
        match self {
            Self::Wildcard => true,
            Self::Names(names) => names.contains(name),
        }
    }

    /// C19: `xdstp://` names in the form received names are compared in (context parameters
    /// sorted), so a watch matches its resource whatever order its name was written in.
    pub fn normalized(self) -> Self {
        match self {
            Self::Names(names) if names.iter().any(|n| xdstp::is_xdstp(n)) => {
                let normal = names.iter().map(|n| xdstp::normalize(n).into_owned());
                Self::Names(normal.collect())
            }
            other => other,
        }
    }
}

/// The union of every watch's interest in one type: what the wire subscription must cover.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    pub wildcard: bool,
    /// Explicit names (also kept while wildcard: they must be re-sent explicitly, C9).
    pub names: BTreeSet<String>,
}

impl Wanted {
    pub fn wants(&self, name: &str) -> bool {
        self.wildcard || self.names.contains(name)
    }

    pub fn is_empty(&self) -> bool {
        !self.wildcard && self.names.is_empty()
    }
}

#[derive(Debug)]
struct Watch {
    type_url: String,
    interest: Interest,
    /// Internal watches (dependency following) have no subscriber to deliver to.
    internal: bool,
    /// Whether the watch has been given its first update.
    primed: bool,
}

/// All watches of a client, every type.
#[derive(Debug, Default)]
pub(crate) struct WatchMap {
    watches: BTreeMap<WatchId, Watch>,
}

impl WatchMap {
    pub(crate) fn add(&mut self, id: WatchId, type_url: &str, interest: Interest, internal: bool) {
        let watch = Watch {
            type_url: type_url.to_string(),
            interest,
            internal,
            primed: false,
        };
        self.watches.insert(id, watch);
    }

    /// Changes a watch's interest; returns its type, or `None` for an unknown watch.
    pub(crate) fn set_interest(&mut self, id: WatchId, interest: Interest) -> Option<String> {
        let watch = self.watches.get_mut(&id)?;
        watch.interest = interest;
        Some(watch.type_url.clone())
    }

    /// Removes a watch; returns its type, or `None` for an unknown watch.
    pub(crate) fn remove(&mut self, id: WatchId) -> Option<String> {
        self.watches.remove(&id).map(|w| w.type_url)
    }

    pub(crate) fn type_of(&self, id: WatchId) -> Option<&str> {
        self.watches.get(&id).map(|w| w.type_url.as_str())
    }

    pub(crate) fn interest(&self, id: WatchId) -> Option<&Interest> {
        self.watches.get(&id).map(|w| &w.interest)
    }

    /// The merged interest of every watch of `type_url`.
    pub(crate) fn wanted(&self, type_url: &str) -> Wanted {
        let mut wanted = Wanted::default();
        for watch in self.watches.values().filter(|w| w.type_url == type_url) {
            match &watch.interest {
                Interest::Wildcard => wanted.wildcard = true,
                Interest::Names(names) => wanted.names.extend(names.iter().cloned()),
            }
        }
        wanted
    }

    /// Subscriber (non-internal) watches of a type: id, interest and whether primed.
    pub(crate) fn subscribers<'a>(
        &'a self,
        type_url: &'a str,
    ) -> impl Iterator<Item = (WatchId, &'a Interest, bool)> + 'a {
        self.watches
            .iter()
            .filter(move |(_, w)| w.type_url == type_url && !w.internal)
            .map(|(id, w)| (*id, &w.interest, w.primed))
    }

    pub(crate) fn set_primed(&mut self, id: WatchId) {
        if let Some(watch) = self.watches.get_mut(&id) {
            watch.primed = true;
        }
    }

    pub(crate) fn is_internal(&self, id: WatchId) -> bool {
        self.watches.get(&id).is_some_and(|w| w.internal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_of_one_type_merge_into_one_interest() {
        let mut map = WatchMap::default();
        map.add(1, "t", Interest::names(["a", "b"]), false);
        map.add(2, "t", Interest::names(["b", "c"]), false);
        map.add(3, "other", Interest::Wildcard, false);
        let wanted = map.wanted("t");
        assert!(!wanted.wildcard);
        assert_eq!(
            wanted.names,
            BTreeSet::from(["a".into(), "b".into(), "c".into()])
        );
        map.remove(1);
        assert_eq!(
            map.wanted("t").names.len(),
            2,
            "b is still wanted by watch 2"
        );
        assert!(map.wanted("other").wildcard);
        assert!(map.wanted("none").is_empty());
    }

    #[test]
    fn internal_watches_count_for_interest_but_are_not_subscribers() {
        let mut map = WatchMap::default();
        map.add(1, "t", Interest::names(["dep"]), true);
        map.add(2, "t", Interest::Wildcard, false);
        assert!(map.wanted("t").wants("dep"));
        let ids: Vec<_> = map.subscribers("t").map(|(id, _, _)| id).collect();
        assert_eq!(ids, vec![2]);
    }
}
