//! Wiring: load and watch the fixtures, bind the listener, serve ADS on the `watch` of
//! snapshots, shut down cleanly.
//!
//! [`start`] is the whole server, with the admin routes on the xDS port unless
//! [`Config::admin`] places them elsewhere; [`serve`] runs only the gRPC part (and REST-JSON) on
//! any snapshot source (tests, benchmarks, simulated fleets). Both serve gRPC health checking
//! and reflection next to ADS ([`crate::transport::introspection`]).

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use tokio::{net::TcpListener, sync::watch, task::JoinHandle};
use tokio_stream::{StreamExt, wrappers::TcpListenerStream};
use tracing::{info, warn};
use xdsloop_proto::{Codec, csds::CSDS_SERVICE, services::ADS_SERVICE};

use crate::{
    Error, Snapshot,
    admin::csds::service::Csds,
    admin::registry::{Registry, timeline},
    admin::{self, Admin, AdminServer, Placement},
    config::replay,
    config::scenario::{self, Scenarios, watch::ScenarioWatcher},
    config::watch::{ReloadStatus, Settings, Watcher},
    protocol::conformance::Mode,
    protocol::replay::Replay,
    transport::ads::Ads,
    transport::discovery::{DEFAULT_MAX_MESSAGE_BYTES, Discovery},
    transport::introspection::{self, ServingReporter},
    transport::per_type::{self, PerType},
    transport::record::{self, Recorder, Recording},
    transport::rest::{self, Rest},
    transport::unary::Fetcher,
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
    pub debounce: Duration,
    /// Fixture files larger than this are rejected (`--max-fixture-bytes`).
    pub max_fixture_bytes: u64,
    /// gRPC message limit, both directions (S13).
    pub max_message_bytes: usize,
    /// Where to serve the admin routes (`/status`, `/snapshot`, `/healthz`): on the xDS port
    /// by default, so servers side by side never contend for a second port.
    pub admin: Placement,
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
            admin: Placement::XdsPort,
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
    admin: Option<AdminServer>,
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
    let reloads = source.watcher.as_ref().map(|w| w.reloads.clone());
    if let Some(replay) = &source.replay {
        registry.attach_replay(replay.clone());
    }
    let state = Admin::new(registry.clone(), snapshots.clone(), reloads, codec.clone())
        .with_scenarios(scenarios.clone());
    let admin = match config.admin {
        Placement::Listener(listen) => Some(admin::serve(listen, state.clone()).await?),
        Placement::XdsPort | Placement::Off => None,
    };
    // CSDS shows the admin data: it is served where the admin routes are.
    let csds = (config.admin == Placement::XdsPort).then(|| state.csds());
    let http = Http {
        routes: xds_port_admin(config.admin, state, admin.as_ref()),
        csds,
    };
    let server = bind(
        config.listen,
        snapshots.clone(),
        registry.clone(),
        Streams {
            max_message_bytes: config.max_message_bytes,
            conformance: config.conformance,
            replay: source.replay.clone(),
            scenarios: scenarios.clone(),
        },
        codec,
        http,
    )
    .await?;
    let admin_addr = match config.admin {
        Placement::XdsPort => Some(server.addr()),
        _ => admin.as_ref().map(AdminServer::addr),
    };
    log_listening(server.addr(), config.admin, admin_addr);
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

/// Where the snapshots come from: the watched fixture directory, or, when replaying, nowhere
/// (an empty snapshot: the streams serve the recording).
struct Source {
    snapshots: watch::Receiver<Arc<Snapshot>>,
    reloads: watch::Receiver<ReloadStatus>,
    watcher: Option<Watcher>,
    replay: Option<Arc<Replay>>,
}

impl Source {
    fn start(config: &Config, codec: &Codec, settings: Settings) -> Result<Self, Error> {
        let Some(path) = &config.replay else {
            let watcher = Watcher::start_with(config.fixtures.clone(), codec.clone(), settings)?;
            return Ok(Self {
                snapshots: watcher.snapshots.clone(),
                reloads: watcher.reloads.clone(),
                watcher: Some(watcher),
                replay: None,
            });
        };
        let script = replay::load(path, codec)?;
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

/// What the xDS port answers on the admin paths: the admin routes themselves, or a 404 saying
/// where they are.
fn xds_port_admin(
    placement: Placement,
    state: Admin,
    listener: Option<&AdminServer>,
) -> axum::Router {
    match (placement, listener) {
        (Placement::XdsPort, _) => state.router(),
        (_, Some(listener)) => admin::elsewhere(format!(
            "the admin routes are not on the xDS port: this server serves them on http://{}/ \
             (its --admin)",
            listener.addr()
        )),
        (_, None) => admin::elsewhere("this server runs with --admin off".to_string()),
    }
}

/// The bound addresses, once, for people and for harnesses that parse them (port 0 resolved).
fn log_listening(addr: SocketAddr, placement: Placement, admin: Option<SocketAddr>) {
    match (placement, admin) {
        (Placement::XdsPort, _) => {
            info!(%addr, "xDS listening on {addr} (admin: http://{addr}/status)");
            if !addr.ip().is_loopback() {
                warn!(
                    %addr,
                    "the admin routes (/status, /snapshot) are reachable from other hosts on the \
                     xDS port and have no authentication; --admin 127.0.0.1:PORT keeps them on \
                     loopback"
                );
            }
        }
        (_, Some(admin)) => info!(%addr, "xDS listening on {addr} (admin: http://{admin}/status)"),
        (_, None) => info!(%addr, "xDS listening on {addr} (admin off)"),
    }
}

/// The Envoy API plus the user's descriptor sets, naming the first file that fails.
pub fn codec(descriptor_sets: &[PathBuf]) -> Result<Codec, Error> {
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

/// How long a shutdown waits for connections to take their last responses before closing them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A running gRPC server. Dropping it stops the server without waiting; [`shutdown`] waits.
///
/// [`shutdown`]: GrpcServer::shutdown
#[derive(Debug)]
pub struct GrpcServer {
    addr: SocketAddr,
    registry: Registry,
    scenarios: Scenarios,
    health: ServingReporter,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
}

impl GrpcServer {
    /// The bound address (the real port when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Open streams and their per-type state.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The fault scenario its streams follow ([`Scenarios::set`] changes it at once).
    pub fn scenarios(&self) -> &Scenarios {
        &self.scenarios
    }

    /// Ends every stream, stops accepting, and waits for the server to finish.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        // Health watchers (load balancers, grpc_health_probe) hear it before streams end.
        self.health.not_serving().await;
        let _ = self.stop.send(true);
        let Some(mut task) = self.task.take() else {
            return Ok(());
        };
        // A graceful shutdown waits until every response handed to HTTP/2 is delivered; a
        // client that stopped reading would hold the server up forever.
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(e))) => Err(Error::Transport(e.to_string())),
            Ok(Err(e)) => Err(Error::Transport(e.to_string())),
            Err(_) => {
                task.abort();
                warn!(
                    grace = ?SHUTDOWN_GRACE,
                    "connections still had undelivered responses at shutdown (a client that stopped reading); closed them"
                );
                Ok(())
            }
        }
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Binds `listen` (port 0 picks a free port) and serves ADS (SotW and Delta) and the per-type
/// services from `snapshots`, with gRPC message limits of `max_message_bytes` both ways (S13),
/// REST-JSON on the same port, plus gRPC health checking and reflection. REST-JSON bodies
/// use the Envoy API only; [`serve_with_codec`] adds user types.
pub async fn serve(
    listen: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    max_message_bytes: usize,
) -> Result<GrpcServer, Error> {
    serve_with_codec(listen, snapshots, max_message_bytes, Codec::envoy()).await
}

/// [`serve`], writing REST-JSON resources with `codec` (the Envoy API plus the user's
/// `--descriptor-set` types).
pub async fn serve_with_codec(
    listen: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    max_message_bytes: usize,
    codec: Codec,
) -> Result<GrpcServer, Error> {
    let no_admin = Http {
        routes: axum::Router::new(),
        csds: None,
    };
    let server = bind(
        listen,
        snapshots,
        Registry::new(),
        Streams {
            max_message_bytes,
            conformance: Mode::Report,
            replay: None,
            scenarios: Scenarios::new(),
        },
        codec,
        no_admin,
    )
    .await?;
    let addr = server.addr();
    info!(%addr, "xDS listening on {addr} (ADS and per-type services: SotW, Delta, Fetch; REST-JSON)");
    Ok(server)
}

/// What the xDS port serves besides xDS: the admin routes (or what answers in their place),
/// on HTTP/1.1 and h2c alike, and CSDS when the admin is here.
struct Http {
    routes: axum::Router,
    csds: Option<Csds>,
}

/// How every xDS stream is served.
struct Streams {
    /// gRPC message limit, both directions (S13).
    max_message_bytes: usize,
    conformance: Mode,
    /// `--replay`: the recording every stream serves instead of the snapshots.
    replay: Option<Arc<Replay>>,
    /// The fault scenario streams follow.
    scenarios: Scenarios,
}

/// Binds the xDS port and serves gRPC and REST-JSON there, plus the `http` routes.
async fn bind(
    listen: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    registry: Registry,
    streams: Streams,
    codec: Codec,
    http: Http,
) -> Result<GrpcServer, Error> {
    let Streams {
        max_message_bytes,
        conformance,
        replay,
        scenarios,
    } = streams;
    let bind_error = |source| Error::Bind {
        addr: listen.to_string(),
        source,
    };
    let listener = TcpListener::bind(listen).await.map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    let (stop, stopped) = watch::channel(false);
    let fetcher = Fetcher::new(snapshots.clone());
    let discovery = Discovery::new(snapshots, registry.clone(), stopped.clone())
        .with_max_message_bytes(max_message_bytes)
        .with_conformance(conformance)
        .with_replay(replay)
        .with_scenarios(scenarios.subscribe());
    let per_type = PerType::new(discovery.clone(), fetcher.clone());
    let ads = Ads::new(discovery, max_message_bytes);
    let mut routes = tonic::service::Routes::builder();
    routes.add_service(ads);
    let mut xds_services = vec![ads_service_name()];
    xds_services.extend(per_type::add_to(&mut routes, per_type, max_message_bytes));
    if let Some(csds) = http.csds {
        routes.add_service(csds.service());
        xds_services.push(CSDS_SERVICE);
    }
    let health = introspection::add_to(&mut routes, &xds_services).await?;
    let http = Rest::new(fetcher, &codec).router().merge(http.routes);
    let routes = rest::with_grpc(routes.routes(), http);
    // xDS pushes are small writes that should leave at once, not wait for Nagle.
    let incoming = TcpListenerStream::new(listener).map(|conn| {
        if let Ok(stream) = &conn {
            let _ = stream.set_nodelay(true);
        }
        conn
    });
    let mut signal = stopped;
    let server = tonic::transport::Server::builder()
        // REST-JSON clients (Envoy's REST config source) and the admin routes speak HTTP/1.1;
        // gRPC keeps h2c.
        .accept_http1(true)
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = signal.wait_for(|stop| *stop).await;
        });
    let task = tokio::spawn(server);
    Ok(GrpcServer {
        addr,
        registry,
        scenarios,
        health,
        stop,
        task: Some(task),
    })
}

/// `envoy.service.discovery.v3.AggregatedDiscoveryService`, as health checks and reflection
/// name it.
fn ads_service_name() -> &'static str {
    ADS_SERVICE
}
