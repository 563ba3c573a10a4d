//! The fleet's machine-readable report (`fleet --report FILE`): which run it belongs to, which
//! shards it covers, the summed counts, and every raw per-node sample, so that reports of the
//! shards of one run merge exactly ([`super::merge`]) and percentiles are computed from all
//! samples, never from other percentiles.
//!
//! Compact on purpose: times are whole microseconds, as offsets from the report's own start
//! (`started_unix_us`, wall clock), so a 100,000-node run's samples are a few MB of JSON. Wall
//! clock because shards on different machines share nothing else: a merge puts every shard's
//! samples on one time line, and "converge" (first sighting of a version on any node → each
//! node's ACK) spans shards, so across machines it is as good as their clocks' agreement
//! (NTP: a millisecond or so). The per-node durations (first config) are measured on one
//! machine's monotonic clock and do not depend on it.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::shard::Shard;
use super::tally::{Arrival, Counts, Origin, micros};

/// The `format` every report starts with; a reader refuses others.
pub(crate) const FORMAT: &str = "xdsloop-fleet-report/1";

/// What makes two shard reports parts of one run: the same nodes, types and server, asked the
/// same way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunIdentity {
    pub server: String,
    /// The run's nodes, over all shards.
    pub nodes: usize,
    pub node_prefix: String,
    /// `sotw` or `delta`.
    pub mode: String,
    /// Type URLs, in subscription order.
    pub types: Vec<String>,
    /// `--nack` rules as `TYPE_URL:NAME`.
    pub nack: Vec<String>,
    /// `--start-at`, as milliseconds since the Unix epoch.
    pub start_at_unix_ms: Option<u64>,
    /// `--duration`, in milliseconds.
    pub duration_ms: Option<u64>,
}

/// Counts that add up over shards.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub connections: usize,
    pub streams_open: usize,
    pub nacks: u64,
    pub reconnects: u64,
    pub stream_failures: u64,
    pub responses: u64,
    pub bytes: u64,
    pub undecodable: u64,
}

/// Nodes and one time per node, in two parallel lists (smaller JSON than pairs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeTimes {
    pub node: Vec<u32>,
    pub us: Vec<u64>,
}

impl NodeTimes {
    fn push(&mut self, node: usize, us: u64) {
        self.node.push(node as u32);
        self.us.push(us);
    }

    pub fn len(&self) -> usize {
        self.us.len()
    }

    pub fn is_empty(&self) -> bool {
        self.us.is_empty()
    }
}

/// Everything about one (type, version) in the nodes this report covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionSamples {
    pub type_url: String,
    pub version: String,
    /// The first response carrying it, on any of these nodes (µs after `started_unix_us`).
    pub first_seen_us: u64,
    pub nacks: u64,
    pub nack_error: Option<String>,
    /// Nodes holding it when the report was made.
    pub holding: usize,
    pub responses: u64,
    pub bytes: u64,
    /// Nodes for which it was their first version of the type: µs from the node's first
    /// connection attempt to its ACK.
    pub first: NodeTimes,
    /// Nodes that changed to it from an older version: when they ACKed it (µs after
    /// `started_unix_us`).
    pub change: NodeTimes,
}

/// One shard's report, or several shards' merged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    /// [`FORMAT`].
    pub format: String,
    pub run: RunIdentity,
    /// The shards whose nodes this report holds (one, or all after a merge).
    pub shards: Vec<Shard>,
    /// The run-wide index of this report's first node; its nodes are consecutive.
    pub first_node: usize,
    /// When the nodes started (wall clock, µs since the Unix epoch): the origin of every
    /// `_us` offset below.
    pub started_unix_us: u64,
    /// When the report was made, µs after `started_unix_us`.
    pub ended_us: u64,
    pub totals: Totals,
    /// The last error any node saw (stream, connection or decoding).
    pub last_error: Option<String>,
    /// Per node, in node order: µs from its first connection attempt until it held every type
    /// it asked for; `null` for a node that never did.
    pub first_config_us: Vec<Option<u64>>,
    pub versions: Vec<VersionSamples>,
}

/// What a report says about its nodes besides the counts.
#[derive(Clone, Debug)]
pub struct Coverage {
    pub run: RunIdentity,
    pub shard: Shard,
    pub connections: usize,
    pub origin: Origin,
}

impl RunReport {
    /// The report of one fleet process from its counts; node `i` of the counts is node
    /// `first_node + i` of the run.
    pub fn from_counts(coverage: &Coverage, counts: &Counts, now: Instant) -> Self {
        let origin = coverage.origin;
        let range = coverage.shard.range(coverage.run.nodes);
        let first_config_us = (counts.configured.iter().enumerate())
            .map(|(node, at)| {
                let start = counts.started[node].unwrap_or(origin.instant);
                at.map(|at| micros(at.saturating_duration_since(start)))
            })
            .collect();
        let versions = (counts.versions.iter())
            .map(|((url, version), v)| {
                let mut first = NodeTimes::default();
                let mut change = NodeTimes::default();
                for ack in &v.acks {
                    let local = ack.node as usize;
                    match ack.arrival {
                        Arrival::First => {
                            let start = counts.started[local].unwrap_or(origin.instant);
                            let us = micros(ack.at.saturating_duration_since(start));
                            first.push(range.start + local, us);
                        }
                        Arrival::Change => change.push(range.start + local, origin.offset(ack.at)),
                    }
                }
                VersionSamples {
                    type_url: url.clone(),
                    version: version.clone(),
                    first_seen_us: origin.offset(v.first_seen),
                    nacks: v.nacks,
                    nack_error: v.nack_error.clone(),
                    holding: v.holding,
                    responses: v.responses,
                    bytes: v.bytes,
                    first,
                    change,
                }
            })
            .collect();
        RunReport {
            format: FORMAT.into(),
            run: coverage.run.clone(),
            shards: vec![coverage.shard],
            first_node: range.start,
            started_unix_us: origin.unix_us,
            ended_us: origin.offset(now),
            totals: Totals {
                connections: coverage.connections,
                streams_open: counts.streams_open,
                nacks: counts.nacks,
                reconnects: counts.reconnects,
                stream_failures: counts.stream_failures,
                responses: counts.responses,
                bytes: counts.bytes,
                undecodable: counts.undecodable,
            },
            last_error: counts.last_error.clone(),
            first_config_us,
            versions,
        }
    }

    /// The nodes this report holds, as run-wide indexes.
    pub fn nodes(&self) -> std::ops::Range<usize> {
        self.first_node..self.first_node + self.first_config_us.len()
    }

    /// Reads a report: the file `fleet --report FILE` wrote, or a captured log (e.g. `kubectl
    /// logs` of a shard run with `--report -`) holding exactly one report line among others.
    pub fn parse(text: &str) -> Result<RunReport, String> {
        let mut lines = text.lines().map(str::trim).filter(|l| is_report(l));
        match (lines.next(), lines.next()) {
            (Some(line), None) => decode(line),
            (Some(_), Some(_)) => Err(
                "holds more than one fleet report line: give each shard's report on its own".into(),
            ),
            // A report written across lines (pretty-printed).
            (None, _) if is_report(text) => decode(text),
            (None, _) => Err(format!(
                "no fleet report in it (expected the JSON `xdsloop-client fleet --report` \
                 writes, starting {{\"format\":\"{FORMAT}\", or a log with that line)"
            )),
        }
    }
}

/// Starts like a report: `{"format":"xdsloop-fleet-report/...`, spaces allowed.
fn is_report(text: &str) -> bool {
    let Some(head) = text.trim_start().strip_prefix('{') else {
        return false;
    };
    head.trim_start()
        .strip_prefix("\"format\"")
        .map(|rest| rest.trim_start_matches([':', ' ']))
        .is_some_and(|rest| rest.starts_with("\"xdsloop-fleet-report/"))
}

fn decode(text: &str) -> Result<RunReport, String> {
    let format = serde_json::from_str::<FormatOnly>(text)
        .map_err(|e| format!("a damaged fleet report (cut short?): {e}"))?
        .format;
    if format != FORMAT {
        return Err(format!(
            "is a {format} report; this xdsloop-client reads {FORMAT}"
        ));
    }
    serde_json::from_str(text).map_err(|e| format!("a broken fleet report: {e}"))
}

#[derive(Deserialize)]
struct FormatOnly {
    format: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> RunReport {
        RunReport {
            format: FORMAT.into(),
            run: RunIdentity {
                server: "127.0.0.1:18000".into(),
                nodes: 3,
                node_prefix: "fleet-".into(),
                mode: "sotw".into(),
                types: vec!["t".into()],
                nack: Vec::new(),
                start_at_unix_ms: None,
                duration_ms: None,
            },
            shards: vec![Shard::WHOLE],
            first_node: 0,
            started_unix_us: 1,
            ended_us: 2,
            totals: Totals::default(),
            last_error: None,
            first_config_us: vec![Some(5), None, Some(7)],
            versions: Vec::new(),
        }
    }

    #[test]
    fn a_report_reads_from_its_file_or_from_a_log_around_its_line() {
        let line = serde_json::to_string(&report()).unwrap();
        assert!(
            line.starts_with(r#"{"format":"xdsloop-fleet-report/1","#),
            "{line}"
        );
        assert!(line.contains(r#""first_config_us":[5,null,7]"#), "{line}");
        assert_eq!(RunReport::parse(&line).unwrap(), report());
        let pretty = serde_json::to_string_pretty(&report()).unwrap();
        assert_eq!(RunReport::parse(&pretty).unwrap(), report());
        let log = format!("INFO fleet 1s: streams 3/3\n{line}\nfleet: 3 nodes ...\n");
        assert_eq!(RunReport::parse(&log).unwrap(), report());
    }

    #[test]
    fn what_is_not_one_report_is_refused_saying_why() {
        let line = serde_json::to_string(&report()).unwrap();
        let twice = format!("{line}\n{line}\n");
        assert!(
            RunReport::parse(&twice)
                .unwrap_err()
                .contains("more than one")
        );
        let none = RunReport::parse("fleet: 3 nodes\n").unwrap_err();
        assert!(none.contains("no fleet report in it"), "{none}");
        let future = line.replace("report/1", "report/2");
        let error = RunReport::parse(&future).unwrap_err();
        assert!(
            error.contains("is a xdsloop-fleet-report/2 report"),
            "{error}"
        );
        let cut = &line[..line.len() - 20];
        assert!(RunReport::parse(cut).unwrap_err().contains("damaged"));
    }
}
