//! What a fleet report must hold to be one the fleet could have written. `fleet merge` checks
//! every report it reads and the merged report before it writes it, so a damaged file is
//! refused naming the field that is wrong, and a merge never writes what it would refuse to
//! read back.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::{Duration, UNIX_EPOCH};

use xdsloop_proto::type_url;

use super::samples::{NodeTimes, RunReport, VersionSamples};
use super::shard::Shard;

/// 2026-01-01T00:00:00Z: no fleet report started before its format existed, so an earlier
/// `started_unix_us` is a zeroed field or a machine whose clock was wrong (its converge
/// samples could not be put on one time line with the others').
const FORMAT_EXISTED_UNIX_US: u64 = 1_767_225_600_000_000;

/// How far a report's end may lie ahead of the reader's clock: machines' clocks differ by far
/// less, and a larger value is a damaged field.
const CLOCK_SLACK_US: u64 = 24 * 3_600_000_000;

/// Why `report` cannot have come from a fleet run, or `Ok`. `now_unix_us` is the reader's
/// wall clock (a report cannot end in the future). The message names the field.
pub(crate) fn check(report: &RunReport, now_unix_us: u64) -> Result<(), String> {
    let nodes = check_shards(report)?;
    check_clock(report, now_unix_us)?;
    let plural = if report.shards.len() == 1 { "" } else { "s" };
    let whose = format!(
        "the report's {} nodes ({nodes:?}, shard{plural} {})",
        nodes.len(),
        shard_names(&report.shards)
    );
    for (node, us) in nodes.clone().zip(&report.first_config_us) {
        if let Some(us) = us {
            within_end(report, *us, || format!("first_config_us of node {node}"))?;
        }
    }
    let mut firsts: BTreeMap<(&str, u32), usize> = BTreeMap::new();
    let mut keys: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (i, v) in report.versions.iter().enumerate() {
        let label = format!(
            "versions[{i}] ({} {})",
            type_url::short_name(&v.type_url),
            v.version
        );
        if let Some(j) = keys.insert((&v.type_url, &v.version), i) {
            return Err(format!("{label} is given twice (also versions[{j}])"));
        }
        check_version(report, v, &nodes, &whose).map_err(|e| format!("{label}: {e}"))?;
        // Each node's first version of a type comes once (the node keeps what it accepted
        // across reconnects); it may change to one version several times.
        for &node in &v.first.node {
            if let Some(j) = firsts.insert((&v.type_url, node), i) {
                let short = type_url::short_name(&v.type_url);
                return Err(if j == i {
                    format!("{label}: node {node} is counted twice in first")
                } else {
                    format!(
                        "{label}: node {node} got its first {short} version here and in \
                         versions[{j}] ({}): a node's first version of a type comes once",
                        report.versions[j].version
                    )
                });
            }
        }
    }
    check_totals(report, &whose)
}

/// The report's nodes, which its shards must own exactly.
fn check_shards(report: &RunReport) -> Result<Range<usize>, String> {
    let total = report.run.nodes;
    let (Some(first), Some(last)) = (report.shards.first(), report.shards.last()) else {
        return Err("it names no shard (shards is empty)".into());
    };
    let one_split = report.shards.iter().all(|s| s.count == first.count);
    let consecutive = (report.shards.windows(2)).all(|w| w[1].index == w[0].index + 1);
    if !one_split || !consecutive {
        return Err(format!(
            "its shards ({}) are not consecutive shards of one split",
            shard_names(&report.shards)
        ));
    }
    let expected = first.range(total).start..last.range(total).end;
    let entries = report.first_config_us.len();
    if report.nodes() != expected {
        return Err(format!(
            "it holds nodes {:?} (first_node {} and {entries} first_config_us entries), but \
             its shards ({}) of a {total}-node run are nodes {expected:?}",
            report.nodes(),
            report.first_node,
            shard_names(&report.shards)
        ));
    }
    Ok(expected)
}

/// A start after the format existed, an end before now (give or take the machines' clocks).
fn check_clock(report: &RunReport, now_unix_us: u64) -> Result<(), String> {
    let started = report.started_unix_us;
    if started < FORMAT_EXISTED_UNIX_US {
        return Err(format!(
            "started_unix_us {started} ({}) is before fleet reports existed (2026): a zeroed \
             field, or a machine whose clock was wrong",
            rfc3339(started)
        ));
    }
    let ended = started.saturating_add(report.ended_us);
    if ended > now_unix_us.saturating_add(CLOCK_SLACK_US) {
        return Err(format!(
            "it ends at {} (started_unix_us + ended_us {}), more than a day after now ({})",
            rfc3339(ended),
            report.ended_us,
            rfc3339(now_unix_us)
        ));
    }
    Ok(())
}

/// A wall-clock time of a report, to the millisecond.
pub(crate) fn rfc3339(unix_us: u64) -> String {
    let at = UNIX_EPOCH + Duration::from_micros(unix_us);
    humantime::format_rfc3339_millis(at).to_string()
}

/// `us` (an offset or a duration within the report) is no later than its end.
fn within_end(report: &RunReport, us: u64, what: impl Fn() -> String) -> Result<(), String> {
    if us > report.ended_us {
        return Err(format!(
            "{}: {us} µs, after the report's end (ended_us {})",
            what(),
            report.ended_us
        ));
    }
    Ok(())
}

/// One (type, version): a type the run subscribed, parallel lists of its nodes, its times
/// within the report, no more holders than nodes that ACKed it.
fn check_version(
    report: &RunReport,
    v: &VersionSamples,
    nodes: &Range<usize>,
    whose: &str,
) -> Result<(), String> {
    if !report.run.types.contains(&v.type_url) {
        let types: Vec<&str> = (report.run.types.iter())
            .map(|t| type_url::short_name(t))
            .collect();
        return Err(format!(
            "type {} is not a type the run subscribed ({})",
            v.type_url,
            types.join(", ")
        ));
    }
    for (list, samples) in [("first", &v.first), ("change", &v.change)] {
        check_nodes(list, samples, nodes, whose)?;
    }
    within_end(report, v.first_seen_us, || "first_seen_us".into())?;
    for (node, &us) in v.first.node.iter().zip(&v.first.us) {
        within_end(report, us, || format!("node {node}'s first sample"))?;
    }
    for (node, &us) in v.change.node.iter().zip(&v.change.us) {
        within_end(report, us, || format!("node {node}'s change sample"))?;
        if us < v.first_seen_us {
            return Err(format!(
                "node {node} changed to it at {us} µs, before its first sighting \
                 (first_seen_us {})",
                v.first_seen_us
            ));
        }
    }
    if v.holding > nodes.len() {
        return Err(format!("holding {} is more than {whose}", v.holding));
    }
    let mut acked: Vec<u32> = v.first.node.iter().chain(&v.change.node).copied().collect();
    acked.sort_unstable();
    acked.dedup();
    if v.holding > acked.len() {
        return Err(format!(
            "holding {}, but only {} nodes ACKed it (first and change)",
            v.holding,
            acked.len()
        ));
    }
    Ok(())
}

/// A sample list: as many times as nodes, every node one of the report's.
fn check_nodes(
    list: &str,
    samples: &NodeTimes,
    nodes: &Range<usize>,
    whose: &str,
) -> Result<(), String> {
    let (n, t) = (samples.node.len(), samples.us.len());
    if n != t {
        let plural = |count: usize, word: &str| {
            format!("{count} {word}{}", if count == 1 { "" } else { "s" })
        };
        return Err(format!(
            "{list} lists {} but {}",
            plural(n, "node"),
            plural(t, "time")
        ));
    }
    if let Some(node) = (samples.node.iter()).find(|&&n| !nodes.contains(&(n as usize))) {
        return Err(format!(
            "{list} names node {node}, which is not one of {whose}"
        ));
    }
    Ok(())
}

/// The counts the samples bound: open streams (one per node), holders of a type's versions
/// (one version per node), NACKs (each counted under its version).
fn check_totals(report: &RunReport, whose: &str) -> Result<(), String> {
    let nodes = report.first_config_us.len();
    if report.totals.streams_open > nodes {
        return Err(format!(
            "totals.streams_open {} is more than {whose}",
            report.totals.streams_open
        ));
    }
    let mut holding: BTreeMap<&str, usize> = BTreeMap::new();
    for v in &report.versions {
        *holding.entry(&v.type_url).or_default() += v.holding;
    }
    if let Some((url, sum)) = holding.into_iter().find(|&(_, sum)| sum > nodes) {
        return Err(format!(
            "{}: holding adds up to {sum} over its versions, more than {whose} (a node holds \
             one version of a type)",
            type_url::short_name(url)
        ));
    }
    let nacks: u64 = report.versions.iter().map(|v| v.nacks).sum();
    if report.totals.nacks != nacks {
        return Err(format!(
            "totals.nacks {} but the versions' nacks add up to {nacks}",
            report.totals.nacks
        ));
    }
    Ok(())
}

/// `1/3`, or `0/4, 1/4, 2/4, 3/4` for a merged report.
pub(crate) fn shard_names(shards: &[Shard]) -> String {
    let names: Vec<String> = shards.iter().map(Shard::to_string).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

    use super::*;
    use crate::fleet::samples::{FORMAT, NodeTimes, RunIdentity, Totals, VersionSamples};
    use crate::fleet::shard::Shard;

    /// 2026-09-21, when the report's nodes started.
    const STARTED: u64 = 1_790_000_000_000_000;
    /// An hour after the start, when the report is read.
    const NOW: u64 = STARTED + 3_600_000_000;

    fn times(pairs: &[(u32, u64)]) -> NodeTimes {
        NodeTimes {
            node: pairs.iter().map(|p| p.0).collect(),
            us: pairs.iter().map(|p| p.1).collect(),
        }
    }

    fn version(type_url: &str, version: &str, seen: u64, holding: usize) -> VersionSamples {
        VersionSamples {
            type_url: type_url.into(),
            version: version.into(),
            first_seen_us: seen,
            nacks: 0,
            nack_error: None,
            holding,
            responses: 3,
            bytes: 300,
            first: NodeTimes::default(),
            change: NodeTimes::default(),
        }
    }

    /// Shard 1/3 of a 10-node run (nodes 4, 5, 6): every node's first CDS version is v1, nodes
    /// 4 and 5 move on to v2; EDS e1 is ACKed by nodes 4 and 5 and NACKed by node 6.
    fn report() -> RunReport {
        let mut v1 = version(CLUSTER, "v1", 150_000, 1);
        v1.first = times(&[(4, 200_000), (5, 210_000), (6, 220_000)]);
        let mut v2 = version(CLUSTER, "v2", 2_000_000, 2);
        v2.change = times(&[(4, 2_100_000), (5, 2_200_000)]);
        let mut e1 = version(ENDPOINT, "e1", 250_000, 2);
        e1.first = times(&[(4, 300_000), (5, 310_000)]);
        e1.nacks = 1;
        e1.nack_error = Some("resource \"web\" rejected by --nack".into());
        RunReport {
            format: FORMAT.into(),
            run: RunIdentity {
                server: "127.0.0.1:18000".into(),
                nodes: 10,
                node_prefix: "fleet-".into(),
                mode: "sotw".into(),
                types: vec![CLUSTER.into(), ENDPOINT.into()],
                nack: vec![format!("{ENDPOINT}:web")],
                start_at_unix_ms: None,
                duration_ms: Some(5_000),
            },
            shards: vec![Shard { index: 1, count: 3 }],
            first_node: 4,
            started_unix_us: STARTED,
            ended_us: 5_000_000,
            totals: Totals {
                connections: 2,
                streams_open: 3,
                nacks: 1,
                reconnects: 0,
                stream_failures: 0,
                responses: 9,
                bytes: 900,
                undecodable: 0,
            },
            last_error: None,
            first_config_us: vec![Some(300_000), Some(310_000), None],
            versions: vec![v1, v2, e1],
        }
    }

    /// The refusal of `report` after `damage`, which must contain every one of `words`.
    fn refused(damage: impl FnOnce(&mut RunReport), words: &[&str]) {
        let mut damaged = report();
        damage(&mut damaged);
        let Err(error) = check(&damaged, NOW) else {
            panic!("accepted a damaged report; it should say {words:?}");
        };
        for word in words {
            assert!(error.contains(word), "{word:?} not in: {error}");
        }
    }

    #[test]
    fn a_report_the_fleet_could_have_written_passes() {
        assert_eq!(check(&report(), NOW), Ok(()));
    }

    #[test]
    fn parallel_sample_lists_of_different_lengths_are_refused() {
        refused(
            |r| {
                r.versions[1].change.us.pop();
            },
            &["versions[1] (cds v2)", "change lists 2 nodes but 1 time"],
        );
        refused(
            |r| r.versions[0].first.node.push(6),
            &["versions[0] (cds v1)", "first lists 4 nodes but 3 times"],
        );
    }

    #[test]
    fn a_node_of_another_shard_is_refused() {
        refused(
            |r| r.versions[1].change.node[0] = 8,
            &[
                "versions[1] (cds v2)",
                "change names node 8",
                "not one of the report's 3 nodes (4..7, shard 1/3)",
            ],
        );
        refused(
            |r| r.versions[2].first.node[1] = 3,
            &["versions[2] (eds e1)", "first names node 3"],
        );
    }

    #[test]
    fn a_node_counted_twice_is_refused() {
        // A node's first version of a type is counted once: here and in another version...
        refused(
            |r| {
                r.versions[1].first = times(&[(5, 400_000)]);
                r.versions[1].change = times(&[(4, 2_100_000)]);
            },
            &[
                "versions[1] (cds v2)",
                "node 5",
                "first cds version",
                "versions[0] (v1)",
            ],
        );
        // ... or twice in one version.
        refused(
            |r| r.versions[0].first.node[1] = 4,
            &["versions[0] (cds v1)", "node 4", "twice"],
        );
    }

    #[test]
    fn a_node_may_change_to_a_version_it_held_before() {
        // v1 -> v2 -> v1 -> v2 (a fixture edit undone and redone): node 4 changes to v2 twice.
        let mut report = report();
        report.versions[0].change = times(&[(4, 2_500_000)]);
        report.versions[1].change = times(&[(4, 2_100_000), (5, 2_200_000), (4, 2_600_000)]);
        report.versions[1].holding = 2;
        report.versions[0].holding = 1;
        assert_eq!(check(&report, NOW), Ok(()));
    }

    #[test]
    fn holding_above_the_node_count_is_refused() {
        refused(
            |r| r.versions[1].holding = 4,
            &[
                "versions[1] (cds v2)",
                "holding 4",
                "more than the report's 3 nodes (4..7, shard 1/3)",
            ],
        );
        // Each version within bounds, but a node holds one version of a type.
        refused(
            |r| r.versions[0].holding = 3,
            &["cds", "holding adds up to 5", "the report's 3 nodes"],
        );
        // A node holds only what it ACKed.
        refused(
            |r| r.versions[2].holding = 3,
            &["versions[2] (eds e1)", "holding 3", "only 2 nodes ACKed it"],
        );
    }

    #[test]
    fn a_start_at_the_epoch_or_an_end_in_the_future_is_refused() {
        refused(
            |r| r.started_unix_us = 0,
            &["started_unix_us 0", "1970-01-01T00:00:00.000Z", "before"],
        );
        refused(
            |r| r.ended_us = 2 * 24 * 3_600_000_000,
            &["ended_us", "after now"],
        );
    }

    #[test]
    fn samples_outside_the_reports_time_are_refused() {
        refused(
            |r| r.versions[1].first_seen_us = 6_000_000,
            &[
                "versions[1] (cds v2)",
                "first_seen_us: 6000000 µs",
                "ended_us 5000000",
            ],
        );
        refused(
            |r| r.versions[1].change.us[0] = 1_000_000,
            &[
                "versions[1] (cds v2)",
                "node 4",
                "1000000",
                "before its first sighting (first_seen_us 2000000)",
            ],
        );
        refused(
            |r| r.versions[1].change.us[1] = 5_000_001,
            &["versions[1] (cds v2)", "node 5", "ended_us 5000000"],
        );
        refused(
            |r| r.versions[0].first.us[2] = 9_000_000,
            &["versions[0] (cds v1)", "node 6", "ended_us 5000000"],
        );
        refused(
            |r| r.first_config_us[1] = Some(9_000_000),
            &["first_config_us", "node 5", "ended_us 5000000"],
        );
    }

    #[test]
    fn versions_of_another_type_or_given_twice_are_refused() {
        refused(
            |r| r.versions[2].type_url = "type.googleapis.com/my.Custom".into(),
            &[
                "versions[2]",
                "my.Custom",
                "not a type the run subscribed (cds, eds)",
            ],
        );
        refused(
            |r| {
                let again = r.versions[1].clone();
                r.versions.push(again);
            },
            &["versions[3] (cds v2)", "also versions[1]"],
        );
    }

    #[test]
    fn totals_that_disagree_with_the_samples_are_refused() {
        refused(
            |r| r.totals.streams_open = 4,
            &["totals.streams_open 4", "the report's 3 nodes"],
        );
        refused(
            |r| r.totals.nacks = 3,
            &["totals.nacks 3", "versions' nacks add up to 1"],
        );
    }
}
