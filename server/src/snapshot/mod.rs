//! The immutable snapshot streams serve from: resources by type URL, a version per type and a
//! version per resource, plus per-node overlays (`nodes/<node-id>/` in the fixture directory).
//!
//! A snapshot is built once per successful reload and shared as `Arc<Snapshot>` through a
//! `tokio::sync::watch`; streams never see files and the watcher never sees streams. Beside
//! each type's resources lives what is derived from them once per generation and shared by
//! every stream: the encoded response entries ([`entries`]), the SotW views ([`views`]),
//! keyed by interned name lists ([`names`]), large Delta responses' joined entries
//! ([`joined`]) and what changed since the previous generation ([`diff`]). Pure: no I/O, no runtime.

pub(crate) mod diff;
pub(crate) mod entries;
pub(crate) mod joined;
pub(crate) mod names;
pub(crate) mod views;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use xdsloop_proto::{Resource, version};

/// How a type's SotW version was chosen (user-facing rules: `fixtures/README.md`, "Versions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionKind {
    /// No document of these resources sets `version_info`: a hash of the content.
    Content,
    /// The one `version_info` their documents set (documents without one don't take part).
    Explicit,
    /// Their documents set different `version_info`s (one file per resource, each bumped on its
    /// own): a hash over every resource's name, content and document version, so a bump or an
    /// edit in any file is a new version.
    Combined,
}

/// One type's resources as served to one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeResources {
    /// The SotW `version_info` of this type, chosen as [`VersionKind`] says.
    pub version: String,
    /// Where `version` comes from: the fixture's own `version_info`, or a hash of the content.
    pub version_kind: VersionKind,
    /// Hash over every resource's name and version. Streams decide "did this type change?" by
    /// this together with `version`: an explicit `version_info` may stay the same while the
    /// content changes, or be bumped while it does not, and neither may be silently dropped.
    pub content_hash: u64,
    /// Resources by name. Encoded once per fixture generation and shared by every stream.
    pub resources: BTreeMap<String, Arc<Resource>>,
    /// The resources' response entries, encoded on first use (see [`entries`]).
    pub(crate) entries: entries::EntryCache,
    /// SotW views of these resources, shared by streams (see [`views`]).
    pub(crate) views: views::ViewCache,
    /// Large Delta responses' entries, joined and shared by streams (see [`joined`]).
    pub(crate) joined: joined::JoinedCache,
    /// What changed since the generation streams last saw (see [`diff`]).
    pub(crate) diffs: diff::DiffCache,
    /// Whether any resource has a TTL (S14): most types have none and skip that work.
    has_ttl: bool,
    /// Under [`VersionKind::Combined`], the `version_info` of the document each resource came
    /// from (empty otherwise: one version, or none, stands for every resource).
    documents: BTreeMap<String, String>,
}

impl TypeResources {
    /// Builds a type's resource set; `explicit_version` is the `version_info` all of them were
    /// given, if any.
    pub fn new(
        resources: BTreeMap<String, Arc<Resource>>,
        explicit_version: Option<String>,
    ) -> Self {
        let content_hash = content_hash(&resources);
        let (version, version_kind) = match explicit_version {
            Some(version) => (version, VersionKind::Explicit),
            None => (version::short(content_hash), VersionKind::Content),
        };
        Self::with_version(resources, content_hash, version, version_kind)
    }

    /// Builds a type's resource set from resources and the `version_info` of the document each
    /// came from (`None`: the document set none). A later entry replaces an earlier one of the
    /// same name, as an overlay replaces base resources.
    pub(crate) fn from_documents<'a>(
        entries: impl IntoIterator<Item = (Arc<Resource>, Option<&'a str>)>,
    ) -> Self {
        let mut resources = BTreeMap::new();
        let mut documents = BTreeMap::new();
        for (resource, document_version) in entries {
            match document_version {
                Some(version) => documents.insert(resource.name.clone(), version),
                None => documents.remove(&resource.name),
            };
            resources.insert(resource.name.clone(), resource);
        }
        let distinct: BTreeSet<&str> = documents.values().copied().collect();
        if distinct.len() < 2 {
            let explicit = distinct.first().map(|v| v.to_string());
            return Self::new(resources, explicit);
        }
        let parts: Vec<&[u8]> = resources
            .values()
            .flat_map(|r| {
                let document = documents.get(&r.name).copied().unwrap_or_default();
                [r.name.as_bytes(), r.version.as_bytes(), document.as_bytes()]
            })
            .collect();
        let version = version::short(spread(version::fnv1a(&parts)));
        let content_hash = content_hash(&resources);
        let mut combined =
            Self::with_version(resources, content_hash, version, VersionKind::Combined);
        combined.documents = documents
            .into_iter()
            .map(|(name, version)| (name, version.to_string()))
            .collect();
        combined
    }

    fn with_version(
        resources: BTreeMap<String, Arc<Resource>>,
        content_hash: u64,
        version: String,
        version_kind: VersionKind,
    ) -> Self {
        let has_ttl = resources.values().any(|r| r.ttl.is_some());
        Self {
            version,
            version_kind,
            content_hash,
            resources,
            entries: Default::default(),
            views: Default::default(),
            joined: Default::default(),
            diffs: Default::default(),
            has_ttl,
            documents: BTreeMap::new(),
        }
    }

    /// The `version_info` that stands for `name`: its document's under
    /// [`VersionKind::Combined`], the type's explicit one, or `None` (versions by content).
    fn document_version(&self, name: &str) -> Option<&str> {
        match self.version_kind {
            VersionKind::Combined => self.documents.get(name).map(String::as_str),
            VersionKind::Explicit => Some(&self.version),
            VersionKind::Content => None,
        }
    }

    /// What a SotW subscription to `names` holds of this set, as one number: each named
    /// resource that exists with its content version and the `version_info` standing for it.
    /// Equal stamps mean a response to those names would say nothing new ("only send updates
    /// ... when the resources in the DiscoveryResponse have changed"), whatever else changed.
    pub fn named_stamp<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> u64 {
        let mut names: Vec<&str> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        let picked = names.iter().filter_map(|n| self.resources.get(*n));
        self.stamp_of(picked)
    }

    /// [`Self::named_stamp`] of resources already picked (in name order).
    pub(crate) fn stamp_of<'r>(&self, picked: impl Iterator<Item = &'r Arc<Resource>>) -> u64 {
        let parts: Vec<&[u8]> = picked
            .flat_map(|r| {
                let document = self.document_version(&r.name).unwrap_or_default();
                [r.name.as_bytes(), r.version.as_bytes(), document.as_bytes()]
            })
            .collect();
        version::fnv1a(&parts)
    }

    /// Whether any resource of the type has a TTL.
    pub fn has_ttl(&self) -> bool {
        self.has_ttl
    }

    /// These resources without those `gone` picks, or `None` when it picks none. The set gets
    /// a version of its own, `<version>-<label>-<8 hex digits of the names left out>`: one
    /// version never stands for two contents, and the same cut of the same set is always the
    /// same version.
    pub(crate) fn without(
        &self,
        gone: impl Fn(&str) -> bool,
        label: &str,
    ) -> Option<TypeResources> {
        let (removed, kept): (BTreeMap<_, _>, BTreeMap<_, _>) = self
            .resources
            .iter()
            .map(|(name, r)| (name.clone(), r.clone()))
            .partition(|(name, _)| gone(name));
        if removed.is_empty() {
            return None;
        }
        let names: Vec<&[u8]> = removed.keys().map(String::as_bytes).collect();
        let cut = version::short(spread(version::fnv1a(&names)));
        let version = format!("{}-{label}-{}", self.version, &cut[..8]);
        let hash = content_hash(&kept);
        Some(Self::with_version(kept, hash, version, self.version_kind))
    }
}

/// FNV-1a barely moves its high bits for a change in the last bytes it reads, and a document's
/// `version_info` often comes last and differs in one character (`web-1` → `web-2`), while the
/// status table shows a version's first 8 hex digits. MurmurHash3's 64-bit finalizer spreads
/// every input bit over the whole value.
fn spread(mut hash: u64) -> u64 {
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

/// Hash over the resources' names and versions, in name order.
fn content_hash(resources: &BTreeMap<String, Arc<Resource>>) -> u64 {
    let parts: Vec<&[u8]> = resources
        .values()
        .flat_map(|r| [r.name.as_bytes(), r.version.as_bytes()])
        .collect();
    version::fnv1a(&parts)
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

    /// How many resources the fixtures hold: the base set's, and each overlay's own. An
    /// overlay's type is merged with the base, so the base resources it inherits (the same
    /// `Arc`s) are not counted again; one it replaces is a resource of the overlay's.
    pub fn resource_count(&self) -> usize {
        let base: usize = self.base.values().map(|t| t.resources.len()).sum();
        let own = |url: &str, t: &TypeResources| {
            let inherited = |name: &String, r: &Arc<Resource>| {
                let base = self.base.get(url).and_then(|b| b.resources.get(name));
                base.is_some_and(|b| Arc::ptr_eq(b, r))
            };
            t.resources.iter().filter(|(n, r)| !inherited(n, r)).count()
        };
        let overlays: usize = self
            .overlays
            .values()
            .flat_map(|types| types.iter())
            .map(|(url, t)| own(url, t))
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
            ttl: None,
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

    fn documents(items: &[(&str, &str, Option<&str>)]) -> TypeResources {
        let entries = items
            .iter()
            .map(|(name, content, document)| (resource(name, content).1, *document));
        TypeResources::from_documents(entries)
    }

    #[test]
    fn files_with_different_versions_combine_into_one_that_follows_every_file() {
        let start = [("a", "1", Some("a-1")), ("b", "1", Some("b-1"))];
        let combined = documents(&start);
        assert_eq!(combined.version_kind, VersionKind::Combined);
        assert_eq!(combined.version.len(), 16, "{}", combined.version);
        assert_eq!(documents(&start).version, combined.version, "deterministic");
        let bumped = documents(&[("a", "1", Some("a-1")), ("b", "1", Some("b-2"))]);
        assert_ne!(bumped.version, combined.version, "a version-only bump");
        assert_eq!(bumped.content_hash, combined.content_hash);
        let edited = documents(&[("a", "1", Some("a-1")), ("b", "2", Some("b-1"))]);
        assert_ne!(edited.version, combined.version, "a content edit");
        let unversioned = documents(&[("a", "1", Some("a-1")), ("b", "1", None)]);
        assert_eq!(
            (unversioned.version.as_str(), unversioned.version_kind),
            ("a-1", VersionKind::Explicit),
            "documents without version_info don't take part"
        );
        let agreeing = documents(&[("a", "1", Some("v3")), ("b", "2", Some("v3"))]);
        assert_eq!(agreeing.version, "v3");
        let hashed = documents(&[("a", "1", None)]);
        assert_eq!(hashed.version_kind, VersionKind::Content);
        assert_eq!(hashed.version, version::short(hashed.content_hash));
    }

    #[test]
    fn combined_version_bumps_show_in_the_first_8_digits() {
        // The status table shows 8 hex digits; a bump of the last file's version is a change
        // in the last bytes hashed, which must not leave those digits (nearly) alike.
        let prefix = |n: u32| {
            let bump = format!("web-{n}");
            let combined = documents(&[("api", "1", Some("api-1")), ("web", "1", Some(&bump))]);
            combined.version[..8].to_string()
        };
        for n in 1..16 {
            let (before, after) = (prefix(n), prefix(n + 1));
            let differing = before.chars().zip(after.chars()).filter(|(a, b)| a != b);
            assert!(differing.count() >= 4, "{before} -> {after}");
        }
    }

    #[test]
    fn flap_cut_has_a_version_of_its_own_per_cut() {
        let all = TypeResources::new([resource("api", "1"), resource("web", "1")].into(), None);
        assert!(all.without(|n| n == "db", "flap").is_none(), "cuts nothing");
        let cut = all.without(|n| n == "web", "flap").unwrap();
        assert_eq!(cut.resources.keys().collect::<Vec<_>>(), ["api"]);
        assert!(cut.version.starts_with(&format!("{}-flap-", all.version)));
        assert_ne!(cut.content_hash, all.content_hash);
        let again = all.without(|n| n == "web", "flap").unwrap();
        assert_eq!(again.version, cut.version, "deterministic");
        let other = all.without(|n| n == "api", "flap").unwrap();
        assert_ne!(other.version, cut.version, "another cut, another version");
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
