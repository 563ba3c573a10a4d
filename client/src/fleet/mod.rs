//! Fleet mode: N simulated Envoy-like nodes against any ADS server, spread over M HTTP/2
//! connections, with a report of who got which version and how fast.
//!
//! **A deliberate second implementation of the client protocol.** The library's client
//! (`crate::core::mux` behind [`crate::Client`]) decodes every resource, keeps what it applied
//! and delivers typed events: right for one client, too heavy for thousands of them in one
//! process, where the load generator must cost less than the server it measures. So a fleet
//! node is its own small sans-I/O state machine (`node`) that reads responses in place
//! (`decode`: slices of the received HTTP/2 chunks, no message built), only as deep as
//! names, versions and the fields naming dependents; keeps names and versions, never
//! resources; shares dependent-name lists fleet-wide (`names`); and sends pre-encoded
//! requests on raw ADS streams (`streams`, `outgoing`).
//!
//! What it shares with the library: the vocabulary (`crate::config`: `Variant`, limits,
//! `BackoffConfig`), the request type ([`crate::core::request::Outgoing`]) and NACK detail
//! (`crate::core::request::nack_detail`), the reconnect `crate::transport::backoff`, which
//! type's names another type drives (`crate::core::deps::child_of`), and the wire constants
//! and ADS paths of `xdsloop_proto`. The tests in `fleet/tests.rs` give both implementations
//! the same responses and require the same dependent names (C12) and the same ACK/NACK
//! verdicts (C6).
//!
//! Where it knowingly answers differently: it checks a response's shape (resource types,
//! names, duplicates, a Delta name both added and removed, `--nack`) but decodes a resource
//! only as far as it reads it, so a resource malformed beyond its name and dependents, or a
//! Delta resource whose body names another resource than its envelope, is ACKed where the
//! library NACKs (`the_fleet_reads_only_what_it_follows_by_design`); and it speaks ADS only.
//! It stays in this crate because `xdsloop-client fleet` is a subcommand of this binary: a
//! fleet crate would need this crate's vocabulary while this binary needs the fleet.
//!
//! Layout:
//! - `decode`: just enough of the wire format, read in place (SotW responses, clusters) or
//!   with prost messages that carry only the fields the fleet reads (Delta, listeners).
//! - `inspect`: one resource → its name and the dependent names it needs.
//! - `names`: the dependent-name lists, shared by the nodes that want the same ones.
//! - `node`: one node's SotW/Delta state (sans-I/O): subscribe, ACK/NACK, follow CDS → EDS
//!   and LDS → RDS; `outgoing`: its requests, name lists encoded once.
//! - `node_task`: one node's stream loop with reconnects.
//! - `streams`: shared connections and raw-bytes ADS streams.
//! - `tally`: shared counts; [`report`]: percentiles, text, JSON, progress line.
//! - `shard`: which of a run's nodes one process simulates; `samples`: the
//!   machine-readable report with every raw sample; `consistency`: what a report must hold
//!   to be one a fleet could have written; `merge`: shards' reports as one.
//! - [`command`]: `xdsloop-client fleet ...` and `xdsloop-client fleet merge ...`.
//!
//! A node's ids are `<prefix>0 .. <prefix>(N-1)` over the whole run, whichever shard simulates
//! it; the `i`-th node of a shard uses that shard's connection `i % M`.

pub mod command;
pub(crate) mod consistency;
pub(crate) mod decode;
pub(crate) mod inspect;
pub(crate) mod merge;
pub(crate) mod names;
pub(crate) mod node;
pub(crate) mod node_task;
pub(crate) mod outgoing;
pub mod report;
pub(crate) mod samples;
pub(crate) mod shard;
pub(crate) mod streams;
pub(crate) mod tally;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use xdsloop_proto::type_url;

use self::node::{Node, Rules};
use self::node_task::NodeTask;
use self::report::FleetReport;
use self::samples::{Coverage, RunIdentity, RunReport};
use self::shard::Shard;
use self::tally::Tally;
use crate::config::DEFAULT_MAX_MESSAGE_BYTES;
use crate::config::{ClientTls, Variant};
use crate::core::deps;
use crate::error::ClientError;

/// Connections when none are asked for: enough to use several cores on both ends, few enough
/// that each carries many streams, as a real fleet behind a few proxies would.
pub const DEFAULT_CONNECTIONS: usize = 8;

/// How to run a fleet.
#[derive(Clone, Debug)]
pub struct FleetConfig {
    /// The server, `host:port` or a URI.
    pub server: String,
    /// The run's nodes, over all shards.
    pub nodes: usize,
    /// The part of the run's nodes this fleet simulates (`Shard::WHOLE`: all).
    pub shard: Shard,
    /// Node ids are this prefix and a number.
    pub node_prefix: String,
    /// SotW or Delta (ADS either way).
    pub mode: Variant,
    /// HTTP/2 connections the nodes share (`nodes` = one each).
    pub connections: usize,
    /// Type URLs; EDS needs CDS and RDS needs LDS (their names come from those).
    pub types: Vec<String>,
    /// `(type URL, name)`: every node NACKs responses holding that resource.
    pub nack: Vec<(String, String)>,
    /// gRPC message limit, both directions.
    pub max_message_bytes: usize,
    /// How long a connection attempt may take.
    pub connect_timeout: Duration,
    /// TLS (and mTLS) toward the server; `None`: plaintext.
    pub tls: Option<ClientTls>,
}

impl FleetConfig {
    /// `nodes` SotW nodes subscribing CDS and EDS, on [`DEFAULT_CONNECTIONS`] connections.
    pub fn new(server: impl Into<String>, nodes: usize) -> Self {
        Self {
            server: server.into(),
            nodes,
            shard: Shard::WHOLE,
            node_prefix: "fleet-".into(),
            mode: Variant::Sotw,
            connections: DEFAULT_CONNECTIONS.min(nodes).max(1),
            types: vec![type_url::CLUSTER.into(), type_url::ENDPOINT.into()],
            nack: Vec::new(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            connect_timeout: Duration::from_secs(5),
            tls: None,
        }
    }

    /// Who the run is, for its reports; `types` as subscribed.
    fn identity(&self, types: &[String]) -> RunIdentity {
        RunIdentity {
            server: self.server.clone(),
            nodes: self.nodes,
            node_prefix: self.node_prefix.clone(),
            mode: match self.mode {
                Variant::Sotw => "sotw",
                Variant::Delta => "delta",
            }
            .into(),
            types: types.to_vec(),
            nack: (self.nack.iter())
                .map(|(t, n)| format!("{t}:{n}"))
                .collect(),
            start_at_unix_ms: None,
            duration_ms: None,
        }
    }

    fn rules(&self) -> Result<Rules, ClientError> {
        let has = |t: &str| self.types.iter().any(|x| x == t);
        for parent in type_url::ORDERED.iter().map(|(_, url)| *url) {
            let child = deps::child_of(parent).filter(|child| has(child));
            if let Some(child) = child
                && !has(parent)
            {
                return Err(ClientError::Argument(format!(
                    "fleet: {} needs {} (its names come from there)",
                    type_url::short_name(child),
                    type_url::short_name(parent)
                )));
            }
        }
        if self.nodes == 0 || self.types.is_empty() {
            return Err(ClientError::Argument(
                "fleet: needs at least one node and one type".into(),
            ));
        }
        if self.shard.range(self.nodes).is_empty() {
            return Err(ClientError::Argument(format!(
                "fleet: shard {} of {} nodes has no node (more shards than nodes)",
                self.shard, self.nodes
            )));
        }
        let mut types = self.types.clone();
        // Parents first, as Envoy does: CDS, then LDS; others after.
        types.sort_by_key(|t| (type_url::order(t), t.clone()));
        types.dedup();
        Ok(Rules {
            mode: self.mode,
            types,
            nack: self.nack.clone(),
            names: Default::default(),
        })
    }
}

/// A running fleet. Dropping it stops the nodes.
#[derive(Debug)]
pub struct Fleet {
    tally: Arc<Tally>,
    coverage: Coverage,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl Fleet {
    /// Starts every node of the shard at once. Must be called inside a Tokio runtime.
    pub fn start(config: FleetConfig) -> Result<Fleet, ClientError> {
        let rules = Arc::new(config.rules()?);
        let range = config.shard.range(config.nodes);
        let connections = config.connections.clamp(1, range.len());
        let tls = config.tls.as_ref();
        let channels = streams::connect(&config.server, connections, config.connect_timeout, tls)?;
        let tls = config.tls.clone().map(Arc::new);
        let tally = Arc::new(Tally::new(range.len()));
        let (stop, stopped) = watch::channel(false);
        let mut tasks = JoinSet::new();
        for (index, node) in range.enumerate() {
            let id = format!("{}{node}", config.node_prefix);
            let task = NodeTask {
                index,
                node: Node::new(id, rules.clone()),
                channel: channels[index % channels.len()].clone(),
                mode: config.mode,
                max_message_bytes: config.max_message_bytes,
                tally: tally.clone(),
                stop: stopped.clone(),
                tls: tls.clone(),
            };
            tasks.spawn(task.run());
        }
        let coverage = Coverage {
            run: config.identity(&rules.types),
            shard: config.shard,
            connections,
            origin: tally.origin,
        };
        Ok(Fleet {
            tally,
            coverage,
            stop,
            tasks,
        })
    }

    /// Everything so far, with percentiles.
    pub fn report(&self) -> FleetReport {
        self.tally
            .read(|counts| FleetReport::build(&self.coverage, counts))
    }

    /// Everything so far with every raw sample: what `fleet --report` writes and `fleet
    /// merge` reads. `edit` sets what the fleet does not know (`--start-at`, `--duration`).
    pub fn run_report(&self, edit: impl FnOnce(&mut RunIdentity)) -> RunReport {
        let mut coverage = self.coverage.clone();
        edit(&mut coverage.run);
        // The end read under the lock: no sample recorded before it lies after it.
        self.tally
            .read(|counts| RunReport::from_counts(&coverage, counts, std::time::Instant::now()))
    }

    /// Cheap counters, for waits and progress.
    pub fn progress(&self) -> Progress {
        self.tally.read(|c| Progress {
            streams_open: c.streams_open,
            configured: c.configured_nodes,
            nacks: c.nacks,
            reconnects: c.reconnects,
            responses: c.responses,
            bytes: c.bytes,
            versions: (c.versions.iter())
                .map(|((url, version), v)| (url.clone(), version.clone(), v.holding, v.nacks))
                .collect(),
        })
    }

    /// Waits until `done` holds for the progress, re-checking on every recorded change.
    /// `Err` carries the last progress seen when `timeout` ran out.
    pub async fn wait_until(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&Progress) -> bool,
    ) -> Result<Progress, Progress> {
        let mut changes = self.tally.subscribe();
        let wait = async {
            loop {
                changes.borrow_and_update();
                let progress = self.progress();
                if done(&progress) {
                    return progress;
                }
                if changes.changed().await.is_err() {
                    return progress;
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| self.progress())
    }

    /// Stops every node (closing its stream) and returns the final report.
    pub async fn stop(self) -> FleetReport {
        self.stopped().await.report()
    }

    /// Stops every node; the fleet is then read only.
    pub async fn stopped(mut self) -> Self {
        let _ = self.stop.send(true);
        while self.tasks.join_next().await.is_some() {}
        self
    }
}

/// The fleet's counters at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    /// Streams open now.
    pub streams_open: usize,
    /// Nodes that hold every type they asked for (at least once).
    pub configured: usize,
    /// NACKs sent.
    pub nacks: u64,
    /// Reconnections.
    pub reconnects: u64,
    /// Responses received.
    pub responses: u64,
    /// Bytes received.
    pub bytes: u64,
    /// `(type URL, version, nodes holding it, NACKs of it)`.
    pub versions: Vec<(String, String, usize, u64)>,
}

impl Progress {
    /// Nodes holding `version` of `type_url`.
    pub fn holding(&self, type_url: &str, version: &str) -> usize {
        (self.versions.iter())
            .find(|(u, v, _, _)| u == type_url && v == version)
            .map_or(0, |(_, _, holding, _)| *holding)
    }

    /// The version of `type_url` that most nodes hold, and how many hold it.
    pub fn majority(&self, type_url: &str) -> Option<(&str, usize)> {
        (self.versions.iter())
            .filter(|(u, _, _, _)| u == type_url)
            .max_by_key(|(_, _, holding, _)| *holding)
            .map(|(_, v, holding, _)| (v.as_str(), *holding))
    }
}
