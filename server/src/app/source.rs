//! Where the server's snapshots come from: the watched fixture directory, or a recording
//! replayed (`--replay FILE`).

use std::sync::Arc;

use tokio::sync::watch;
use tracing::{info, warn};
use xdsloop_proto::Codec;

use crate::{
    app::Config,
    config::watch::{ReloadStatus, Settings, Watcher},
    error::Error,
    replay::Replay,
    replay::script,
    snapshot::Snapshot,
};

/// Where the snapshots come from: the watched fixture directory, or, when replaying, nowhere
/// (an empty snapshot: the streams serve the recording).
pub(crate) struct Source {
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    pub reloads: watch::Receiver<ReloadStatus>,
    pub watcher: Option<Watcher>,
    pub replay: Option<Arc<Replay>>,
}

impl Source {
    pub(crate) fn start(config: &Config, codec: &Codec, settings: Settings) -> Result<Self, Error> {
        let Some(path) = &config.replay else {
            let watcher = Watcher::start_with(config.fixtures.clone(), codec.clone(), settings)?;
            return Ok(Self {
                snapshots: watcher.snapshots.clone(),
                reloads: watcher.reloads.clone(),
                watcher: Some(watcher),
                replay: None,
            });
        };
        let script = script::load(path, codec)?;
        let requests: usize = script.streams.iter().map(|s| s.requests()).sum();
        info!(file = %script.file, streams = script.streams.len(), requests,
            "replaying a recording instead of serving fixtures");
        if script.stateless_lines > 0 {
            warn!(file = %script.file, lines = script.stateless_lines,
                "the recording's stateless exchanges (Fetch, REST) are not replayed");
        }
        let empty = Arc::new(Snapshot::default());
        let reloads = watch::channel(ReloadStatus::ok(&empty)).1;
        Ok(Self {
            snapshots: watch::channel(empty).1,
            reloads,
            watcher: None,
            replay: Some(Arc::new(Replay::with_timing(script, config.replay_timing))),
        })
    }
}
