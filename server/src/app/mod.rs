//! Wiring: load and watch the fixtures, bind the listeners, serve ADS on the `watch` of
//! snapshots, shut down cleanly.
//!
//! [`start`] is the whole server, with the admin routes on the xDS port unless
//! [`Config::admin`] places them elsewhere; [`serve`] runs only the gRPC part (and REST-JSON) on
//! any snapshot source (tests, benchmarks, simulated fleets). Both serve gRPC health checking
//! and reflection next to ADS (`transport/introspection.rs`).
//! - `xds.rs`: the xDS port and its services;
//! - `listener.rs`: an HTTP server on our own accept loop (`net/`), and its shutdown;
//! - `flags` (the binary's, feature `cli`): the TLS, admin access, secrets and limits flags
//!   and what they set.

#[cfg(feature = "cli")]
pub mod flags;
pub(crate) mod listener;
pub(crate) mod source;
pub(crate) mod xds;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use tokio::sync::watch;
use tracing::{info, warn};
use xdsloop_proto::{Codec, redact::Secrets};

pub(crate) use self::listener::HttpServer;
use self::source::Source;
#[cfg(feature = "testkit")]
pub(crate) use self::xds::serve_in_process;
pub use self::xds::{GrpcServer, serve};
/// What a [`Config`] and a [`Running`] server carry, under the names their fields use.
pub use crate::{
    admin::Placement,
    admin::registry::timeline::DEFAULT_DEPTH as DEFAULT_TIMELINE_DEPTH,
    net::{Limits, tls::TlsFiles},
    transport::discovery::DEFAULT_MAX_MESSAGE_BYTES,
    transport::record::Recording,
};
use crate::{
    admin::registry::{Registry, timeline},
    admin::{self, Admin, AdminAccess},
    config::watch::{ReloadStatus, Settings, Watcher},
    error::Error,
    faults::scenario::{self, Scenarios, watch::ScenarioWatcher},
    judge::Mode,
    net::{
        Listening,
        close::Closer,
        incoming::Accept,
        refusal::NetStats,
        rotation::{self, TlsView},
        tls::ClientCerts,
    },
    snapshot::Snapshot,
    transport::record::{self, Recorder},
};

/// Where `xdsloop-server` listens unless told otherwise (Envoy examples use 18000 for xDS).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:18000";
/// Quiet time after the last file event before reloading while a file of the burst may still be
/// written (editors write in bursts); a burst of complete files waits only the settle window.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

/// Everything `xdsloop-server` needs to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The fixture directory (watched recursively).
    pub fixtures: PathBuf,
    /// Port 0 picks a free port; [`Running::addr`] tells which.
    pub listen: SocketAddr,
    /// Extra `FileDescriptorSet`s for user resource types.
    pub descriptor_sets: Vec<PathBuf>,
    /// Quiet time after the last file event before a reload (`--debounce-ms`, see
    /// [`DEFAULT_DEBOUNCE`]).
    pub debounce: Duration,
    /// Fixture files larger than this are rejected (`--max-fixture-bytes`).
    pub max_fixture_bytes: u64,
    /// The largest response (S13).
    pub max_message_bytes: usize,
    /// What one client may cost: request size, streams per connection, connections.
    pub limits: Limits,
    /// TLS on the xDS port (and a separate admin listener); mTLS with a client CA.
    pub tls: Option<TlsFiles>,
    /// Where to serve the admin routes (`/status`, `/snapshot`, `/healthz`): on the xDS port
    /// by default, so servers side by side never contend for a second port.
    pub admin: Placement,
    /// Opens the admin data to requests carrying it as a bearer token, from anywhere.
    pub admin_token: Option<String>,
    /// Whether `/snapshot` and `--record-resources` show secret values.
    pub secrets: Secrets,
    /// Events each stream keeps for `/status` (`recent`); 0 builds none. Without admin routes
    /// nobody could read them, so none are kept then.
    pub timeline_depth: usize,
    /// Write a transcript of every stream (`--record`).
    pub record: Option<Recording>,
    /// A fault scenario file, watched and reloaded like the fixtures (`--scenario`).
    pub scenario: Option<PathBuf>,
    /// How each client is judged against the client rules (`--conformance`, `--strict`).
    pub conformance: Mode,
    /// Serve this recording (`--replay FILE`) instead of `fixtures`, which is then not read.
    pub replay: Option<PathBuf>,
    /// With `replay`: each response waits as long after its request as it did when recorded
    /// (`--replay-timing`).
    pub replay_timing: bool,
}

impl Config {
    /// Defaults for everything but the fixture directory.
    pub fn new(fixtures: impl Into<PathBuf>) -> Self {
        Self {
            fixtures: fixtures.into(),
            listen: DEFAULT_LISTEN.parse().expect("valid default address"),
            descriptor_sets: Vec::new(),
            debounce: DEFAULT_DEBOUNCE,
            max_fixture_bytes: crate::config::fixtures::DEFAULT_MAX_FILE_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            limits: Limits::default(),
            tls: None,
            admin: Placement::XdsPort,
            admin_token: None,
            secrets: Secrets::Hide,
            timeline_depth: timeline::DEFAULT_DEPTH,
            record: None,
            scenario: None,
            conformance: Mode::Report,
            replay: None,
            replay_timing: false,
        }
    }
}

/// The running server: fixture watcher plus gRPC server.
pub struct Running {
    /// The bound xDS address (port 0 in [`Config::listen`] resolved).
    pub addr: SocketAddr,
    /// The snapshot being served (changes on every good reload).
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// The outcome of the latest reload (rejections show here and in the log).
    pub reloads: watch::Receiver<ReloadStatus>,
    /// Open streams and their per-type state.
    pub registry: Registry,
    /// The fault scenario in force: [`Scenarios::set`] and [`Scenarios::clear`] change it on
    /// every stream, open and new (as `PUT`/`DELETE /scenario` and edits to `--scenario` do).
    pub scenarios: Scenarios,
    /// Where the admin routes are served: [`Running::addr`] unless [`Config::admin`] moved
    /// them to a listener of their own (then its bound address) or turned them off (`None`).
    pub admin_addr: Option<SocketAddr>,
    server: GrpcServer,
    admin: Option<HttpServer>,
    recorder: Option<Recorder>,
    /// None when replaying.
    watcher: Option<Watcher>,
    scenario_watcher: Option<ScenarioWatcher>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Running {
    /// Ends every stream, stops the gRPC server, finishes the transcript and stops the admin
    /// endpoint, then stops watching the fixtures.
    pub async fn shutdown(self) -> Result<(), Error> {
        let result = self.server.shutdown().await;
        if let Some(recorder) = self.recorder {
            recorder.finish().await;
        }
        let admin = match self.admin {
            Some(admin) => admin.shutdown().await,
            None => Ok(()),
        };
        drop(self.watcher);
        drop(self.scenario_watcher);
        result.and(admin)
    }
}

/// Loads the fixtures (an unreadable directory or invalid fixtures are an error), starts
/// watching them, binds `config.listen` and serves ADS, with the admin routes where
/// `config.admin` places them.
pub async fn start(config: Config) -> Result<Running, Error> {
    let codec = codec(&config.descriptor_sets)?;
    // Before anything is bound: a bad certificate is a start-up error, not a listener that
    // refuses every handshake.
    let tls = follow_tls(config.tls.as_ref(), ClientCerts::Required)?;
    let settings = Settings {
        debounce: config.debounce,
        max_file_bytes: config.max_fixture_bytes,
    };
    let source = Source::start(&config, &codec, settings)?;
    let snapshots = source.snapshots.clone();
    let depth = match config.admin {
        Placement::Off => 0,
        Placement::XdsPort | Placement::Listener(_) => config.timeline_depth,
    };
    let registry = Registry::with_timeline_depth(depth);
    let recorder = match &config.record {
        Some(recording) => Some(record::start(&registry, recording, codec.clone())?),
        None => None,
    };
    let scenarios = Scenarios::new();
    let scenario_watcher = match &config.scenario {
        Some(path) => Some(
            scenario::watch::start(scenarios.clone(), path.clone(), config.debounce)
                .map_err(Error::Scenario)?,
        ),
        None => None,
    };
    // Replaying, the one "load" is the empty snapshot at start-up: shown as it was, not as
    // a reload at every query.
    let reloads = Some(source.reloads.clone());
    match &source.replay {
        Some(replay) => registry.attach_replay(replay.clone()),
        None => drop(admin::push_log::spawn(registry.clone(), snapshots.clone())),
    }
    let listening = Listening {
        limits: config.limits,
        stats: NetStats::new(config.limits.max_connections),
        tls,
    };
    let state = Admin::new(registry.clone(), snapshots.clone(), reloads, codec.clone())
        .with_access(AdminAccess::new(config.admin_token.clone()))
        .with_secrets(config.secrets)
        .with_listening(listening.clone())
        .with_scenarios(scenarios.clone());
    let admin = match config.admin {
        Placement::Listener(listen) => Some(serve_admin(listen, &config, state.clone()).await?),
        Placement::XdsPort | Placement::Off => None,
    };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    // CSDS shows the admin data: it is served where the admin routes are.
    let csds = (config.admin == Placement::XdsPort).then(|| state.csds());
    let http = xds::Http {
        routes: xds_port_admin(config.admin, state, admin.as_ref(), scheme),
        csds,
    };
    let port = xds::XdsPort {
        listener: xds::listen_on(config.listen).await?,
        max_message_bytes: config.max_message_bytes,
        listening,
        conformance: config.conformance,
        replay: source.replay.clone(),
        scenarios: scenarios.clone(),
    };
    let server = port
        .serve(snapshots.clone(), registry.clone(), codec, http)
        .await?;
    let admin_addr = match config.admin {
        Placement::XdsPort => Some(server.addr()),
        _ => admin.as_ref().map(HttpServer::addr),
    };
    log_listening(server.addr(), config.admin, admin_addr, scheme);
    Ok(Running {
        addr: server.addr(),
        snapshots,
        reloads: source.reloads,
        registry,
        scenarios,
        admin_addr,
        server,
        admin,
        recorder,
        watcher: source.watcher,
        scenario_watcher,
    })
}

/// How long the TLS files must be quiet after a change before they are read again.
const TLS_DEBOUNCE: Duration = Duration::from_millis(100);

fn follow_tls(
    files: Option<&TlsFiles>,
    client_certs: ClientCerts,
) -> Result<Option<watch::Receiver<TlsView>>, Error> {
    let follow = |files: &TlsFiles| rotation::follow(files.clone(), client_certs, TLS_DEBOUNCE);
    files.map(follow).transpose()
}

/// The admin routes on a listener of their own, over TLS when the xDS port is (client
/// certificates optional there: a token or loopback works too).
async fn serve_admin(
    listen: SocketAddr,
    config: &Config,
    state: Admin,
) -> Result<HttpServer, Error> {
    let listener = xds::listen_on(listen).await?;
    let accept = Accept {
        stats: NetStats::new(config.limits.max_connections),
        tls: follow_tls(config.tls.as_ref(), ClientCerts::Optional)?,
        closer: Closer::new(),
        budget_bytes: config.limits.budget_bytes(),
        // The admin listener stays up through an outage: it is how one watches it.
        outages: None,
    };
    // CSDS beside the admin routes: its gRPC router brings the fallback (UNIMPLEMENTED for
    // unknown gRPC methods, 404 otherwise).
    let routes = tonic::service::Routes::from(state.csds().router().merge(state.router()));
    let streams = config.limits.max_streams_per_connection;
    let server = listener::start(listener, routes, accept, streams, watch::channel(false))?;
    let addr = server.addr();
    // Not `addr`: harnesses take the first `addr=` as the xDS port.
    info!(admin = %addr, "admin listening on {addr} (/status, /snapshot, /healthz, CSDS)");
    Ok(server)
}

/// What the xDS port answers on the admin paths: the admin routes themselves, or a 404 saying
/// where they are.
fn xds_port_admin(
    placement: Placement,
    state: Admin,
    listener: Option<&HttpServer>,
    scheme: &str,
) -> axum::Router {
    match (placement, listener) {
        (Placement::XdsPort, _) => state.router(),
        (_, Some(listener)) => admin::elsewhere(format!(
            "the admin routes are not on the xDS port: this server serves them on {scheme}://{}/ \
             (its --admin)",
            listener.addr()
        )),
        (_, None) => admin::elsewhere("this server runs with --admin off".to_string()),
    }
}

/// The bound addresses, once, for people and for harnesses that parse them (port 0 resolved).
fn log_listening(addr: SocketAddr, placement: Placement, admin: Option<SocketAddr>, scheme: &str) {
    match (placement, admin) {
        (Placement::XdsPort, _) => {
            info!(%addr, "xDS listening on {addr} (admin: {scheme}://{addr}/status)");
        }
        (_, Some(admin)) => {
            info!(%addr, "xDS listening on {addr} (admin: {scheme}://{admin}/status)");
        }
        (_, None) => info!(%addr, "xDS listening on {addr} (admin off)"),
    }
    if admin.is_some_and(|a| !a.ip().is_loopback()) {
        warn!(
            "the admin routes answer other hosts only with --admin-token or a verified client \
             certificate; loopback peers need neither"
        );
    }
}

/// The Envoy API plus the user's descriptor sets, naming the first file that fails.
pub(crate) fn codec(descriptor_sets: &[PathBuf]) -> Result<Codec, Error> {
    let mut sets = Vec::with_capacity(descriptor_sets.len());
    let mut codec = Codec::envoy();
    for path in descriptor_sets {
        let bytes = std::fs::read(path).map_err(|e| Error::DescriptorSet {
            path: path.clone(),
            message: e.to_string(),
        })?;
        sets.push(bytes);
        // Decode the prefix so far: a set may import files from the ones before it, and the
        // error must name the file that broke.
        codec = Codec::with_descriptor_sets(sets.iter().map(Vec::as_slice)).map_err(|e| {
            Error::DescriptorSet {
                path: path.clone(),
                message: e.to_string(),
            }
        })?;
    }
    Ok(codec)
}
