//! The immutable snapshot streams serve from: resources by type URL, a version per type and a
//! version per resource, plus per-node overlays (`nodes/<node-id>/` in the fixture directory).
//!
//! A snapshot is built once per successful reload and shared as `Arc<Snapshot>` through a
//! `tokio::sync::watch`; streams never see files and the watcher never sees streams.

pub mod entries;
pub mod names;
pub mod views;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use xdsloop_proto::{Resource, version};

/// One type's resources as served to one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeResources {
    /// The SotW `version_info` of this type: the fixtures' explicit `version_info`, or a
    /// content hash.
    pub version: String,
    /// Hash over every resource's name and version. Streams decide "did this type change?" by
    /// this, not by `version`: an explicit `version_info` may stay the same while the content
    /// changes, and a content change must never be silently dropped.
    pub content_hash: u64,
    /// Resources by name. Encoded once per fixture generation and shared by every stream.
    pub resources: BTreeMap<String, Arc<Resource>>,
    /// The resources' response entries, encoded on first use (see [`entries`]).
    pub(crate) entries: entries::EntryCache,
    /// SotW views of these resources, shared by streams (see [`views`]).
    pub(crate) views: views::ViewCache,
}

impl TypeResources {
    /// Builds a type's resource set; `explicit_version` is the fixtures' `version_info`, if any.
    pub fn new(
        resources: BTreeMap<String, Arc<Resource>>,
        explicit_version: Option<String>,
    ) -> Self {
        let parts: Vec<&[u8]> = resources
            .values()
            .flat_map(|r| [r.name.as_bytes(), r.version.as_bytes()])
            .collect();
        let content_hash = version::fnv1a(&parts);
        let version = explicit_version.unwrap_or_else(|| version::short(content_hash));
        Self {
            version,
            content_hash,
            resources,
            entries: Default::default(),
            views: Default::default(),
        }
    }
}

/// Everything the fixture directory says, for every node.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Increases by one on every successful reload (0 = the empty snapshot before the first load).
    pub generation: u64,
    /// What every node gets, by type URL.
    pub base: BTreeMap<String, Arc<TypeResources>>,
    /// Per node id, the types that node's overlay changes, already merged with the base
    /// (overlay resources replace same-named base resources). Types an overlay does not touch
    /// are not copied: lookups fall back to `base`.
    pub overlays: BTreeMap<String, BTreeMap<String, Arc<TypeResources>>>,
}

impl Snapshot {
    /// The resources of `type_url` as served to `node_id`, if the type has any fixtures.
    pub fn get(&self, node_id: &str, type_url: &str) -> Option<&Arc<TypeResources>> {
        self.overlays
            .get(node_id)
            .and_then(|types| types.get(type_url))
            .or_else(|| self.base.get(type_url))
    }

    /// Every type URL `node_id` can be served.
    pub fn type_urls(&self, node_id: &str) -> BTreeSet<&str> {
        let mut types: BTreeSet<&str> = self.base.keys().map(String::as_str).collect();
        if let Some(overlay) = self.overlays.get(node_id) {
            types.extend(overlay.keys().map(String::as_str));
        }
        types
    }

    /// Node ids with an overlay.
    pub fn overlay_nodes(&self) -> impl Iterator<Item = &str> {
        self.overlays.keys().map(String::as_str)
    }

    /// Total number of resources in the base set and all overlays.
    pub fn resource_count(&self) -> usize {
        let base: usize = self.base.values().map(|t| t.resources.len()).sum();
        let overlays: usize = self
            .overlays
            .values()
            .flat_map(|types| types.values())
            .map(|t| t.resources.len())
            .sum();
        base + overlays
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn resource(name: &str, version: &str) -> (String, Arc<Resource>) {
        let r = Resource {
            type_url: xdsloop_proto::type_url::CLUSTER.into(),
            name: name.into(),
            bytes: Bytes::new(),
            version: version.into(),
        };
        (name.to_string(), Arc::new(r))
    }

    #[test]
    fn content_hash_follows_content_even_under_an_explicit_version() {
        let a = TypeResources::new([resource("a", "1")].into(), Some("v1".into()));
        let b = TypeResources::new([resource("a", "2")].into(), Some("v1".into()));
        assert_eq!(a.version, b.version);
        assert_ne!(a.content_hash, b.content_hash);
        let hashed = TypeResources::new([resource("a", "1")].into(), None);
        assert_eq!(hashed.version, version::short(a.content_hash));
    }

    #[test]
    fn overlays_replace_per_type_and_fall_back_to_base() {
        let base = Arc::new(TypeResources::new([resource("a", "1")].into(), None));
        let mine = Arc::new(TypeResources::new([resource("a", "9")].into(), None));
        let url = xdsloop_proto::type_url::CLUSTER.to_string();
        let snapshot = Snapshot {
            generation: 1,
            base: [(url.clone(), base.clone())].into(),
            overlays: [("node-1".to_string(), [(url.clone(), mine.clone())].into())].into(),
        };
        assert_eq!(snapshot.get("node-1", &url), Some(&mine));
        assert_eq!(snapshot.get("node-2", &url), Some(&base));
        assert_eq!(snapshot.resource_count(), 2);
    }
}
