//! The reports of one run's shards as one report: counts summed, samples concatenated (so
//! every percentile of the merged report is computed from all the run's samples), and a
//! refusal, saying why, of anything that would make the result wrong: a report of another run,
//! a damaged report ([`super::consistency`]), a shard given twice, a shard missing, shards
//! that did not run at the same time. The merged report passes the checks a report read
//! passes, or is not given.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use xdsloop_proto::type_url;

use super::consistency::{self, rfc3339, shard_names};
use super::samples::{NodeTimes, RunIdentity, RunReport, Totals, VersionSamples};
use super::shard::Shard;
use super::tally::micros;

/// A report and where it came from (a file name), for the messages.
pub(crate) struct Named {
    pub name: String,
    pub report: RunReport,
}

/// Merges the reports of every shard of one run.
pub(crate) fn merge(reports: Vec<Named>) -> Result<RunReport, String> {
    let Some(first) = reports.first() else {
        return Err("no reports to merge".into());
    };
    for other in &reports[1..] {
        let differences = differences(&first.report.run, &other.report.run);
        if !differences.is_empty() {
            return Err(format!(
                "{} is from a different run than {}: {}; refusing to merge",
                other.name,
                first.name,
                differences.join(", ")
            ));
        }
    }
    check_split(&reports)?;
    let now = micros(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default(),
    );
    for Named { name, report } in &reports {
        consistency::check(report, now)
            .map_err(|e| format!("{name} is damaged: {e}; refusing to merge"))?;
    }
    check_shards(&reports)?;
    check_overlap(&reports)?;
    let merged = concatenate(reports);
    consistency::check(&merged, now).map_err(|e| {
        format!("the merged report would not be one a fleet could write ({e}); refusing to merge")
    })?;
    Ok(merged)
}

/// The reports, checked, as one.
fn concatenate(reports: Vec<Named>) -> RunReport {
    let mut reports = reports;
    reports.sort_by_key(|named| named.report.first_node);
    let origin = (reports.iter().map(|n| n.report.started_unix_us).min()).unwrap_or(0);
    let run = reports[0].report.run.clone();
    let mut shards = Vec::new();
    let mut totals = Totals::default();
    let mut last_error = None;
    let mut first_config_us = Vec::with_capacity(run.nodes);
    let mut versions: BTreeMap<(String, String), VersionSamples> = BTreeMap::new();
    let mut ended_us = 0;
    for Named { report, .. } in reports {
        // Every offset of this report, moved to the merged report's origin.
        let shift = report.started_unix_us - origin;
        shards.extend(report.shards);
        add(&mut totals, &report.totals);
        last_error = report.last_error.or(last_error);
        first_config_us.extend(report.first_config_us);
        ended_us = ended_us.max(report.ended_us + shift);
        for v in report.versions {
            let key = (v.type_url.clone(), v.version.clone());
            let merged = versions.entry(key).or_insert_with(|| VersionSamples {
                first_seen_us: u64::MAX,
                nacks: 0,
                nack_error: None,
                holding: 0,
                responses: 0,
                bytes: 0,
                first: NodeTimes::default(),
                change: NodeTimes::default(),
                type_url: v.type_url.clone(),
                version: v.version.clone(),
            });
            merged.first_seen_us = merged.first_seen_us.min(v.first_seen_us + shift);
            merged.nacks += v.nacks;
            merged.nack_error = v.nack_error.or(merged.nack_error.take());
            merged.holding += v.holding;
            merged.responses += v.responses;
            merged.bytes += v.bytes;
            // First-config samples are durations on one node: no shift.
            merged.first.node.extend(v.first.node);
            merged.first.us.extend(v.first.us);
            merged.change.node.extend(v.change.node);
            merged
                .change
                .us
                .extend(v.change.us.iter().map(|us| us + shift));
        }
    }
    shards.sort();
    RunReport {
        format: super::samples::FORMAT.into(),
        run,
        shards,
        first_node: 0,
        started_unix_us: origin,
        ended_us,
        totals,
        last_error,
        first_config_us,
        versions: versions.into_values().collect(),
    }
}

fn add(sum: &mut Totals, more: &Totals) {
    sum.connections += more.connections;
    sum.streams_open += more.streams_open;
    sum.nacks += more.nacks;
    sum.reconnects += more.reconnects;
    sum.stream_failures += more.stream_failures;
    sum.responses += more.responses;
    sum.bytes += more.bytes;
    sum.undecodable += more.undecodable;
}

/// What differs between two runs' identities, in words.
fn differences(a: &RunIdentity, b: &RunIdentity) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = |name: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{name} {a} vs {b}"));
        }
    };
    field("server", a.server.clone(), b.server.clone());
    field("nodes", a.nodes.to_string(), b.nodes.to_string());
    field("node prefix", a.node_prefix.clone(), b.node_prefix.clone());
    field("mode", a.mode.clone(), b.mode.clone());
    let short = |types: &[String]| {
        let names: Vec<&str> = types.iter().map(|t| type_url::short_name(t)).collect();
        names.join(",")
    };
    field("types", short(&a.types), short(&b.types));
    field("nack", list(&a.nack), list(&b.nack));
    field(
        "start-at (unix ms)",
        opt(a.start_at_unix_ms),
        opt(b.start_at_unix_ms),
    );
    field("duration (ms)", opt(a.duration_ms), opt(b.duration_ms));
    out
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".into()
    } else {
        items.join(",")
    }
}

fn opt(value: Option<u64>) -> String {
    value.map_or("(none)".into(), |v| v.to_string())
}

/// One split of the run: every report's shards are shards of the same count.
fn check_split(reports: &[Named]) -> Result<(), String> {
    let count = reports[0].report.shards.first().map_or(0, |s| s.count);
    for Named { name, report } in reports {
        if let Some(other) = report.shards.iter().find(|s| s.count != count) {
            return Err(format!(
                "{name} is shard {other} but {} is a shard of {count}: one run is split one \
                 way; refusing to merge",
                reports[0].name
            ));
        }
    }
    Ok(())
}

/// Every shard exactly once.
fn check_shards(reports: &[Named]) -> Result<(), String> {
    let count = reports[0].report.shards.first().map_or(0, |s| s.count);
    let mut seen: BTreeMap<usize, &str> = BTreeMap::new();
    for Named { name, report } in reports {
        for shard in &report.shards {
            if let Some(before) = seen.insert(shard.index, name) {
                return Err(format!(
                    "shard {shard} is in both {before} and {name}: give each shard's report \
                     once; refusing to merge"
                ));
            }
        }
    }
    let missing: Vec<Shard> = (0..count)
        .filter(|index| !seen.contains_key(index))
        .map(|index| Shard { index, count })
        .collect();
    if !missing.is_empty() {
        let have: Vec<Shard> = seen.keys().map(|&index| Shard { index, count }).collect();
        return Err(format!(
            "missing the report of shard {} (have {}): an exact merge needs every shard; \
             refusing to merge",
            shard_names(&missing),
            shard_names(&have)
        ));
    }
    Ok(())
}

/// The shards ran at the same time: the last to start started before the first to end had
/// ended. Otherwise their samples are not one run's, and the merged run would last from the
/// first start to the last end.
fn check_overlap(reports: &[Named]) -> Result<(), String> {
    let end = |r: &RunReport| r.started_unix_us + r.ended_us;
    let latest = (reports.iter()).max_by_key(|n| n.report.started_unix_us);
    let earliest = reports.iter().min_by_key(|n| end(&n.report));
    let (Some(latest), Some(earliest)) = (latest, earliest) else {
        return Ok(());
    };
    if latest.report.started_unix_us > end(&earliest.report) {
        return Err(format!(
            "{} started at {}, after {} had ended ({}): the shards of one run run at the same \
             time; refusing to merge",
            latest.name,
            rfc3339(latest.report.started_unix_us),
            earliest.name,
            rfc3339(end(&earliest.report))
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::report::FleetReport;
    use crate::fleet::samples::FORMAT;

    const NODES: usize = 10;
    /// 2026-09-21: every shard's start is a few ms after it.
    const BASE: u64 = 1_790_000_000_000_000;

    fn identity() -> RunIdentity {
        RunIdentity {
            server: "xds:18000".into(),
            nodes: NODES,
            node_prefix: "fleet-".into(),
            mode: "sotw".into(),
            types: vec!["cds".into(), "eds".into()],
            nack: Vec::new(),
            start_at_unix_ms: Some(1_900_000_000_000),
            duration_ms: Some(30_000),
        }
    }

    /// Shard `index` of 4 of a 10-node run: node `n` configured after `first_config(n)` µs;
    /// the shard started `started` µs after `BASE` and saw version `v2` at `seen` (offset).
    fn shard(index: usize, started: u64, seen: u64) -> Named {
        let shard = Shard { index, count: 4 };
        let range = shard.range(NODES);
        let first_config = |n: usize| (n as u64 * 7919) % 1000 * 1000 + 137 * n as u64;
        let mut first = NodeTimes::default();
        let mut change = NodeTimes::default();
        for n in range.clone() {
            first.node.push(n as u32);
            first.us.push(first_config(n) / 2);
            change.node.push(n as u32);
            change.us.push(seen + 1000 * n as u64);
        }
        let version = |name: &str, first, change, seen| VersionSamples {
            type_url: "cds".into(),
            version: name.into(),
            first_seen_us: seen,
            nacks: 1,
            nack_error: None,
            holding: 0,
            responses: range.len() as u64,
            bytes: 100,
            first,
            change,
        };
        let mut v1 = version("v1", first, NodeTimes::default(), 5);
        v1.holding = 0;
        let mut v2 = version("v2", NodeTimes::default(), change, seen);
        v2.holding = range.len();
        Named {
            name: format!("shard-{index}.json"),
            report: RunReport {
                format: FORMAT.into(),
                run: identity(),
                shards: vec![shard],
                first_node: range.start,
                started_unix_us: BASE + started,
                ended_us: 2_000_000,
                totals: Totals {
                    connections: 2,
                    streams_open: range.len(),
                    nacks: 2,
                    reconnects: index as u64,
                    stream_failures: 0,
                    responses: 10,
                    bytes: 1000,
                    undecodable: 0,
                },
                last_error: None,
                first_config_us: range.map(|n| (n != 4).then(|| first_config(n))).collect(),
                versions: vec![v1, v2],
            },
        }
    }

    fn four() -> Vec<Named> {
        // Shards start a few ms apart (machines), and see v2 at different moments.
        vec![
            shard(0, 1_000_000, 900_000),
            shard(1, 1_003_000, 880_000),
            shard(2, 1_001_000, 950_000),
            shard(3, 1_002_500, 870_000),
        ]
    }

    /// Nearest rank, written out again for the test.
    fn rank(samples: &[u64], p: f64) -> f64 {
        let mut sorted = samples.to_vec();
        sorted.sort();
        let k = ((p * sorted.len() as f64).ceil() as usize).max(1);
        sorted[k - 1] as f64 / 1000.0
    }

    #[test]
    fn merged_counts_are_sums_and_percentiles_come_from_all_samples() {
        let parts = four();
        let all: Vec<u64> = (parts.iter())
            .flat_map(|p| p.report.first_config_us.iter().flatten().copied())
            .collect();
        let shard_p50s: Vec<f64> = (parts.iter())
            .map(|p| FleetReport::summarize(&p.report).first_config.p50_ms)
            .collect();
        let merged = merge(parts).unwrap();
        assert_eq!(merged.shards.len(), 4);
        assert_eq!(merged.nodes(), 0..NODES);
        let summary = FleetReport::summarize(&merged);
        assert_eq!(summary.nodes, NODES);
        assert_eq!(summary.configured, NODES - 1, "node 4 never configured");
        assert_eq!(summary.reconnects, 6, "0 + 1 + 2 + 3");
        assert_eq!(summary.connections, 8);
        assert_eq!(summary.streams_open, NODES);
        assert_eq!(summary.nacks, 8);
        let stats = summary.first_config;
        assert_eq!(stats.count, all.len());
        assert_eq!(
            (stats.p50_ms, stats.p99_ms, stats.max_ms),
            (rank(&all, 0.5), rank(&all, 0.99), rank(&all, 1.0))
        );
        let averaged = shard_p50s.iter().sum::<f64>() / 4.0;
        assert_ne!(stats.p50_ms, averaged, "the test data tells the two apart");
        let v2 = summary.version("cds", "v2").unwrap();
        assert_eq!((v2.nodes, v2.holding, v2.nacks), (NODES, NODES, 4));
        assert_eq!(
            summary.version("cds", "v1").unwrap().first_config.count,
            NODES
        );
    }

    #[test]
    fn convergence_spans_shards_from_the_first_sighting_on_any_of_them() {
        let merged = merge(four()).unwrap();
        let v2 = merged.versions.iter().find(|v| v.version == "v2").unwrap();
        // Shard 3 started 2.5 ms after shard 0 and saw v2 870 ms later: 872.5 ms on the merged
        // clock, the earliest of the four (shard 1: 3 + 880 = 883 ms).
        assert_eq!(merged.started_unix_us, BASE + 1_000_000);
        assert_eq!(v2.first_seen_us, 872_500);
        // Node 0 (shard 0) ACKed at 900 ms: 27.5 ms after the first sighting anywhere.
        let converge = FleetReport::summarize(&merged)
            .version("cds", "v2")
            .unwrap()
            .converge;
        let expected: Vec<u64> = (0..NODES as u64)
            .map(|n| {
                let (shift, seen) = match n {
                    0..=2 => (0, 900_000),
                    3..=5 => (3_000, 880_000),
                    6..=7 => (1_000, 950_000),
                    _ => (2_500, 870_000),
                };
                shift + seen + 1000 * n - 872_500
            })
            .collect();
        assert_eq!(converge.count, NODES);
        assert_eq!(converge.p50_ms, rank(&expected, 0.5));
        assert_eq!(converge.max_ms, rank(&expected, 1.0));
        assert_eq!(expected[0], 27_500);
    }

    #[test]
    fn a_merge_does_not_depend_on_the_order_of_the_files() {
        let forward = merge(four()).unwrap();
        let mut reversed = four();
        reversed.reverse();
        assert_eq!(merge(reversed).unwrap(), forward);
    }

    #[test]
    fn reports_of_another_run_are_refused_saying_what_differs() {
        for (what, change) in [
            (
                "nodes 10 vs 12",
                (|r: &mut RunIdentity| r.nodes = 12) as fn(&mut RunIdentity),
            ),
            ("server xds:18000 vs other:18000", |r| {
                r.server = "other:18000".into()
            }),
            ("types cds,eds vs cds", |r| r.types.truncate(1)),
            ("mode sotw vs delta", |r| r.mode = "delta".into()),
            ("start-at (unix ms)", |r| r.start_at_unix_ms = None),
        ] {
            let mut parts = four();
            change(&mut parts[2].report.run);
            let error = merge(parts).unwrap_err();
            assert!(
                error.contains("shard-2.json is from a different run than shard-0.json")
                    && error.contains(what),
                "{what}: {error}"
            );
        }
    }

    #[test]
    fn a_duplicate_or_missing_shard_is_refused() {
        let mut parts = four();
        parts[3] = shard(1, 1_000_000, 900_000);
        parts[3].name = "copy.json".into();
        let error = merge(parts).unwrap_err();
        assert!(
            error.contains("shard 1/4 is in both shard-1.json and copy.json"),
            "{error}"
        );

        let mut parts = four();
        parts.remove(1);
        parts.remove(2);
        let error = merge(parts).unwrap_err();
        assert!(
            error.contains("missing the report of shard 1/4, 3/4 (have 0/4, 2/4)"),
            "{error}"
        );

        let mut parts = four();
        parts[0].report.shards = vec![Shard { index: 0, count: 5 }];
        let error = merge(parts).unwrap_err();
        assert!(
            error.contains("shard 1/4 but shard-0.json is a shard of 5"),
            "{error}"
        );

        let mut parts = four();
        parts[2].report.first_config_us.pop();
        let error = merge(parts).unwrap_err();
        assert!(
            error.contains("shard-2.json is damaged: it holds nodes 6..7"),
            "{error}"
        );
        assert!(merge(Vec::new()).is_err());
    }

    /// The refusal of the four shards after `damage` to shard `index`, which must name its
    /// file and contain every one of `words`.
    fn refused(index: usize, damage: impl FnOnce(&mut RunReport), words: &[&str]) {
        let mut parts = four();
        damage(&mut parts[index].report);
        let Err(error) = merge(parts) else {
            panic!("merged a damaged shard-{index}.json; it should say {words:?}");
        };
        let file = format!("shard-{index}.json is damaged: ");
        assert!(error.starts_with(&file), "{file:?} does not start: {error}");
        assert!(error.ends_with("; refusing to merge"), "{error}");
        for word in words {
            assert!(error.contains(word), "{word:?} not in: {error}");
        }
    }

    #[test]
    fn a_damaged_report_is_refused_naming_its_file_and_field() {
        refused(1, |r| r.started_unix_us = 0, &["started_unix_us 0"]);
        refused(
            2,
            |r| {
                r.versions[1].change.node.pop();
            },
            &["versions[1] (cds v2)", "change lists 1 node but 2 times"],
        );
        refused(
            0,
            |r| r.versions[0].first.node[2] = 5,
            &[
                "versions[0] (cds v1)",
                "node 5",
                "the report's 3 nodes (0..3, shard 0/4)",
            ],
        );
        refused(
            3,
            |r| r.versions[1].first = r.versions[0].first.clone(),
            &["versions[1] (cds v2)", "node 8", "first cds version"],
        );
        refused(
            3,
            |r| r.versions[1].holding = 3,
            &[
                "versions[1] (cds v2)",
                "holding 3",
                "the report's 2 nodes (8..10, shard 3/4)",
            ],
        );
    }

    #[test]
    fn shards_that_did_not_run_at_the_same_time_are_refused() {
        let mut parts = four();
        // Shard 2 started a minute after the others ended (2 s runs).
        parts[2].report.started_unix_us = BASE + 62_000_000;
        let error = merge(parts).unwrap_err();
        assert!(
            error.contains("shard-2.json started")
                && error.contains("after shard-0.json had ended")
                && error.contains("refusing to merge"),
            "{error}"
        );
    }

    #[test]
    fn a_merged_report_passes_the_checks_every_report_read_passes() {
        let merged = merge(four()).unwrap();
        let now = BASE + 3_600_000_000;
        assert_eq!(crate::fleet::consistency::check(&merged, now), Ok(()));
    }

    #[test]
    fn a_merged_report_reads_back_and_merging_it_again_is_refused() {
        let merged = merge(four()).unwrap();
        let text = serde_json::to_string(&merged).unwrap();
        assert_eq!(RunReport::parse(&text).unwrap(), merged);
        let again = vec![
            Named {
                name: "run.json".into(),
                report: merged,
            },
            shard(2, 1_000_000, 900_000),
        ];
        assert!(merge(again).unwrap_err().contains("shard 2/4 is in both"));
    }
}
