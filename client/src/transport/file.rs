//! A watched DiscoveryResponse file (Envoy's `path_config_source`). The file is a fixture
//! document — a DiscoveryResponse, a resource, a list of them; JSON or YAML, several YAML
//! documents allowed — and may hold several types. It is reloaded when it is written in place
//! or renamed over (the parent directory is watched and events filtered by file name); a file
//! that cannot be read or decoded is rejected and the last good content kept.
//!
//! The mux sees one virtual stream: each type it asks for is answered with that type's
//! resources from the last good load, as a SotW response whose version is the file's
//! `version_info` (else a hash of its text) and whose nonce is the load number. There is no
//! ACK channel: the ACK or NACK the mux then builds has nobody to go to, so the output says
//! ACCEPTED / REJECTED instead.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::time::Instant;
use xdsloop_proto::discovery::{Any, DiscoveryResponse};
use xdsloop_proto::{Codec, Format, type_url, version};

use crate::config::ClientConfig;
use crate::core::event::{ConnectionReport, Report};
use crate::core::request::Outgoing;
use crate::error::{BoxError, ClientError};
use crate::transport::hub::{Hub, Wire, now};

/// Editors save in several writes (or write, then rename): wait this long after the first
/// event so one save is one reload.
const DEBOUNCE: Duration = Duration::from_millis(50);

pub(crate) struct FileTransport {
    path: PathBuf,
    codec: Codec,
    /// Held so the watch lasts as long as the transport.
    _watcher: RecommendedWatcher,
    changes: mpsc::Receiver<()>,
}

impl FileTransport {
    pub(crate) fn new(path: &Path, config: &ClientConfig) -> Result<Self, ClientError> {
        let watch_error = |message: String, source: Option<BoxError>| ClientError::Watch {
            path: path.display().to_string(),
            message,
            source,
        };
        let name = path
            .file_name()
            .ok_or_else(|| watch_error("not a file path".into(), None))?
            .to_owned();
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        // notify names events by absolute path.
        let dir = parent
            .canonicalize()
            .map_err(|e| watch_error(format!("directory {}", parent.display()), Some(e.into())))?;
        // One pending signal already means "reload": more would add nothing.
        let (signal, changes) = mpsc::channel(1);
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
            if concerns(&event, &name) {
                let _ = signal.try_send(());
            }
        })
        .map_err(|e| watch_error("the file watcher".into(), Some(e.into())))?;
        watcher
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|e| watch_error(format!("directory {}", dir.display()), Some(e.into())))?;
        Ok(Self {
            path: dir.join(path.file_name().expect("checked")),
            codec: config.codec.clone(),
            _watcher: watcher,
            changes,
        })
    }

    pub(crate) async fn run(
        mut self,
        hub: &mut Hub,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) {
        let path = self.path.display().to_string();
        hub.report(Report::Connection(ConnectionReport::Watching { path }));
        let mut file = Loads::default();
        hub.mux.on_stream_start(now());
        hub.flush(&mut file).await;
        self.reload(hub, &mut file).await;
        let mut reload_at: Option<Instant> = None;
        loop {
            let deadline = hub.mux.next_deadline().map(Instant::from_std);
            let deadline = [deadline, reload_at].into_iter().flatten().min();
            let timer = async move {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut *shutdown => return,
                command = hub.commands.recv() => match command {
                    Some(command) => hub.handle(command),
                    None => return,
                },
                Some(()) = self.changes.recv() => {
                    reload_at.get_or_insert(Instant::now() + DEBOUNCE);
                }
                _ = timer => {
                    if reload_at.is_some_and(|at| at <= Instant::now()) {
                        reload_at = None;
                        self.reload(hub, &mut file).await;
                    }
                    hub.mux.on_timer(now(), SystemTime::now());
                }
            }
            hub.flush(&mut file).await;
            serve(hub, &mut file).await;
        }
    }

    /// Reads and decodes the file: good content replaces the last good and every type asked
    /// for is answered again; bad content is rejected for every type asked for.
    async fn reload(&self, hub: &mut Hub, file: &mut Loads) {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()));
        if let Ok(text) = &text
            && file.last_text.as_deref() == Some(text.as_str())
        {
            // An event without a change (a touch, a save of the same text): nothing to do.
            return;
        }
        file.load += 1;
        let decoded = text.and_then(|text| self.decode(&text, file.load).map(|c| (text, c)));
        match decoded {
            Ok((text, content)) => {
                tracing::info!(path = %self.path.display(), version = %content.version, "file loaded");
                file.last_text = Some(text);
                file.content = Some(content);
                file.failure = None;
            }
            Err(reason) => {
                tracing::warn!(path = %self.path.display(), %reason, "file rejected");
                file.last_text = None;
                file.failure = Some((file.load, reason));
                reject(hub, file).await;
            }
        }
        hub.flush(file).await;
        serve(hub, file).await;
    }

    fn decode(&self, text: &str, load: u64) -> Result<Content, String> {
        // YAML is a superset of JSON: any other extension is read as YAML.
        let format = Format::from_path(&self.path).unwrap_or(Format::Yaml);
        let docs = self
            .codec
            .decode_fixture(text, format)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let explicit = docs.iter().find_map(|d| d.version_info.clone());
        let version =
            explicit.unwrap_or_else(|| version::short(version::fnv1a(&[text.as_bytes()])));
        let mut by_type: BTreeMap<String, Vec<Any>> = BTreeMap::new();
        for resource in docs.into_iter().flat_map(|d| d.resources) {
            by_type
                .entry(resource.type_url.clone())
                .or_default()
                .push(resource.to_any());
        }
        Ok(Content {
            load,
            version,
            by_type,
        })
    }
}

/// Whether a notify event may have changed the file called `name`.
fn concerns(event: &notify::Result<Event>, name: &std::ffi::OsStr) -> bool {
    let Ok(event) = event else {
        // Lost track (overflow, error): reload to be sure.
        return true;
    };
    match event.kind {
        // Our own reads open and close the file; only a close after writing is a change.
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_)) => return false,
        _ => {}
    }
    event.need_rescan() || event.paths.iter().any(|p| p.file_name() == Some(name))
}

/// The decoded file.
struct Content {
    /// The load it came from.
    load: u64,
    version: String,
    by_type: BTreeMap<String, Vec<Any>>,
}

/// What was loaded and what the mux was told.
#[derive(Default)]
struct Loads {
    /// Load attempts so far: the nonce of the responses made from a load.
    load: u64,
    /// The text of the last good load (a reload of the same text is skipped).
    last_text: Option<String>,
    /// The last good content, with the load it came from.
    content: Option<Content>,
    /// Per type asked for: the names of the latest request.
    asked: BTreeMap<String, Vec<String>>,
    /// Per type answered: the load and names the answer was for.
    served: BTreeMap<String, (u64, Vec<String>)>,
    /// The last load, if it failed: its number and why.
    failure: Option<(u64, String)>,
    /// Per type: the failed load it was last told about.
    told: BTreeMap<String, u64>,
}

impl Wire for Loads {
    async fn send(&mut self, request: Outgoing) {
        if let Outgoing::Sotw(request) = request {
            self.asked.insert(request.type_url, request.resource_names);
        }
    }
}

impl Loads {
    /// The next type owed an answer: asked and not yet answered from this content with these
    /// names. Clusters before endpoints, listeners before routes (make-before-break).
    fn owed(&self) -> Option<String> {
        let content = self.content.as_ref()?;
        self.asked
            .iter()
            .filter(|(t, names)| {
                self.served
                    .get(*t)
                    .is_none_or(|(load, served)| *load != content.load || served != *names)
            })
            .map(|(t, _)| t.clone())
            .min_by_key(|t| (type_url::order(t), t.clone()))
    }
}

/// Rejects the failed load for every type asked for and not yet told about it.
async fn reject(hub: &mut Hub, file: &mut Loads) {
    let Some((load, reason)) = file.failure.clone() else {
        return;
    };
    let untold: Vec<String> = file
        .asked
        .keys()
        .filter(|t| file.told.get(*t) != Some(&load))
        .cloned()
        .collect();
    for type_url in untold {
        file.told.insert(type_url.clone(), load);
        let nonce = load.to_string();
        let (at, wall) = (now(), SystemTime::now());
        hub.mux
            .reject_update(&type_url, "", &nonce, &reason, at, wall);
        hub.flush(file).await;
    }
}

/// Answers every type owed an answer, one at a time: an answer can make the mux ask for more
/// (dependency following), so the owed set is recomputed after each. While no load was ever
/// good, a type asked for hears why instead.
async fn serve(hub: &mut Hub, file: &mut Loads) {
    if file.content.is_none() {
        reject(hub, file).await;
        return;
    }
    while let Some(type_url) = file.owed() {
        let content = file.content.as_ref().expect("owed only with content");
        let response = DiscoveryResponse {
            version_info: content.version.clone(),
            resources: content.by_type.get(&type_url).cloned().unwrap_or_default(),
            type_url: type_url.clone(),
            nonce: content.load.to_string(),
            ..Default::default()
        };
        let names = file.asked.get(&type_url).cloned().unwrap_or_default();
        file.served.insert(type_url.clone(), (content.load, names));
        hub.mux.on_sotw_response(response, now(), SystemTime::now());
        hub.flush(file).await;
    }
}
