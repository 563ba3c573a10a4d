//! Starting a test server: what it serves, where it listens.

use std::{
    fmt,
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use tokio::sync::watch;

use super::{Backing, KitError, Resources, TestServer, journal::Journal, memory::Memory};
use crate::{
    admin::{
        Placement,
        registry::{Registry, timeline},
    },
    app::{self, serve_in_process},
    faults::scenario::{Scenario, Scenarios},
    judge::Mode,
    net::tls::TlsFiles,
    transport::discovery::DEFAULT_MAX_MESSAGE_BYTES,
};

/// How a [`TestServer`] starts. By default: on `127.0.0.1:0`, serving nothing, no admin routes.
#[derive(Debug, Clone)]
pub struct Builder {
    listen: SocketAddr,
    base: Option<Resources>,
    overlays: Vec<(String, Resources)>,
    fixtures: Option<PathBuf>,
    max_message_bytes: usize,
    admin: bool,
    conformance: Mode,
    scenario: Option<Scenario>,
    edits: Vec<ConfigEdit>,
}

/// A change to a fixture server's configuration ([`Builder::configure`]).
#[derive(Clone)]
struct ConfigEdit(Arc<dyn Fn(&mut app::Config) + Send + Sync>);

impl fmt::Debug for ConfigEdit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ConfigEdit(..)")
    }
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            base: None,
            overlays: Vec::new(),
            fixtures: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            admin: false,
            conformance: Mode::Report,
            scenario: None,
            edits: Vec::new(),
        }
    }
}

impl Builder {
    /// What every node is served (see [`TestServer::set_resources`]).
    pub fn resources(mut self, resources: impl Into<Resources>) -> Self {
        self.base = Some(resources.into());
        self
    }

    /// What `node` is served over the base set: same-named resources replace base ones.
    pub fn node_resources(mut self, node: &str, resources: impl Into<Resources>) -> Self {
        self.overlays.push((node.to_string(), resources.into()));
        self
    }

    /// Serves a fixture directory instead, watched and reloaded as `xdsloop-server` does.
    pub fn fixtures(mut self, dir: impl Into<PathBuf>) -> Self {
        self.fixtures = Some(dir.into());
        self
    }

    /// Listens on `addr`: the address of a server stopped earlier, to test a reconnect.
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// The gRPC message limit, both ways (S13).
    pub fn max_message_bytes(mut self, limit: usize) -> Self {
        self.max_message_bytes = limit;
        self
    }

    /// Serves the admin routes (`/status`, `/snapshot`, ...) on the xDS port, with each
    /// stream's last events, as `xdsloop-server` does by default.
    pub fn admin(mut self) -> Self {
        self.admin = true;
        self
    }

    /// How clients are judged against the client rules of docs/protocol.md: `Report` (the
    /// default: [`TestServer::violations`] lists what the judge found), `Strict` (the first
    /// violation also ends the stream with FAILED_PRECONDITION), or `Off`.
    pub fn conformance(mut self, mode: Mode) -> Self {
        self.conformance = mode;
        self
    }

    /// Starts with these fault rules in force (see [`TestServer::set_scenario`]); a scenario
    /// that breaks a rule fails [`Builder::start`] with [`KitError::Scenario`].
    pub fn scenario(mut self, scenario: Scenario) -> Self {
        self.scenario = Some(scenario);
        self
    }

    /// Fixture servers only: changes the configuration the way `xdsloop-server`'s flags would
    /// (debounce, limits, secrets, `--record`, `--replay`, `--scenario` files, an admin
    /// listener of its own, ...), after the builder's own settings. Edits apply in order.
    pub fn configure(mut self, edit: impl Fn(&mut app::Config) + Send + Sync + 'static) -> Self {
        self.edits.push(ConfigEdit(Arc::new(edit)));
        self
    }

    /// Fixture servers only: serves xDS (and the admin routes) over TLS with these files; with
    /// a `client_ca`, only to clients presenting a certificate it signed (mTLS). The files are
    /// watched: a rotated certificate is served to new connections.
    pub fn tls(self, files: TlsFiles) -> Self {
        self.configure(move |config| config.tls = Some(files.clone()))
    }

    /// Starts the server, on a free port unless [`Builder::listen`] gave one, serving what the
    /// builder was given (resources and a fixture directory together are [`KitError::TwoSources`]).
    pub async fn start(self) -> Result<TestServer, KitError> {
        let has_resources = self.base.is_some() || !self.overlays.is_empty();
        match self.fixtures.clone() {
            Some(_) if has_resources => Err(KitError::TwoSources),
            None if !self.edits.is_empty() => Err(KitError::ConfigNeedsFixtures),
            Some(dir) => self.start_fixtures(dir).await,
            None => self.start_memory().await,
        }
    }

    async fn start_memory(self) -> Result<TestServer, KitError> {
        let mut memory = Memory::default();
        let mut snapshot = memory.set(None, self.base.unwrap_or_default())?;
        for (node, resources) in self.overlays {
            snapshot = memory.set(Some(&node), resources)?;
        }
        let (source, snapshots) = watch::channel(Arc::new(snapshot));
        // Nobody reads a timeline without admin routes.
        let depth = if self.admin {
            timeline::DEFAULT_DEPTH
        } else {
            0
        };
        let registry = Registry::with_timeline_depth(depth);
        let journal = Journal::start(&registry);
        let scenarios = Scenarios::new();
        if let Some(scenario) = self.scenario {
            scenarios.set(scenario).map_err(KitError::Scenario)?;
        }
        let (limit, admin, mode) = (self.max_message_bytes, self.admin, self.conformance);
        let server = serve_in_process(
            self.listen,
            snapshots,
            registry,
            scenarios,
            limit,
            admin,
            mode,
        )
        .await?;
        let memory = Mutex::new(memory);
        Ok(TestServer {
            backing: Backing::Memory {
                server,
                source,
                memory,
            },
            journal,
        })
    }

    async fn start_fixtures(self, dir: PathBuf) -> Result<TestServer, KitError> {
        let mut config = app::Config::new(&dir);
        config.listen = self.listen;
        config.max_message_bytes = self.max_message_bytes;
        config.conformance = self.conformance;
        config.admin = match self.admin {
            true => Placement::XdsPort,
            false => Placement::Off,
        };
        for edit in &self.edits {
            (edit.0)(&mut config);
        }
        let running = app::start(config).await?;
        // Streams opened before these lines (only possible on a fixed `listen` address that a
        // client was already dialling) are not in the journal, and may start without the
        // scenario.
        let journal = Journal::start(&running.registry);
        if let Some(scenario) = self.scenario {
            running
                .scenarios
                .set(scenario)
                .map_err(KitError::Scenario)?;
        }
        Ok(TestServer {
            backing: Backing::Fixtures { running, dir },
            journal,
        })
    }
}
