//! Fixture directory → [`Snapshot`]. Pure: it reads files and nothing else (no async, no global
//! state), so the watcher can run it on a blocking thread and tests can call it directly.
//!
//! The rules (user-facing version in `fixtures/README.md`):
//! - every `*.yaml`/`*.yml`/`*.json` below the directory, in a deterministic order; hidden
//!   entries and editor leftovers are skipped (see `files`);
//! - `nodes/<node-id>/...` holds an overlay served only to that node id;
//! - a resource's name is the one Envoy uses for its type; a name may appear once per type in the
//!   base set and once per type in each overlay;
//! - a type's version, per node, comes from the `version_info` of the documents its served
//!   resources came from: the one they set, a combination if they set several, else a content
//!   hash ([`TypeResources::from_documents`]). One file per resource, each with its own
//!   `version_info`, is Envoy's file-xDS layout, so different versions are no error.

mod files;
mod read;
#[cfg(test)]
mod tests;

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    sync::Arc,
};

use xdsloop_proto::{Codec, FixtureDoc, Format, Resource, type_url};

use crate::snapshot::{Snapshot, TypeResources};

pub(crate) use self::files::is_ignored;
pub use self::read::DEFAULT_MAX_FILE_BYTES;
#[cfg(test)]
use self::read::human_bytes;
pub use crate::error::FixtureError;

/// Loads every fixture under `dir` into a snapshot numbered `generation` (decoding every file).
pub fn load(dir: &Path, codec: &Codec, generation: u64) -> Result<Snapshot, FixtureError> {
    Loader::default().load(dir, codec, generation)
}

/// Loads fixture directories again and again, decoding only the files whose bytes changed
/// since its last load: a reload after editing one file of a large directory decodes that
/// file, not the directory. Everything across files (duplicates, versions, overlays) is worked
/// out on every load, as [`load`] does.
///
/// Inside, a load has two steps, so that the watcher can tell what a slow one is doing: read
/// (list and read the files: cheap, bounded by the per-file size limit), then decode.
#[derive(Debug)]
pub struct Loader {
    /// Each file's bytes at its last successful decode, and the documents decoded from them.
    decoded: HashMap<PathBuf, (Vec<u8>, Vec<FixtureDoc>)>,
    max_file_bytes: u64,
}

impl Default for Loader {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FILE_BYTES)
    }
}

impl Loader {
    /// A loader that rejects any fixture file larger than `max_file_bytes`.
    pub fn new(max_file_bytes: u64) -> Self {
        Self {
            decoded: HashMap::new(),
            max_file_bytes,
        }
    }

    /// Loads every fixture under `dir` into a snapshot numbered `generation`.
    pub fn load(
        &mut self,
        dir: &Path,
        codec: &Codec,
        generation: u64,
    ) -> Result<Snapshot, FixtureError> {
        let files = self.read(dir)?;
        self.decode(files, codec, generation)
    }

    /// Lists and reads the fixture files under `dir`, and finds which ones need decoding.
    pub(crate) fn read(&self, dir: &Path) -> Result<FileSet, FixtureError> {
        let mut files = Vec::new();
        for file in files::collect(dir)? {
            let bytes = read::read(&file.path, self.max_file_bytes)?;
            let before = self.decoded.get(&file.path);
            let (bytes, docs, empty) = match before {
                Some((before, docs)) if *before == bytes => (bytes, Some(docs.clone()), None),
                // An editor truncates before it writes, and a failed write leaves nothing:
                // an empty file is not written yet, so what it held before stays served.
                Some((before, docs)) if bytes.is_empty() => {
                    (before.clone(), Some(docs.clone()), Some(true))
                }
                None if bytes.is_empty() => (bytes, Some(Vec::new()), Some(false)),
                _ => (bytes, None, None),
            };
            let empty = empty.map(|kept| EmptyFile {
                path: file.path.clone(),
                kept,
            });
            files.push(ReadFile {
                file,
                bytes,
                docs,
                empty,
            });
        }
        Ok(FileSet { files })
    }

    /// Decodes the files of `files` that changed and builds the snapshot numbered `generation`.
    /// Only a good load changes what the loader remembers.
    pub(crate) fn decode(
        &mut self,
        files: FileSet,
        codec: &Codec,
        generation: u64,
    ) -> Result<Snapshot, FixtureError> {
        let mut build = Build::default();
        let mut seen = HashMap::new();
        for ReadFile {
            file, bytes, docs, ..
        } in files.files
        {
            let docs = match docs {
                Some(docs) => docs,
                None => decode_file(&file.path, &bytes, codec)?,
            };
            let scope = match &file.node {
                None => &mut build.base,
                Some(node) => build.nodes.entry(node.clone()).or_default(),
            };
            let several = docs.len() > 1;
            for (index, doc) in docs.iter().enumerate() {
                let origin = Origin {
                    file: file.path.clone(),
                    document: several.then_some(index + 1),
                };
                scope.add(&origin, doc.clone())?;
            }
            seen.insert(file.path, (bytes, docs));
        }
        // Only after a good load: files deleted since drop out. A failed load changes nothing
        // here (an edited file is told apart by its bytes either way).
        self.decoded = seen;
        Ok(build.finish(generation))
    }
}

/// The fixture files of one load with their bytes, between [`Loader::read`] and
/// [`Loader::decode`].
#[derive(Debug)]
pub(crate) struct FileSet {
    files: Vec<ReadFile>,
}

#[derive(Debug)]
struct ReadFile {
    file: files::FixtureFile,
    bytes: Vec<u8>,
    /// The documents decoded before, when its bytes did not change; `None`: decode it.
    docs: Option<Vec<FixtureDoc>>,
    empty: Option<EmptyFile>,
}

/// A zero-byte fixture file, treated as not written yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EmptyFile {
    pub path: PathBuf,
    /// True: its resources from the last good load stay served. False: it had none (a new
    /// file, or at start-up), so it adds nothing.
    pub kept: bool,
}

impl FileSet {
    /// The files whose bytes changed since the last good load: what [`Loader::decode`] parses.
    pub(crate) fn to_decode(&self) -> Vec<PathBuf> {
        let changed = self.files.iter().filter(|read| read.docs.is_none());
        changed.map(|read| read.file.path.clone()).collect()
    }

    /// The zero-byte files.
    pub(crate) fn empty(&self) -> impl Iterator<Item = &EmptyFile> {
        self.files.iter().filter_map(|read| read.empty.as_ref())
    }
}

fn decode_file(path: &Path, bytes: &[u8], codec: &Codec) -> Result<Vec<FixtureDoc>, FixtureError> {
    let format = Format::from_path(path).expect("files::collect only returns fixture files");
    let text = std::str::from_utf8(bytes).map_err(|e| {
        FixtureError::new(path, format!("not UTF-8 text (byte {})", e.valid_up_to()))
    })?;
    codec
        .decode_fixture(text, format)
        .map_err(|e| FixtureError::new(path, e.to_string()))
}

/// Where a resource came from, for error messages.
#[derive(Debug, Clone)]
struct Origin {
    file: PathBuf,
    /// The YAML document number, only when the file holds several.
    document: Option<usize>,
}

impl Origin {
    /// How to point at `self` from an error reported against `here`.
    fn describe_from(&self, here: &Origin) -> String {
        let place = if self.file == here.file {
            "earlier in this file".to_string()
        } else {
            format!("in {}", self.file.display())
        };
        match self.document {
            Some(document) => format!("{place} (document {document})"),
            None => place,
        }
    }
}

/// One resource as read: where from, and its document's `version_info`.
struct Placed {
    resource: Arc<Resource>,
    origin: Origin,
    document_version: Option<Arc<str>>,
}

/// One type's resources within one scope (the base set or one node's overlay).
#[derive(Default)]
struct TypeBuild {
    resources: BTreeMap<String, Placed>,
}

impl TypeBuild {
    /// Each resource with its document's `version_info`, as [`TypeResources::from_documents`]
    /// takes them.
    fn entries(&self) -> impl Iterator<Item = (Arc<Resource>, Option<&str>)> + '_ {
        let entries = self.resources.values();
        entries.map(|p| (p.resource.clone(), p.document_version.as_deref()))
    }
}

/// The base set, or one node's overlay, as read so far.
#[derive(Default)]
struct Scope {
    types: BTreeMap<String, TypeBuild>,
}

impl Scope {
    fn add(&mut self, origin: &Origin, doc: FixtureDoc) -> Result<(), FixtureError> {
        // A DiscoveryResponse-shaped document's version applies to every resource it holds.
        let version: Option<Arc<str>> = doc.version_info.map(Into::into);
        for resource in doc.resources {
            self.insert(resource, origin, version.clone())?;
        }
        Ok(())
    }

    fn insert(
        &mut self,
        resource: Resource,
        origin: &Origin,
        document_version: Option<Arc<str>>,
    ) -> Result<(), FixtureError> {
        let entry = self.types.entry(resource.type_url.clone()).or_default();
        if let Some(Placed { origin: first, .. }) = entry.resources.get(&resource.name) {
            return Err(FixtureError::new(
                &origin.file,
                format!(
                    "duplicate name: {} \"{}\"{} is also defined {}",
                    type_url::message_name(&resource.type_url),
                    resource.name,
                    document_suffix(origin),
                    first.describe_from(origin),
                ),
            ));
        }
        let placed = Placed {
            resource: Arc::new(resource),
            origin: origin.clone(),
            document_version,
        };
        entry.resources.insert(placed.resource.name.clone(), placed);
        Ok(())
    }
}

fn document_suffix(origin: &Origin) -> String {
    origin
        .document
        .map(|d| format!(" (document {d})"))
        .unwrap_or_default()
}

#[derive(Default)]
struct Build {
    base: Scope,
    nodes: BTreeMap<String, Scope>,
}

impl Build {
    fn finish(self, generation: u64) -> Snapshot {
        let base = self
            .base
            .types
            .iter()
            .map(|(url, build)| {
                let resources = TypeResources::from_documents(build.entries());
                (url.clone(), Arc::new(resources))
            })
            .collect();
        let overlays = self
            .nodes
            .into_iter()
            .map(|(node, scope)| (node, merge_overlay(&self.base, scope)))
            .collect();
        Snapshot {
            generation,
            base,
            overlays,
        }
    }
}

/// A node's view of the types its overlay touches: the base resources with the overlay's
/// same-named ones replaced. The `Arc`s are shared with the base set, so an overlay costs one
/// map per type, not a copy of the resources. Each resource keeps its own document's
/// `version_info`, so the node's version follows every file it is served from: a bump of a base
/// file reaches overlay nodes too.
fn merge_overlay(base: &Scope, overlay: Scope) -> BTreeMap<String, Arc<TypeResources>> {
    overlay
        .types
        .into_iter()
        .map(|(url, build)| {
            let base_entries = base
                .types
                .get(&url)
                .into_iter()
                .flat_map(TypeBuild::entries);
            let entries = base_entries.chain(build.entries());
            (url, Arc::new(TypeResources::from_documents(entries)))
        })
        .collect()
}
