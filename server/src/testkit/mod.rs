//! A test server for Rust tests of xDS clients: the real server, in-process, on a free port,
//! serving resources given in code (or a fixture directory), with awaits for what a node did.
//!
//! ```no_run
//! # async fn demo(cluster: xdsloop_proto::Resource) -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use xdsloop_server::testkit::TestServer;
//!
//! let server = TestServer::builder().resources([cluster]).start().await?;
//! // ... point a client with node id "n1" at server.addr() ...
//! let ack = server.await_ack("n1", "cds", None, Duration::from_secs(5)).await?;
//! println!("n1 applied clusters at {}", ack.version);
//! # Ok(()) }
//! ```
//!
//! `docs/testkit.md` is the guide, with a complete example (compiled and run by `cargo test`).
//!
//! - [`Chain`]: a listener → route → cluster → endpoints set in one line;
//! - [`memory`]: the resources given in code (or fixture YAML: [`Resources::from_yaml`]) and
//!   how they become a snapshot;
//! - [`journal`]: every event of every stream since the server started;
//! - [`wait`]: the awaits, and what a timeout reports;
//! - [`poll_until`]: one bounded wait for any other condition;
//! - `faults`: the scenario (fault rules) in force, changed at runtime.

mod build;
mod faults;
pub mod journal;
pub mod memory;
mod poll;
mod start;
pub mod wait;

use std::{
    net::SocketAddr,
    ops::Deref,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use tokio::sync::watch;

use crate::judge::Violation;
use crate::tap::What;
use crate::{
    admin::registry::Registry,
    app::{GrpcServer, Running},
    protocol::facts::RequestFacts,
    snapshot::Snapshot,
};
pub use build::Chain;
use journal::Journal;
use memory::Memory;
pub use memory::Resources;
pub use poll::{Probe, poll_until};
pub use start::Builder;
pub use wait::{Ack, Mark, Nack, WaitError};
use wait::{Found, Query, Want};
/// One encoded resource to serve: `Resource::from_message(&cluster)`, or built by hand (with
/// bytes a client cannot decode, to make it NACK).
pub use xdsloop_proto::Resource;

/// Why a test server could not start or change what it serves.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    /// The server could not start (bind, fixtures): the server's own error.
    #[error(transparent)]
    Server(#[from] crate::error::Error),
    #[error("{}: two {type_url} resources named {name:?} in one set", match node {
        Some(node) => format!("node {node}"),
        None => "base".to_string(),
    })]
    /// Two resources of one type with one name in one set.
    Duplicate {
        /// The node the set is for; `None`: the base set every node gets.
        node: Option<String>,
        /// The type URL.
        type_url: String,
        /// The name given twice.
        name: String,
    },
    #[error(
        "this test server serves the fixture directory {}: change its files to change what it \
         serves",
        .0.display()
    )]
    /// Resources given in code to a server that serves a fixture directory (the directory).
    ServesFixtures(PathBuf),
    /// The builder was given both resources and a fixture directory.
    #[error("a test server serves either resources given in code or a fixture directory, not both")]
    TwoSources,
    /// [`Builder::configure`] or [`Builder::tls`] on a server of resources given in code.
    #[error(
        "`configure` and `tls` change how a fixture directory is served: start the server with \
         `.fixtures(dir)`"
    )]
    ConfigNeedsFixtures,
    /// A [`TestServer::write_fixture`] the server did not take in time.
    #[error(transparent)]
    Wait(#[from] WaitError),
    /// [`TestServer::write_fixture`] on a server of resources given in code.
    #[error("this test server serves resources given in code: `set_resources` changes them")]
    ServesResources,
    /// A fixture file [`TestServer::write_fixture`] could not write.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A scenario that breaks a rule (`rules[0] (id): what is wrong`, as for a scenario file);
    /// the one in force stays.
    #[error("scenario refused: {0}")]
    Scenario(String),
}

/// A running test server. Dropping it stops it; [`TestServer::shutdown`] waits until it has.
#[derive(Debug)]
pub struct TestServer {
    backing: Backing,
    journal: Arc<Journal>,
}

/// What serves a test server's resources: a snapshot source fed from code, or the whole server
/// as the binary runs it, over a fixture directory.
#[derive(Debug)]
// One per test server, never in a collection: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Backing {
    Memory {
        server: GrpcServer,
        source: watch::Sender<Arc<Snapshot>>,
        memory: Mutex<Memory>,
    },
    Fixtures {
        running: Running,
        dir: PathBuf,
    },
}

/// A request of one node, as the server received and judged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The stream it came on.
    pub stream: u64,
    /// When the server received it.
    pub at: SystemTime,
    /// What it said, as the server judged it: type, ACK/NACK verdict, nonce, names.
    pub facts: RequestFacts,
}

/// The requests of one node so far, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Requests {
    /// The requests.
    pub list: Vec<Request>,
    /// The server lost track of some events (see [`journal::MAX_EVENTS`]): requests may be
    /// missing.
    pub incomplete: bool,
}

impl Deref for Requests {
    type Target = [Request];
    fn deref(&self) -> &[Request] {
        &self.list
    }
}

impl TestServer {
    /// A server on `127.0.0.1:0` with no resources, admin routes off.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Where it listens (the port it was given).
    pub fn addr(&self) -> SocketAddr {
        match &self.backing {
            Backing::Memory { server, .. } => server.addr(),
            Backing::Fixtures { running, .. } => running.addr,
        }
    }

    /// Open streams and their per-type state, as `/status` shows them.
    pub fn registry(&self) -> &Registry {
        match &self.backing {
            Backing::Memory { server, .. } => server.registry(),
            Backing::Fixtures { running, .. } => &running.registry,
        }
    }

    /// What it serves now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        match &self.backing {
            Backing::Memory { source, .. } => source.borrow().clone(),
            Backing::Fixtures { running, .. } => running.snapshots.borrow().clone(),
        }
    }

    /// The whole server over a fixture directory, as `xdsloop-server` runs it: its reload
    /// status, its admin listener, its snapshots as they change. `None` for resources given in
    /// code.
    pub fn running(&self) -> Option<&Running> {
        match &self.backing {
            Backing::Memory { .. } => None,
            Backing::Fixtures { running, .. } => Some(running),
        }
    }

    /// The fixture directory it serves, if it serves one.
    pub fn fixture_dir(&self) -> Option<&Path> {
        match &self.backing {
            Backing::Memory { .. } => None,
            Backing::Fixtures { dir, .. } => Some(dir),
        }
    }

    /// Writes `text` to `file` (relative to the fixture directory) and waits until the server
    /// serves the result: the edit must change what is served. A rejected edit (the server
    /// keeps the last good snapshot) times out naming the reload error.
    pub async fn write_fixture(
        &self,
        file: impl AsRef<Path>,
        text: &str,
        timeout: Duration,
    ) -> Result<Arc<Snapshot>, KitError> {
        let (running, dir) = match &self.backing {
            Backing::Memory { .. } => return Err(KitError::ServesResources),
            Backing::Fixtures { running, dir } => (running, dir),
        };
        let path = dir.join(file.as_ref());
        let before = running.snapshots.borrow().generation;
        let reloads_before = running.reloads.borrow().started;
        std::fs::write(&path, text).map_err(|source| KitError::Write {
            path: path.clone(),
            source,
        })?;
        let what = format!("the edit of {} to be served", path.display());
        let snapshot = poll_until(&what, timeout, async || {
            let now = running.snapshots.borrow().clone();
            if now.generation > before {
                return Ok(now);
            }
            let reload = running.reloads.borrow().clone();
            match (reload.started > reloads_before, reload.error) {
                (true, Some(error)) => Err(format!("the reload was rejected: {error}")),
                _ => Err("no reload yet".to_string()),
            }
        })
        .await?;
        Ok(snapshot)
    }

    /// The SotW version of `type_name` (`cds` or a type URL) that `node` is served now.
    pub fn version(&self, node: &str, type_name: &str) -> Option<String> {
        let type_url = wait::resolve(type_name);
        let snapshot = self.snapshot();
        snapshot.get(node, &type_url).map(|t| t.version.clone())
    }

    /// Replaces the resources every node gets (`node` = `None`) or one node's overlay (an
    /// empty set removes it). Streams push the difference as they would after a fixture edit.
    pub fn set_resources(
        &self,
        node: Option<&str>,
        resources: impl Into<Resources>,
    ) -> Result<Arc<Snapshot>, KitError> {
        let (source, memory) = match &self.backing {
            Backing::Memory { source, memory, .. } => (source, memory),
            Backing::Fixtures { dir, .. } => return Err(KitError::ServesFixtures(dir.clone())),
        };
        let mut memory = memory.lock().unwrap_or_else(|e| e.into_inner());
        let snapshot = Arc::new(memory.set(node, resources.into())?);
        source.send_replace(snapshot.clone());
        Ok(snapshot)
    }

    /// Now, as a point awaits can start from ([`TestServer::since`]).
    pub fn mark(&self) -> Mark {
        Mark(self.journal.read(|kept| kept.events.len()))
    }

    /// Awaits that look only at what happened after `mark`.
    pub fn since(&self, mark: Mark) -> Since<'_> {
        Since { server: self, mark }
    }

    /// Waits until `node` ACKed `type_name` (`cds`, or a type URL), at `version` if given, on
    /// any of its streams since the server started (an ACK before the call counts).
    pub async fn await_ack(
        &self,
        node: &str,
        type_name: &str,
        version: Option<&str>,
        timeout: Duration,
    ) -> Result<Ack, WaitError> {
        self.since(Mark(0))
            .await_ack(node, type_name, version, timeout)
            .await
    }

    /// Waits until `node` NACKed `type_name` on any of its streams since the server started.
    pub async fn await_nack(
        &self,
        node: &str,
        type_name: &str,
        timeout: Duration,
    ) -> Result<Nack, WaitError> {
        self.since(Mark(0))
            .await_nack(node, type_name, timeout)
            .await
    }

    /// Waits until the conformance judge finds `node` breaking one of the client rules of
    /// docs/protocol.md (a node that never named itself cannot be awaited: C1).
    pub async fn await_violation(
        &self,
        node: &str,
        timeout: Duration,
    ) -> Result<Violation, WaitError> {
        self.since(Mark(0)).await_violation(node, timeout).await
    }

    /// Every request `node` sent so far, on all its streams, oldest first.
    pub fn requests(&self, node: &str) -> Requests {
        self.journal.read(|kept| Requests {
            list: kept
                .events
                .iter()
                .filter(|e| e.node.as_deref() == Some(node))
                .filter_map(|e| match &e.what {
                    What::Request(facts) => Some(Request {
                        stream: e.stream,
                        at: e.at,
                        facts: (**facts).clone(),
                    }),
                    _ => None,
                })
                .collect(),
            incomplete: !kept.complete(),
        })
    }

    /// What the conformance judge found so far, on every stream.
    pub fn violations(&self) -> Vec<Violation> {
        self.journal.read(|kept| {
            let found = kept.events.iter().filter_map(|e| match &e.what {
                What::Violation(v) => Some((**v).clone()),
                _ => None,
            });
            found.collect()
        })
    }

    /// Ends every stream and stops the server.
    pub async fn shutdown(self) -> Result<(), KitError> {
        match self.backing {
            Backing::Memory { server, .. } => server.shutdown().await?,
            Backing::Fixtures { running, .. } => running.shutdown().await?,
        }
        Ok(())
    }
}

/// Awaits that look only at what happened after a [`Mark`].
#[derive(Debug, Clone, Copy)]
pub struct Since<'a> {
    server: &'a TestServer,
    mark: Mark,
}

impl Since<'_> {
    /// [`TestServer::await_ack`], counting only ACKs after the mark.
    pub async fn await_ack(
        &self,
        node: &str,
        type_name: &str,
        version: Option<&str>,
        timeout: Duration,
    ) -> Result<Ack, WaitError> {
        match self
            .wait(node, type_name, Want::Ack(version), timeout)
            .await?
        {
            Found::Ack(ack) => Ok(ack),
            _ => unreachable!("an ACK query finds ACKs"),
        }
    }

    /// [`TestServer::await_nack`], counting only NACKs after the mark.
    pub async fn await_nack(
        &self,
        node: &str,
        type_name: &str,
        timeout: Duration,
    ) -> Result<Nack, WaitError> {
        match self.wait(node, type_name, Want::Nack, timeout).await? {
            Found::Nack(nack) => Ok(nack),
            _ => unreachable!("a NACK query finds NACKs"),
        }
    }

    /// [`TestServer::await_violation`], counting only violations after the mark.
    pub async fn await_violation(
        &self,
        node: &str,
        timeout: Duration,
    ) -> Result<Violation, WaitError> {
        match self.wait(node, "", Want::Violation, timeout).await? {
            Found::Violation(violation) => Ok(*violation),
            _ => unreachable!("a violation query finds violations"),
        }
    }

    async fn wait(
        &self,
        node: &str,
        type_name: &str,
        want: Want<'_>,
        timeout: Duration,
    ) -> Result<Found, WaitError> {
        let type_url = match type_name {
            "" => String::new(),
            name => wait::resolve(name),
        };
        let query = Query {
            node,
            type_url: &type_url,
            want,
            from: self.mark,
        };
        let server = self.server;
        wait::wait(&server.journal, server.registry(), query, timeout).await
    }
}
