//! What a Delta client holds of one type: for each name it knows about, the version it holds
//! or that it was told the resource does not exist.
//!
//! Right after a reconciliation the client holds exactly what the stream's interest covers of
//! the resources it was reconciled against: each covered resource at its version there, and
//! each explicitly named resource that does not exist as "told absent" (S8, S10; a NACKed
//! version counts as held, S3). So that state is stored as the two things it follows from, the
//! snapshot's resources and the interest, both shared (the snapshot's own entries, the interned
//! name list), and a stream keeps per name only where its client differs from that base: names
//! it unsubscribed, versions it declared on reconnect (S9), and what a reconciliation in
//! progress changes. [`Known::rebase`] folds those back into a new base. A fleet of N streams
//! on C resources keeps O(N) state, not N × C owned names and versions.

use std::{
    collections::BTreeMap,
    fmt::{self, Debug},
    sync::Arc,
};

use crate::{protocol::subscription::Interest, snapshot::TypeResources, snapshot::diff::Diff};

/// What the client holds of one type (see the module documentation).
#[derive(Default)]
pub(super) struct Known {
    base: Option<Base>,
    /// Where the client differs from the base, by name.
    changes: BTreeMap<String, Change>,
}

/// The client holds what `interest` covers of `resources`.
struct Base {
    resources: Arc<TypeResources>,
    interest: Interest,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// `Some(version)` held, or `None` told it does not exist.
    Holds(Option<String>),
    /// The client knows nothing about the name.
    Forgotten,
}

impl Known {
    /// `None`: the client knows nothing of `name`; `Some(None)`: it was told `name` does not
    /// exist; `Some(Some(version))`: it holds `version`.
    pub(super) fn get(&self, name: &str) -> Option<Option<&str>> {
        match self.changes.get(name) {
            Some(Change::Holds(version)) => Some(version.as_deref()),
            Some(Change::Forgotten) => None,
            None => self.base.as_ref()?.get(name),
        }
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The client holds `version` of `name` (`None`: it was told `name` does not exist).
    pub(super) fn insert(&mut self, name: &str, version: Option<&str>) {
        let change = Change::Holds(version.map(str::to_string));
        self.changes.insert(name.to_string(), change);
    }

    /// The client knows nothing of `name` any more.
    pub(super) fn remove(&mut self, name: &str) {
        match self.base.as_ref().is_some_and(|b| b.get(name).is_some()) {
            true => self.changes.insert(name.to_string(), Change::Forgotten),
            false => self.changes.remove(name),
        };
    }

    /// Forgets every name `keep` says no to.
    pub(super) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let drop: Vec<String> = self
            .iter()
            .into_iter()
            .filter(|(name, _)| !keep(name))
            .map(|(name, _)| name.to_string())
            .collect();
        for name in drop {
            self.remove(&name);
        }
    }

    /// Every name the client knows about, sorted, with what it holds (as [`Self::get`]).
    pub(super) fn iter(&self) -> Vec<(&str, Option<&str>)> {
        let base = self.base.as_ref().map(Base::entries).unwrap_or_default();
        if self.changes.is_empty() {
            return base;
        }
        let mut all: BTreeMap<&str, Option<&str>> = base.into_iter().collect();
        for (name, change) in &self.changes {
            match change {
                Change::Holds(version) => all.insert(name, version.as_deref()),
                Change::Forgotten => all.remove(name.as_str()),
            };
        }
        all.into_iter().collect()
    }

    /// The hash of the held `(name, version)` pairs by the formula of
    /// `TypeResources::content_hash`.
    pub(super) fn held_hash(&self) -> u64 {
        if let Some(base) = self.base.as_ref().filter(|_| self.changes.is_empty()) {
            // A wildcard base holds every resource of its snapshot; a named one, the named
            // resources that exist there: a view shared with every stream naming the same.
            return match base.interest.is_wildcard() {
                true => base.resources.content_hash,
                false => {
                    base.resources
                        .named_view(&base.interest.shared_names())
                        .hash
                }
            };
        }
        let held = self.iter().into_iter();
        let held = held.filter_map(|(n, v)| Some((n, v?)));
        let parts: Vec<&[u8]> = held
            .flat_map(|(n, v)| [n.as_bytes(), v.as_bytes()])
            .collect();
        xdsloop_proto::version::fnv1a(&parts)
    }

    /// What changed in `resources` since the base, when the client holds exactly the base and
    /// its interest is still `interest`: then only those names need a look.
    pub(super) fn diff_to(
        &self,
        resources: &TypeResources,
        interest: &Interest,
    ) -> Option<Arc<Diff>> {
        let base = self.base.as_ref()?;
        let exact = self.changes.is_empty() && base.interest == *interest;
        exact.then(|| resources.diff_from(&base.resources))
    }

    /// After a reconciliation against `resources` under `interest`: the client holds exactly
    /// what they say, so the per-name changes are dropped (checked in debug builds).
    pub(super) fn rebase(&mut self, resources: &Arc<TypeResources>, interest: &Interest) {
        let base = Base {
            resources: resources.clone(),
            interest: interest.clone(),
        };
        debug_assert_eq!(
            self.iter(),
            base.entries(),
            "a reconciliation leaves the client holding exactly its interest's share"
        );
        self.base = Some(base);
        self.changes.clear();
    }

    /// What the client holds as owned names and versions (when its stream ends).
    pub(super) fn to_map(&self) -> BTreeMap<String, Option<String>> {
        let all = self.iter().into_iter();
        all.map(|(n, v)| (n.to_string(), v.map(str::to_string)))
            .collect()
    }

    /// A client holding exactly what `interest` covers of `resources`.
    #[cfg(test)]
    pub(super) fn based_on(resources: &Arc<TypeResources>, interest: &Interest) -> Self {
        let base = Base {
            resources: resources.clone(),
            interest: interest.clone(),
        };
        Self {
            base: Some(base),
            changes: BTreeMap::new(),
        }
    }

    /// How many names are stored per stream beyond the shared base.
    #[cfg(test)]
    pub(super) fn changes(&self) -> usize {
        self.changes.len()
    }
}

impl Base {
    fn get(&self, name: &str) -> Option<Option<&str>> {
        if !self.interest.contains(name) {
            return None;
        }
        match self.resources.resources.get(name) {
            Some(resource) => Some(Some(resource.version.as_str())),
            None if self.interest.names_contain(name) => Some(None),
            None => None,
        }
    }

    /// Sorted by name.
    fn entries(&self) -> Vec<(&str, Option<&str>)> {
        let resources = &self.resources.resources;
        let named = self
            .interest
            .names()
            .iter()
            .map(|name| match resources.get(name) {
                Some(r) => (name.as_str(), Some(r.version.as_str())),
                None => (name.as_str(), None),
            });
        if !self.interest.is_wildcard() {
            return named.collect();
        }
        let all = resources.iter();
        let mut entries: Vec<_> = all
            .map(|(name, r)| (name.as_str(), Some(r.version.as_str())))
            .collect();
        let missing = named.filter(|(_, version)| version.is_none());
        let sorted = entries.len();
        entries.extend(missing);
        if entries.len() > sorted {
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        entries
    }
}

impl Debug for Known {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests;
