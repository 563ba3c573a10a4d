//! The fleet's report: percentiles over the tally, as text or JSON, and the progress line.

use std::fmt::Write as _;
use std::time::Instant;

use serde::Serialize;
use xdsloop_proto::type_url;

use super::samples::{Coverage, RunReport};
use super::shard::Shard;
use super::tally::{Arrival, Counts};

/// Count and nearest-rank percentiles of a set of durations, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// How many samples.
    pub count: usize,
    /// The median, in milliseconds.
    pub p50_ms: f64,
    /// The 99th percentile, in milliseconds.
    pub p99_ms: f64,
    /// The largest, in milliseconds.
    pub max_ms: f64,
}

impl Stats {
    /// From whole microseconds (the unit of the raw samples, so the percentiles of a merged
    /// report are exactly those of all its shards' samples together).
    pub fn of(mut micros: Vec<u64>) -> Self {
        if micros.is_empty() {
            return Self::default();
        }
        micros.sort_unstable();
        let rank = |p: f64| {
            let index = ((p * micros.len() as f64).ceil() as usize).clamp(1, micros.len());
            micros[index - 1] as f64 / 1000.0
        };
        Self {
            count: micros.len(),
            p50_ms: rank(0.50),
            p99_ms: rank(0.99),
            max_ms: rank(1.0),
        }
    }

    fn text(&self) -> String {
        if self.count == 0 {
            return "-".into();
        }
        format!(
            "{}/{}/{}",
            ms(self.p50_ms),
            ms(self.p99_ms),
            ms(self.max_ms)
        )
    }
}

fn ms(value: f64) -> String {
    if value < 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

/// One (type, version) row.
#[derive(Clone, Debug, Serialize)]
pub struct VersionReport {
    /// The type's short name (`cds`, ...).
    #[serde(rename = "type")]
    pub short_type: String,
    /// The full type URL.
    pub type_url: String,
    /// The version.
    pub version: String,
    /// Nodes that ACKed it.
    pub nodes: usize,
    /// Nodes holding it now.
    pub holding: usize,
    /// Nodes that NACKed it.
    pub nacks: u64,
    /// One NACK's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nack_error: Option<String>,
    /// Nodes for which it was their first version: connection attempt → ACK.
    pub first_config: Stats,
    /// Nodes that moved to it from an older version: first sighting on any node → ACK.
    pub converge: Stats,
    /// Responses of it received.
    pub responses: u64,
    /// Bytes of it received.
    pub bytes: u64,
    /// When it was first seen.
    #[serde(skip)]
    pub first_seen: Option<Instant>,
    /// When each node that changed to it ACKed it, with the node's index (for callers measuring
    /// from their own origin, e.g. the moment a fixture was written, across several types).
    #[serde(skip)]
    pub change_acks: Vec<(usize, Instant)>,
}

/// The `schema` of the summary `fleet --output json` and `fleet merge --output json` print
/// (docs/contracts.md); the raw report of `--report` has a format of its own.
pub const SUMMARY_SCHEMA: &str = "xdsloop.fleet-summary.v1";

/// The whole fleet (or one shard of it, or the merge of a run's shards) at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct FleetReport {
    /// [`SUMMARY_SCHEMA`]: what a reader of the JSON may rely on.
    pub schema: &'static str,
    /// Nodes this report covers.
    pub nodes: usize,
    /// Which part of a sharded run, e.g. `shard 1/4 of 10000 nodes`; absent for a whole run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<String>,
    /// `sotw` or `delta`.
    pub mode: String,
    /// Nodes run.
    pub connections: usize,
    /// How long the run took, in milliseconds.
    pub elapsed_ms: f64,
    /// Streams open at the end.
    pub streams_open: usize,
    /// Nodes holding every type they asked for.
    pub configured: usize,
    /// Connection attempt → every type held, per node.
    pub first_config: Stats,
    /// NACKs sent.
    pub nacks: u64,
    /// Reconnections.
    pub reconnects: u64,
    /// Streams that failed.
    pub stream_failures: u64,
    /// Responses received.
    pub responses: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Resources that could not be decoded.
    pub undecodable: u64,
    /// The last error seen, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Each version seen, per type.
    pub versions: Vec<VersionReport>,
}

impl FleetReport {
    /// The report of a running fleet: the summary of its `RunReport`, plus the instants
    /// in-process callers measure from.
    pub fn build(coverage: &Coverage, counts: &Counts) -> Self {
        let run = RunReport::from_counts(coverage, counts, Instant::now());
        let mut report = Self::summarize(&run);
        for v in &mut report.versions {
            let key = (v.type_url.clone(), v.version.clone());
            let Some(tally) = counts.versions.get(&key) else {
                continue;
            };
            v.first_seen = Some(tally.first_seen);
            v.change_acks = (tally.acks.iter())
                .filter(|a| a.arrival == Arrival::Change)
                .map(|a| (a.node as usize, a.at))
                .collect();
        }
        report
    }

    /// Percentiles and counts of a report's raw samples (one shard's, or a merged run's).
    pub fn summarize(run: &RunReport) -> Self {
        let first_config: Vec<u64> = run.first_config_us.iter().flatten().copied().collect();
        let mut versions: Vec<(u64, VersionReport)> = (run.versions.iter())
            .map(|v| {
                let converge = (v.change.us.iter()).map(|us| us.saturating_sub(v.first_seen_us));
                let row = VersionReport {
                    short_type: type_url::short_name(&v.type_url).to_string(),
                    type_url: v.type_url.clone(),
                    version: v.version.clone(),
                    nodes: v.first.len() + v.change.len(),
                    holding: v.holding,
                    nacks: v.nacks,
                    nack_error: v.nack_error.clone(),
                    first_config: Stats::of(v.first.us.clone()),
                    converge: Stats::of(converge.collect()),
                    responses: v.responses,
                    bytes: v.bytes,
                    first_seen: None,
                    change_acks: Vec::new(),
                };
                (v.first_seen_us, row)
            })
            .collect();
        versions.sort_by(|(a_seen, a), (b_seen, b)| {
            let key =
                |v: &VersionReport, seen| (type_url::order(&v.type_url), v.type_url.clone(), seen);
            key(a, a_seen).cmp(&key(b, b_seen))
        });
        let nodes = run.first_config_us.len();
        let shards = match &run.shards[..] {
            [one] if *one == Shard::WHOLE => None,
            [one] => Some(format!("shard {one} of {} nodes", run.run.nodes)),
            all => Some(format!("{} shards merged", all.len())),
        };
        Self {
            schema: SUMMARY_SCHEMA,
            nodes,
            shards,
            mode: run.run.mode.clone(),
            connections: run.totals.connections,
            elapsed_ms: run.ended_us as f64 / 1000.0,
            streams_open: run.totals.streams_open,
            configured: first_config.len(),
            first_config: Stats::of(first_config),
            nacks: run.totals.nacks,
            reconnects: run.totals.reconnects,
            stream_failures: run.totals.stream_failures,
            responses: run.totals.responses,
            bytes_received: run.totals.bytes,
            undecodable: run.totals.undecodable,
            last_error: run.last_error.clone(),
            versions: versions.into_iter().map(|(_, v)| v).collect(),
        }
    }

    /// The row for `(type_url, version)`.
    pub fn version(&self, type_url: &str, version: &str) -> Option<&VersionReport> {
        (self.versions.iter()).find(|v| v.type_url == type_url && v.version == version)
    }

    /// How many nodes hold `version` of `type_url` now.
    pub fn holding(&self, type_url: &str, version: &str) -> usize {
        self.version(type_url, version).map_or(0, |v| v.holding)
    }

    /// The report as text, as the CLI prints it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "fleet: {} nodes{} ({}, {} connections), {:.1}s: {} streams open, {} configured",
            self.nodes,
            self.shards
                .as_ref()
                .map_or(String::new(), |s| format!(", {s}")),
            self.mode,
            self.connections,
            self.elapsed_ms / 1000.0,
            self.streams_open,
            self.configured
        );
        let _ = writeln!(
            out,
            "first config (all types), p50/p99/max ms: {}",
            self.first_config.text()
        );
        let _ = writeln!(
            out,
            "{:<5} {:<18} {:>6} {:>7} {:>6} {:>22} {:>22} {:>10}",
            "type",
            "version",
            "nodes",
            "holding",
            "nacks",
            "first config ms",
            "converge ms",
            "bytes"
        );
        for v in &self.versions {
            let _ = writeln!(
                out,
                "{:<5} {:<18} {:>6} {:>7} {:>6} {:>22} {:>22} {:>10}",
                v.short_type,
                v.version,
                v.nodes,
                v.holding,
                v.nacks,
                v.first_config.text(),
                v.converge.text(),
                human_bytes(v.bytes)
            );
        }
        if let Some(v) = self.versions.iter().rev().find(|v| v.nacks > 0) {
            let error = v.nack_error.as_deref().unwrap_or("");
            let _ = writeln!(out, "NACK {} {}: {error}", v.short_type, v.version);
        }
        let _ = writeln!(
            out,
            "nacks {}, reconnects {}, failed connects {}, responses {}, received {}{}",
            self.nacks,
            self.reconnects,
            self.stream_failures,
            self.responses,
            human_bytes(self.bytes_received),
            match &self.last_error {
                Some(e) => format!(", last error: {e}"),
                None => String::new(),
            }
        );
        out
    }

    /// One line for the terminal while the fleet runs.
    pub fn progress_line(&self) -> String {
        let mut latest: Vec<&VersionReport> = Vec::new();
        for v in &self.versions {
            match latest.last_mut() {
                Some(last) if last.type_url == v.type_url => *last = v,
                _ => latest.push(v),
            }
        }
        let held: Vec<String> = latest
            .iter()
            .map(|v| {
                format!(
                    "{}={} {}/{}",
                    v.short_type, v.version, v.holding, self.nodes
                )
            })
            .collect();
        format!(
            "fleet {:.0}s: streams {}/{}, configured {}/{}, {}, nacks {}, reconnects {}, rx {}",
            self.elapsed_ms / 1000.0,
            self.streams_open,
            self.nodes,
            self.configured,
            self.nodes,
            held.join(" "),
            self.nacks,
            self.reconnects,
            human_bytes(self.bytes_received)
        )
    }
}

/// `bytes` as B, KiB, MiB or GiB.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples = (1..=100).map(|ms| ms * 1000).collect();
        let stats = Stats::of(samples);
        assert_eq!(stats.count, 100);
        assert_eq!(
            (stats.p50_ms, stats.p99_ms, stats.max_ms),
            (50.0, 99.0, 100.0)
        );
        let one = Stats::of(vec![7000]);
        assert_eq!((one.p50_ms, one.p99_ms, one.max_ms), (7.0, 7.0, 7.0));
        assert_eq!(Stats::of(Vec::new()).count, 0);
    }

    #[test]
    fn bytes_are_human_readable() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
    }
}
