//! The applied configuration: per type and name, the resource bytes with the version, nonce and
//! time of the update that last changed it. What `--dump` prints. A rejected update never
//! reaches the store (C5).

use std::collections::BTreeMap;
use std::time::SystemTime;

use bytes::Bytes;

use crate::core::validate::Decoded;

/// One applied resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The resource's name.
    pub name: String,
    /// SotW: the response's `version_info`; Delta: the resource's own version.
    pub version: String,
    /// Nonce of the response that last changed it.
    pub nonce: String,
    /// When it was applied.
    pub applied_at: SystemTime,
    /// The resource's bytes as received (a protobuf message of its type).
    pub bytes: Bytes,
}

/// Everything applied for one type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeStore {
    /// Last accepted `version_info` (Delta: `system_version_info`).
    pub version: String,
    /// Nonce of the last accepted response.
    pub nonce: String,
    /// When the last accepted response was applied.
    pub updated_at: Option<SystemTime>,
    pub resources: BTreeMap<String, Applied>,
}

/// What changed in one applied update.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Names held now and not before.
    pub added: Vec<String>,
    /// Names held before whose bytes changed.
    pub updated: Vec<String>,
    /// Names no longer held.
    pub removed: Vec<String>,
}

impl Diff {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.updated.is_empty() && self.removed.is_empty()
    }

    /// Whether any changed name satisfies `wants`.
    pub fn touches(&self, wants: impl Fn(&str) -> bool) -> bool {
        let all = self.added.iter().chain(&self.updated).chain(&self.removed);
        all.into_iter().any(|n| wants(n))
    }
}

/// Metadata of the accepted response being applied.
#[derive(Clone, Copy, Debug)]
pub struct Stamp<'a> {
    pub version: &'a str,
    pub nonce: &'a str,
    pub at: SystemTime,
}

/// Applied resources of every type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Store {
    types: BTreeMap<String, TypeStore>,
}

impl Store {
    /// Applies an accepted SotW response. With `full_state` (LDS, CDS) a held resource missing
    /// from the response is deleted; otherwise absence means nothing (C7). `kept` are names
    /// the response holds as heartbeats (C17): present, unchanged.
    pub fn apply_sotw(
        &mut self,
        type_url: &str,
        stamp: Stamp<'_>,
        resources: Vec<Decoded>,
        full_state: bool,
        kept: &[String],
    ) -> Diff {
        let store = self.accept(type_url, stamp);
        let mut diff = Diff::default();
        if full_state {
            let names = resources.iter().map(|r| r.name.as_str());
            let present: std::collections::BTreeSet<&str> =
                names.chain(kept.iter().map(String::as_str)).collect();
            let gone: Vec<String> = store
                .resources
                .keys()
                .filter(|name| !present.contains(name.as_str()))
                .cloned()
                .collect();
            for name in gone {
                store.resources.remove(&name);
                diff.removed.push(name);
            }
        }
        for resource in resources {
            upsert(store, resource, stamp, stamp.version, &mut diff);
        }
        diff
    }

    /// Applies an accepted Delta response: only `removed` deletes (C7).
    pub fn apply_delta(
        &mut self,
        type_url: &str,
        stamp: Stamp<'_>,
        added: Vec<Decoded>,
        removed: &[String],
    ) -> Diff {
        let store = self.accept(type_url, stamp);
        let mut diff = Diff::default();
        for name in removed {
            if store.resources.remove(name).is_some() {
                diff.removed.push(name.clone());
            }
        }
        for resource in added {
            let version = resource.version.clone();
            upsert(store, resource, stamp, &version, &mut diff);
        }
        diff
    }

    /// Drops resources nobody wants any more; returns the names that were held.
    pub fn forget(&mut self, type_url: &str, names: &[String]) -> Vec<String> {
        let Some(store) = self.types.get_mut(type_url) else {
            return Vec::new();
        };
        names
            .iter()
            .filter(|name| store.resources.remove(*name).is_some())
            .cloned()
            .collect()
    }

    /// Takes in every type `other` holds (the stores of a client's sources hold disjoint
    /// types).
    pub(crate) fn absorb(&mut self, other: &Store) {
        for (type_url, held) in &other.types {
            self.types.insert(type_url.clone(), held.clone());
        }
    }

    /// Everything held of a type, with its version.
    pub fn of_type(&self, type_url: &str) -> Option<&TypeStore> {
        self.types.get(type_url)
    }

    /// One held resource.
    pub fn get(&self, type_url: &str, name: &str) -> Option<&Applied> {
        self.types.get(type_url)?.resources.get(name)
    }

    /// Whether `name` of `type_url` is held.
    pub fn holds(&self, type_url: &str, name: &str) -> bool {
        self.get(type_url, name).is_some()
    }

    /// The last accepted version of a type, if any response of it was accepted.
    pub fn version(&self, type_url: &str) -> Option<&str> {
        self.types.get(type_url).map(|t| t.version.as_str())
    }

    /// Held per-resource versions (what Delta puts in `initial_resource_versions`).
    pub fn held_versions(&self, type_url: &str) -> BTreeMap<String, String> {
        self.types
            .get(type_url)
            .map(|t| {
                let held = t.resources.values();
                held.map(|r| (r.name.clone(), r.version.clone())).collect()
            })
            .unwrap_or_default()
    }

    /// Every type with at least one accepted response.
    pub fn types(&self) -> impl Iterator<Item = (&str, &TypeStore)> {
        self.types.iter().map(|(url, store)| (url.as_str(), store))
    }

    fn accept(&mut self, type_url: &str, stamp: Stamp<'_>) -> &mut TypeStore {
        let store = self.types.entry(type_url.to_string()).or_default();
        store.version = stamp.version.to_string();
        store.nonce = stamp.nonce.to_string();
        store.updated_at = Some(stamp.at);
        store
    }
}

fn upsert(
    store: &mut TypeStore,
    resource: Decoded,
    stamp: Stamp<'_>,
    version: &str,
    diff: &mut Diff,
) {
    let applied = Applied {
        name: resource.name.clone(),
        version: version.to_string(),
        nonce: stamp.nonce.to_string(),
        applied_at: stamp.at,
        bytes: resource.bytes,
    };
    match store.resources.get(&resource.name) {
        Some(held) if held.bytes == applied.bytes && held.version == applied.version => {}
        // SotW re-sends unchanged resources under the new version: unchanged bytes are kept
        // with the version that introduced them.
        Some(held) if held.bytes == applied.bytes && resource.version.is_empty() => {}
        Some(_) => {
            diff.updated.push(resource.name.clone());
            store.resources.insert(resource.name, applied);
        }
        None => {
            diff.added.push(resource.name.clone());
            store.resources.insert(resource.name, applied);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(name: &str, body: &str, version: &str) -> Decoded {
        Decoded {
            name: name.into(),
            version: version.into(),
            bytes: Bytes::from(body.to_string()),
            ttl: None,
        }
    }

    fn stamp(version: &str) -> Stamp<'_> {
        Stamp {
            version,
            nonce: "n",
            at: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn c7_sotw_full_state_deletes_missing_resources() {
        let mut store = Store::default();
        let first = vec![decoded("a", "1", ""), decoded("b", "1", "")];
        store.apply_sotw("lds", stamp("v1"), first, true, &[]);
        let diff = store.apply_sotw("lds", stamp("v2"), vec![decoded("a", "2", "")], true, &[]);
        assert_eq!(diff.updated, vec!["a"]);
        assert_eq!(diff.removed, vec!["b"]);
        assert_eq!(store.version("lds"), Some("v2"));
        assert_eq!(store.get("lds", "a").unwrap().version, "v2");
    }

    #[test]
    fn c7_sotw_absence_means_nothing_for_eds_and_rds() {
        let mut store = Store::default();
        store.apply_sotw("eds", stamp("v1"), vec![decoded("a", "1", "")], false, &[]);
        let diff = store.apply_sotw("eds", stamp("v2"), vec![decoded("b", "1", "")], false, &[]);
        assert_eq!(diff.added, vec!["b"]);
        assert!(diff.removed.is_empty() && store.holds("eds", "a"));
    }

    #[test]
    fn unchanged_sotw_resources_keep_the_version_that_introduced_them() {
        let mut store = Store::default();
        store.apply_sotw("cds", stamp("v1"), vec![decoded("a", "1", "")], true, &[]);
        let diff = store.apply_sotw("cds", stamp("v2"), vec![decoded("a", "1", "")], true, &[]);
        assert!(diff.is_empty());
        assert_eq!(store.get("cds", "a").unwrap().version, "v1");
        assert_eq!(store.version("cds"), Some("v2"));
    }

    #[test]
    fn c7_delta_only_removed_resources_delete() {
        let mut store = Store::default();
        store.apply_delta("cds", stamp("s1"), vec![decoded("a", "1", "h1")], &[]);
        let diff = store.apply_delta(
            "cds",
            stamp("s2"),
            vec![decoded("b", "1", "h2")],
            &["a".into(), "never-held".into()],
        );
        assert_eq!(
            (diff.added.clone(), diff.removed.clone()),
            (vec!["b".into()], vec!["a".into()])
        );
        assert_eq!(
            store.held_versions("cds"),
            BTreeMap::from([("b".to_string(), "h2".to_string())])
        );
    }

    #[test]
    fn forget_drops_only_held_names() {
        let mut store = Store::default();
        store.apply_sotw("rds", stamp("v1"), vec![decoded("r", "1", "")], false, &[]);
        assert_eq!(store.forget("rds", &["r".into(), "x".into()]), vec!["r"]);
        assert!(!store.holds("rds", "r"));
    }
}
