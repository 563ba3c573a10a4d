//! Resources given in code: a base set every node gets and an overlay per node, built into the
//! same [`Snapshot`] the fixture loader builds from `fixtures/` and `fixtures/nodes/<id>/` (an
//! overlay resource replaces the base resource of the same type and name).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use xdsloop_proto::{Codec, DecodeError, Format, Resource};

use crate::{snapshot::Snapshot, snapshot::TypeResources};

use super::KitError;

/// A set of resources of any types, for every node or for one.
///
/// Each type's SotW `version_info` is a hash of its content unless [`Resources::version`]
/// names one. Resources are served as given: bytes that do not decode are sent as they are,
/// which is how a test makes a client NACK.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    items: Vec<Arc<Resource>>,
    version: Option<String>,
}

impl Resources {
    /// A set of these resources, each type at a version hashed from its content.
    pub fn new(items: impl IntoIterator<Item = Resource>) -> Self {
        Self {
            items: items.into_iter().map(Arc::new).collect(),
            version: None,
        }
    }

    /// Serves every type in this set at `version` (its SotW `version_info`), as a fixture
    /// document's `version_info` does.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// The resources of a fixture document, as a fixture file holds them (YAML or JSON: one
    /// resource with its `"@type"`, a list, several `---` documents, or a
    /// DiscoveryResponse-shaped `{version_info, resources}`, whose `version_info` becomes the
    /// set's). Errors name the line and column, as for a fixture file.
    ///
    /// ```
    /// use xdsloop_server::testkit::Resources;
    ///
    /// let set = Resources::from_yaml(
    ///     "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\n\
    ///      name: web\n\
    ///      connect_timeout: 1s\n",
    /// )?;
    /// assert_eq!(set.items().next().map(|r| r.name.as_str()), Some("web"));
    /// # Ok::<(), xdsloop_server::proto::DecodeError>(())
    /// ```
    pub fn from_yaml(text: &str) -> Result<Self, DecodeError> {
        Self::from_fixture(text, Format::Yaml)
    }

    /// [`Resources::from_yaml`] for a JSON fixture document.
    pub fn from_json(text: &str) -> Result<Self, DecodeError> {
        Self::from_fixture(text, Format::Json)
    }

    fn from_fixture(text: &str, format: Format) -> Result<Self, DecodeError> {
        let docs = Codec::envoy().decode_fixture(text, format)?;
        let version = docs.iter().find_map(|d| d.version_info.clone());
        let items = docs.into_iter().flat_map(|d| d.resources);
        Ok(Self {
            version,
            ..Self::new(items)
        })
    }

    /// The set's resources, in the order given.
    pub fn items(&self) -> impl Iterator<Item = &Resource> {
        self.items.iter().map(|r| &**r)
    }

    /// A resource named twice for one type is a mistake in the test, not a replacement.
    fn check(&self, node: Option<&str>) -> Result<(), KitError> {
        let mut seen = BTreeSet::new();
        for r in &self.items {
            if !seen.insert((r.type_url.as_str(), r.name.as_str())) {
                return Err(KitError::Duplicate {
                    node: node.map(str::to_string),
                    type_url: r.type_url.clone(),
                    name: r.name.clone(),
                });
            }
        }
        Ok(())
    }

    /// The set's resources of each type, with the version their "document" gave them.
    fn by_type(&self) -> BTreeMap<&str, Vec<Entry<'_>>> {
        let mut types: BTreeMap<&str, Vec<_>> = BTreeMap::new();
        for r in &self.items {
            let entry = (r.clone(), self.version.as_deref());
            types.entry(r.type_url.as_str()).or_default().push(entry);
        }
        types
    }
}

impl From<Vec<Resource>> for Resources {
    fn from(items: Vec<Resource>) -> Self {
        Self::new(items)
    }
}

impl<const N: usize> From<[Resource; N]> for Resources {
    fn from(items: [Resource; N]) -> Self {
        Self::new(items)
    }
}

/// A resource and the version its set gave it, as [`TypeResources::from_documents`] takes them.
type Entry<'a> = (Arc<Resource>, Option<&'a str>);

/// What a memory-backed test server serves: the base set and the overlays.
#[derive(Debug, Default)]
pub(super) struct Memory {
    base: Resources,
    overlays: BTreeMap<String, Resources>,
    generation: u64,
}

impl Memory {
    /// Replaces the base set (`node` = `None`) or one node's overlay (an empty set removes
    /// it), and returns the snapshot to serve next.
    pub(super) fn set(
        &mut self,
        node: Option<&str>,
        resources: Resources,
    ) -> Result<Snapshot, KitError> {
        resources.check(node)?;
        match node {
            None => self.base = resources,
            Some(node) if resources.items.is_empty() => {
                self.overlays.remove(node);
            }
            Some(node) => {
                self.overlays.insert(node.to_string(), resources);
            }
        }
        self.generation += 1;
        Ok(self.snapshot())
    }

    fn snapshot(&self) -> Snapshot {
        let base_types = self.base.by_type();
        let base = base_types
            .iter()
            .map(|(url, entries)| (url.to_string(), type_resources(entries.iter().cloned())))
            .collect();
        let overlays = self
            .overlays
            .iter()
            .map(|(node, overlay)| {
                let types = overlay.by_type().into_iter().map(|(url, entries)| {
                    let under = base_types.get(url).into_iter().flatten().cloned();
                    (url.to_string(), type_resources(under.chain(entries)))
                });
                (node.clone(), types.collect())
            })
            .collect();
        Snapshot {
            generation: self.generation,
            base,
            overlays,
        }
    }
}

fn type_resources<'a>(entries: impl IntoIterator<Item = Entry<'a>>) -> Arc<TypeResources> {
    Arc::new(TypeResources::from_documents(entries))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use xdsloop_proto::type_url::{CLUSTER, LISTENER};

    use super::*;
    use crate::snapshot::VersionKind;

    fn resource(type_url: &str, name: &str, content: &str) -> Resource {
        Resource {
            type_url: type_url.into(),
            name: name.into(),
            bytes: Bytes::from(content.to_string()),
            version: content.into(),
            ttl: None,
        }
    }

    #[test]
    fn an_overlay_replaces_same_named_base_resources_for_its_node_only() {
        let mut memory = Memory::default();
        let base = [resource(CLUSTER, "web", "a"), resource(CLUSTER, "db", "a")];
        memory.set(None, base.into()).unwrap();
        let snapshot = memory
            .set(Some("n1"), [resource(CLUSTER, "web", "b")].into())
            .unwrap();
        assert_eq!(snapshot.generation, 2);
        let n1 = snapshot.get("n1", CLUSTER).unwrap();
        assert_eq!(n1.resources["web"].version, "b");
        assert_eq!(
            n1.resources["db"].version, "a",
            "the rest of the base stays"
        );
        let other = snapshot.get("n2", CLUSTER).unwrap();
        assert_eq!(other.resources["web"].version, "a");
        assert_ne!(
            n1.version, other.version,
            "different content, different version"
        );
    }

    #[test]
    fn replacing_the_base_keeps_overlays_and_an_empty_overlay_removes_one() {
        let mut memory = Memory::default();
        memory
            .set(Some("n1"), [resource(LISTENER, "in", "a")].into())
            .unwrap();
        let snapshot = memory
            .set(None, [resource(CLUSTER, "web", "a")].into())
            .unwrap();
        assert!(snapshot.get("n1", LISTENER).is_some());
        assert!(snapshot.get("n2", LISTENER).is_none());
        let snapshot = memory.set(Some("n1"), Resources::default()).unwrap();
        assert!(snapshot.get("n1", LISTENER).is_none());
    }

    #[test]
    fn a_set_version_is_the_types_version_else_a_content_hash() {
        let mut memory = Memory::default();
        let web = resource(CLUSTER, "web", "a");
        let snapshot = memory
            .set(None, Resources::new([web.clone()]).version("v2"))
            .unwrap();
        let cds = snapshot.get("n", CLUSTER).unwrap();
        assert_eq!(
            (cds.version.as_str(), cds.version_kind),
            ("v2", VersionKind::Explicit)
        );
        let snapshot = memory.set(None, [web].into()).unwrap();
        let cds = snapshot.get("n", CLUSTER).unwrap();
        assert_eq!(cds.version_kind, VersionKind::Content);
    }

    #[test]
    fn a_name_given_twice_in_one_set_is_refused_and_nothing_changes() {
        let mut memory = Memory::default();
        memory
            .set(None, [resource(CLUSTER, "web", "a")].into())
            .unwrap();
        let twice = [resource(CLUSTER, "web", "b"), resource(CLUSTER, "web", "c")];
        let err = memory.set(Some("n1"), twice.into()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("node n1: two {CLUSTER} resources named \"web\" in one set")
        );
        assert_eq!(memory.generation, 1);
        assert!(memory.overlays.is_empty());
    }
}
