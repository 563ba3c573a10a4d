//! `xdsloop-client fleet`: flags, a progress line while it runs, the report at the end.

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};
use xdsloop_log::LogFormat;
use xdsloop_proto::type_url;

use super::merge::{self, Named};
use super::report::FleetReport;
use super::samples::RunReport;
use super::shard::Shard;
use super::{DEFAULT_CONNECTIONS, Fleet, FleetConfig};
use crate::cli::LOG_TARGET;
use crate::cli::output::Format;
use crate::cli::tls::TlsArgs;
use crate::config::DEFAULT_MAX_MESSAGE_BYTES;
use crate::config::Variant;
use crate::error::ClientError;

/// Simulates N Envoy-like nodes against any ADS server: CDS wildcard, EDS for the clusters seen,
/// optionally LDS/RDS; every response ACKed. Prints a progress line (stderr) while it runs and
/// a per-version report (stdout) at the end: nodes, time to first config, time to converge,
/// NACKs, reconnects, bytes.
///
/// More nodes than one machine can simulate: run the same command on N machines with
/// `--shard I/N` (each runs its even share of the nodes, with the ids an unsharded run gives
/// them), `--start-at` (all open their streams at the same moment) and `--report FILE` (every
/// raw sample), then `xdsloop-client fleet merge FILE...` for the run's exact percentiles.
#[derive(Debug, Parser)]
#[command(
    name = "xdsloop-client fleet",
    bin_name = "xdsloop-client fleet",
    version = env!("XDSLOOP_VERSION"),
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  \
                  xdsloop-client fleet --server 127.0.0.1:18000 --nodes 1000 --duration 30s\n  \
                  # one shard of a 100,000-node run on 20 machines (shards 0/20 .. 19/20):\n  \
                  xdsloop-client fleet --server xds.example:18000 --nodes 100000 --shard 3/20 \\\n    \
                  --start-at 2030-01-01T12:00:00Z --duration 5m --connections 4 --report shard-3.json\n  \
                  xdsloop-client fleet merge shard-*.json\n\n\
                  Running the shards as a Kubernetes Indexed Job: deploy/k8s/README.md.\n\n\
                  The fleet neither narrates nor records its streams (it is built to be cheap per \
                  node): to follow the loop step by step, or record it as a transcript, run one \
                  client with `xdsloop-client --explain` or `--record FILE`."
)]
pub struct FleetArgs {
    /// A subcommand (`merge`), or none for a run.
    #[command(subcommand)]
    pub command: Option<FleetCommand>,
    /// Server address (`host:port`, `http://host:port`, or `https://host:port` with --tls-ca).
    #[arg(long, default_value = "127.0.0.1:18000")]
    pub server: String,
    /// TLS toward the server (`--tls-ca`, `--tls-cert`, `--tls-key`).
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Number of simulated nodes in the whole run (over all shards with --shard).
    #[arg(long, visible_alias = "clients", default_value_t = 100)]
    pub nodes: usize,
    /// Run only shard I of N of the nodes (0-based, e.g. `--shard 0/4` .. `--shard 3/4`; in a
    /// Kubernetes Indexed Job, I is $JOB_COMPLETION_INDEX). Shards differ by at most one node;
    /// node ids are those of the unsharded run.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Open the streams at this moment, not at once: RFC 3339 (`2030-01-01T12:00:00Z`,
    /// `2030-01-01T13:00:00+01:00`) or Unix seconds (`1893499200`). Give every shard the same
    /// value so they start together; --duration counts from it.
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    pub start_at: Option<SystemTime>,
    /// Write the machine-readable report (run, shard, counts and every raw sample; what `fleet
    /// merge` reads) to FILE, or `-` for one JSON line on stdout (the summary then goes to
    /// stderr). FILE is checked before the run; a write that fails at the end still prints
    /// the summary (exit code 1).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Use Delta (incremental) ADS instead of State-of-the-World.
    #[arg(long)]
    pub delta: bool,
    /// HTTP/2 connections the nodes share (default: min(8, nodes of this process); `--connections
    /// N` = one each). Servers that cap concurrent streams per connection need enough of them.
    #[arg(long)]
    pub connections: Option<usize>,
    /// Node ids are `<prefix>0 .. <prefix>(N-1)`.
    #[arg(long, default_value = "fleet-")]
    pub node_prefix: String,
    /// Types to subscribe: cds (wildcard), eds (names from clusters), lds (wildcard), rds (names
    /// from listeners), or other type URLs (wildcard).
    #[arg(long, value_delimiter = ',', default_value = "cds,eds")]
    pub types: Vec<String>,
    /// Run this long, then report (`30`, `30s`, `2m`). Default: until Ctrl-C.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Report format.
    #[arg(long, value_enum, default_value = "text")]
    pub output: Format,
    /// Every node NACKs any response holding this resource, e.g. `--nack cds:web` (repeatable).
    #[arg(long, value_name = "TYPE:NAME")]
    pub nack: Vec<String>,
    /// Seconds between progress lines on stderr (0 = none).
    #[arg(long, default_value_t = 1.0)]
    pub progress: f64,
    /// gRPC message size limit in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
    /// stderr (progress lines and logs): `text`, coloured only on a terminal and never with
    /// NO_COLOR set, or `json`, one object per line for machines.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

/// What `xdsloop-client fleet` does besides a run.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    // Its help is `MergeArgs`' doc, which a doc comment here would replace.
    #[allow(missing_docs)]
    Merge(MergeArgs),
}

/// Merges the shard reports of a sharded run into the run's report (exact percentiles).
///
/// Takes the reports of every shard (`fleet --shard I/N --report FILE`) and gives the run's
/// report, as if one process had simulated every node: counts summed, every
/// percentile computed from all shards' raw samples (never averaged). Refuses reports of
/// different runs (server, nodes, types, mode, prefix, --nack, --start-at, --duration), a
/// shard given twice, a missing shard, shards that did not run at the same time, and a
/// damaged report (one a fleet could not have written: docs/fleet.md lists the checks),
/// naming the file and the field; the merged report passes the same checks.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  \
                        xdsloop-client fleet merge shard-0.json shard-1.json shard-2.json shard-3.json\n  \
                        xdsloop-client fleet merge --report run.json --output json shard-*.json\n\n\
                        A REPORT may be a captured log (e.g. `kubectl logs` of a shard run with \
                        `--report -`): its one report line is read, other lines are skipped.")]
pub struct MergeArgs {
    /// Shard reports: files `fleet --report FILE` wrote, or logs holding the line of `--report -`.
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Summary format.
    #[arg(long, value_enum, default_value = "text")]
    pub output: Format,
    /// Also write the merged report (every sample, the format of `fleet --report`) to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

/// The latest start the fleet accepts: further is more likely milliseconds given as seconds.
const START_AT_HORIZON: Duration = Duration::from_secs(24 * 3600);

/// `--start-at`: RFC 3339 (with `Z` or a `±HH:MM` offset) or Unix seconds.
pub fn parse_start_at(text: &str) -> Result<SystemTime, String> {
    if let Ok(seconds) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds)
            .map(|d| UNIX_EPOCH + d)
            .map_err(|e| format!("{text:?}: {e}"));
    }
    let usage = |e: &dyn std::fmt::Display| {
        format!("{text:?}: {e}; expected RFC 3339 (2030-01-01T12:00:00Z) or Unix seconds")
    };
    // humantime reads UTC times; an offset is applied here.
    let split = text
        .len()
        .checked_sub(6)
        .and_then(|at| Some((text.get(..at)?, text.get(at..)?)));
    let (local, offset) = match split {
        Some((local, offset))
            if offset.len() == 6
                && (offset.starts_with('+') || offset.starts_with('-'))
                && offset.as_bytes()[3] == b':' =>
        {
            let hours: u64 = offset[1..3].parse().map_err(|e| usage(&e))?;
            let minutes: u64 = offset[4..6].parse().map_err(|e| usage(&e))?;
            let seconds = Duration::from_secs(hours * 3600 + minutes * 60);
            (
                format!("{local}Z"),
                Some((offset.starts_with('+'), seconds)),
            )
        }
        _ => (text.to_string(), None),
    };
    let utc = humantime::parse_rfc3339(&local).map_err(|e| usage(&e))?;
    Ok(match offset {
        Some((true, ahead)) => utc - ahead,
        Some((false, behind)) => utc + behind,
        None => utc,
    })
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    if let Ok(seconds) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string());
    }
    humantime::parse_duration(text).map_err(|e| e.to_string())
}

fn resolve(alias: &str) -> Result<String, ClientError> {
    type_url::resolve(alias).ok_or_else(|| ClientError::UnknownType(alias.to_string()))
}

impl FleetArgs {
    /// The fleet configuration these flags describe.
    pub fn config(&self) -> Result<FleetConfig, ClientError> {
        let mut config = FleetConfig::new(self.server.clone(), self.nodes);
        config.shard = self.shard.unwrap_or(Shard::WHOLE);
        config.mode = if self.delta {
            Variant::Delta
        } else {
            Variant::Sotw
        };
        let here = config.shard.range(self.nodes).len();
        config.connections = self.connections.unwrap_or(DEFAULT_CONNECTIONS.min(here));
        config.node_prefix = self.node_prefix.clone();
        config.types = self
            .types
            .iter()
            .map(|t| resolve(t))
            .collect::<Result<_, _>>()?;
        config.nack = self
            .nack
            .iter()
            .map(|spec| {
                let (kind, name) = spec.split_once(':').ok_or_else(|| {
                    ClientError::Argument(format!("--nack {spec:?}: expected TYPE:NAME"))
                })?;
                Ok((resolve(kind)?, name.to_string()))
            })
            .collect::<Result<_, ClientError>>()?;
        config.max_message_bytes = self.max_message_bytes;
        config.tls = self.tls.load()?;
        Ok(config)
    }
}

/// What xdsloop-server lets one connection carry by default (its
/// `--max-streams-per-connection`).
const SERVER_STREAMS_PER_CONNECTION: usize = 4096;

/// A warning when the nodes need more streams per connection than a default xdsloop-server
/// allows: HTTP/2 then queues the extra streams, and the fleet looks stuck rather than failing.
fn streams_hint(nodes: usize, connections: usize) -> Option<String> {
    let per_connection = nodes.div_ceil(connections.clamp(1, nodes.max(1)));
    (per_connection > SERVER_STREAMS_PER_CONNECTION).then(|| {
        format!(
            "{nodes} nodes on {connections} connections is {per_connection} streams per \
             connection; xdsloop-server allows {SERVER_STREAMS_PER_CONNECTION} by default \
             (--max-streams-per-connection), and HTTP/2 holds the others back: use \
             --connections {}",
            nodes.div_ceil(SERVER_STREAMS_PER_CONNECTION)
        )
    })
}

/// Runs the fleet until `--duration` or `shutdown` (or merges reports, with `merge`);
/// progress lines go to `err`, the report to `out`.
pub async fn run(
    args: FleetArgs,
    shutdown: impl Future<Output = ()>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), ClientError> {
    if let Some(FleetCommand::Merge(merge)) = &args.command {
        return run_merge(merge, out);
    }
    let config = args.config()?;
    let to_stdout = args.report.as_deref() == Some(Path::new("-"));
    if let Some(path) = args.report.as_deref().filter(|_| !to_stdout) {
        check_writable(path)?;
    }
    if let Some(hint) = streams_hint(config.shard.range(config.nodes).len(), config.connections) {
        log(err, &args, tracing::Level::WARN, &hint)?;
    }
    tokio::pin!(shutdown);
    if let Some(at) = args.start_at {
        let wait = until_start(at, SystemTime::now())?;
        let when = humantime::format_rfc3339_millis(at).to_string();
        let line = start_line(config.shard, &when, wait);
        let level = if wait.is_ok() {
            tracing::Level::INFO
        } else {
            tracing::Level::WARN
        };
        log(err, &args, level, &line)?;
        if let Ok(wait) = wait {
            tokio::select! {
                _ = &mut shutdown => return Ok(()),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
    without_huge_pages();
    let fleet = Fleet::start(config)?;
    let deadline = async {
        match args.duration {
            Some(duration) => tokio::time::sleep(duration).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    let period = Duration::try_from_secs_f64(args.progress)
        .ok()
        .filter(|p| !p.is_zero());
    let mut ticks = tokio::time::interval(period.unwrap_or(Duration::from_secs(3600)));
    ticks.tick().await;
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            _ = &mut deadline => break,
            _ = ticks.tick() => if period.is_some() {
                let progress = fleet.report().progress_line();
                log(err, &args, tracing::Level::INFO, &progress)?;
            },
        }
    }
    let fleet = fleet.stopped().await;
    let summary = fleet.report();
    let mut written = Ok(());
    if let Some(path) = &args.report {
        let report = fleet.run_report(|run| {
            run.start_at_unix_ms = args.start_at.map(unix_ms);
            run.duration_ms = args.duration.map(|d| d.as_millis() as u64);
        });
        if to_stdout {
            writeln!(out, "{}", encode(&report)?)?;
        } else {
            written = write_report(path, &report);
        }
    }
    // The summary whatever became of the file: it is all that is left of the run then.
    print_summary(&summary, args.output, if to_stdout { err } else { out })?;
    written.map_err(|e| {
        ClientError::fleet_report(format!(
            "{}; the run's summary is printed; its raw samples are lost",
            crate::error::chain(&e)
        ))
    })
}

/// `--report FILE` can be written where [`write_report`] will write it (a file beside it,
/// then renamed), checked before the run: a mistyped path must not cost a whole run.
fn check_writable(path: &Path) -> Result<(), ClientError> {
    let refused = |why: &dyn std::fmt::Display| {
        ClientError::fleet_report(format!(
            "--report {}: cannot write the report there: {why}; nothing was run",
            path.display()
        ))
    };
    if path.is_dir() {
        return Err(refused(&"is a directory; give a file name"));
    }
    let temp = temp_path(path);
    std::fs::File::create(&temp).map_err(|e| refused(&e))?;
    std::fs::remove_file(&temp).map_err(|e| refused(&e))
}

/// Turns transparent huge pages off for this process. Every HTTP/2 frame the nodes receive
/// (up to 1 MiB) lands in a fresh buffer that lives until its node has read it; the allocator
/// hands the freed memory back to the kernel soon after, so the next frames fault it in again,
/// and with huge pages each fault zeroes 2 MiB however little of it a frame fills. A profile
/// showed a fifth of the fleet's CPU in that zeroing (docs/performance.md). Best effort: a
/// kernel without the setting costs only the difference.
fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

fn log(
    err: &mut dyn Write,
    args: &FleetArgs,
    level: tracing::Level,
    message: &str,
) -> Result<(), ClientError> {
    let line = xdsloop_log::line(args.log_format, level, LOG_TARGET, None, message);
    writeln!(err, "{line}")?;
    Ok(())
}

/// How long to wait for `--start-at`, or how late it is.
fn until_start(at: SystemTime, now: SystemTime) -> Result<Result<Duration, Duration>, ClientError> {
    match at.duration_since(now) {
        Ok(wait) if wait > START_AT_HORIZON => Err(ClientError::Argument(format!(
            "--start-at is {:.0} hours from now; give a time within a day (Unix seconds, \
             not milliseconds)",
            wait.as_secs_f64() / 3600.0
        ))),
        Ok(wait) => Ok(Ok(wait)),
        Err(late) => Ok(Err(late.duration())),
    }
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

fn print_summary(
    report: &FleetReport,
    format: Format,
    out: &mut dyn Write,
) -> Result<(), ClientError> {
    match format {
        Format::Text => write!(out, "{}", report.text())?,
        Format::Json => {
            let json = serde_json::to_string_pretty(report)
                .map_err(|e| ClientError::output_because("the fleet's summary", e))?;
            writeln!(out, "{json}")?;
        }
    }
    out.flush()?;
    Ok(())
}

fn encode(report: &RunReport) -> Result<String, ClientError> {
    serde_json::to_string(report)
        .map_err(|e| ClientError::output_because("the fleet report as JSON", e))
}

/// Writes next to `path` and renames into place: a collector never reads half a report.
fn write_report(path: &Path, report: &RunReport) -> Result<(), ClientError> {
    let failed = |e: std::io::Error| {
        ClientError::fleet_report_because(format!("cannot write the report {}", path.display()), e)
    };
    let temp = temp_path(path);
    std::fs::write(&temp, encode(report)? + "\n").map_err(failed)?;
    std::fs::rename(&temp, path).map_err(failed)
}

/// Where [`write_report`] writes before renaming into `path`.
fn temp_path(path: &Path) -> PathBuf {
    let mut temp = path.as_os_str().to_owned();
    temp.push(".tmp");
    PathBuf::from(temp)
}

/// Reads one report file (or captured log).
pub fn read_report(path: &Path) -> Result<RunReport, ClientError> {
    let name = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ClientError::fleet_report_because(format!("cannot read {name}"), e))?;
    RunReport::parse(&text).map_err(|e| ClientError::fleet_report(format!("{name}: {e}")))
}

/// `fleet merge`: the merged summary on `out`, the merged report in `--report`.
fn run_merge(args: &MergeArgs, out: &mut dyn Write) -> Result<(), ClientError> {
    let reports = (args.reports.iter())
        .map(|path| {
            let report = read_report(path)?;
            let name = path.display().to_string();
            Ok(Named { name, report })
        })
        .collect::<Result<Vec<_>, ClientError>>()?;
    let count = reports.len();
    let merged = merge::merge(reports).map_err(ClientError::fleet_report)?;
    if let Some(path) = &args.report {
        write_report(path, &merged)?;
    }
    let summary = FleetReport::summarize(&merged);
    if args.output == Format::Text {
        let run = &merged.run;
        let types: Vec<&str> = run.types.iter().map(|t| type_url::short_name(t)).collect();
        let reports = if count == 1 { "report" } else { "reports" };
        writeln!(
            out,
            "merged {count} shard {reports} of one run: {} nodes, {}, types {}, server {}",
            run.nodes,
            run.mode,
            types.join(","),
            run.server
        )?;
    }
    print_summary(&summary, args.output, out)
}

/// What a run waiting for `--start-at` (`when`) says: the wait, or how late it is. Only a
/// sharded run speaks of shards.
fn start_line(shard: Shard, when: &str, wait: Result<Duration, Duration>) -> String {
    let sharded = shard != Shard::WHOLE;
    let who = if sharded {
        format!("shard {shard}: ")
    } else {
        String::new()
    };
    match wait {
        Ok(wait) => format!("{who}opening streams at {when} (in {wait:.1?})"),
        Err(late) if sharded => format!(
            "{who}--start-at {when} passed {late:.1?} ago; opening streams now (later than the \
             shards that started on time)"
        ),
        Err(late) => format!("--start-at {when} passed {late:.1?} ago; opening streams now"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sharded_run_speaks_of_shards_when_it_starts_late() {
        let when = "2030-01-01T12:00:00.000Z";
        let late = Err(Duration::from_secs(3));
        let whole = start_line(Shard::WHOLE, when, late);
        assert_eq!(
            whole,
            "--start-at 2030-01-01T12:00:00.000Z passed 3.0s ago; opening streams now"
        );
        let shard: Shard = "1/4".parse().unwrap();
        let sharded = start_line(shard, when, late);
        assert!(sharded.starts_with("shard 1/4: --start-at"), "{sharded}");
        assert!(
            sharded.ends_with("now (later than the shards that started on time)"),
            "{sharded}"
        );
        let on_time = start_line(Shard::WHOLE, when, Ok(Duration::from_secs(2)));
        assert_eq!(on_time, format!("opening streams at {when} (in 2.0s)"));
    }

    #[test]
    fn start_at_reads_rfc3339_with_any_offset_and_unix_seconds() {
        let utc = parse_start_at("2030-01-01T12:00:00Z").unwrap();
        assert_eq!(utc, UNIX_EPOCH + Duration::from_secs(1_893_499_200));
        assert_eq!(parse_start_at("1893499200").unwrap(), utc);
        assert_eq!(parse_start_at("2030-01-01T13:00:00+01:00").unwrap(), utc);
        assert_eq!(parse_start_at("2030-01-01T07:30:00-04:30").unwrap(), utc);
        let half = parse_start_at("1893499200.5").unwrap();
        assert_eq!(half, utc + Duration::from_millis(500));
        let error = parse_start_at("tomorrow").unwrap_err();
        assert!(error.contains("expected RFC 3339"), "{error}");
        assert!(parse_start_at("2030-01-01T12:00:00+1:00").is_err());
        // Not a panic where the offset's place falls inside a character.
        assert!(parse_start_at("北京x").is_err());
        assert!(parse_start_at("2030-01-01T12:00:00北京").is_err());
    }

    #[test]
    fn a_start_in_the_past_starts_now_and_one_days_away_is_refused() {
        let now = UNIX_EPOCH + Duration::from_secs(1_893_499_200);
        let soon = now + Duration::from_secs(90);
        assert_eq!(until_start(soon, now).unwrap(), Ok(Duration::from_secs(90)));
        let past = now - Duration::from_secs(3);
        assert_eq!(until_start(past, now).unwrap(), Err(Duration::from_secs(3)));
        let millis = UNIX_EPOCH + Duration::from_secs(1_893_499_200_000);
        let error = until_start(millis, now).unwrap_err().to_string();
        assert!(error.contains("not milliseconds"), "{error}");
    }

    #[test]
    fn shard_flags_parse_and_a_merge_takes_no_run_flags() {
        let args = FleetArgs::try_parse_from(["fleet", "--nodes", "10", "--shard", "3/4"]).unwrap();
        let config = args.config().unwrap();
        assert_eq!((config.nodes, config.shard.to_string()), (10, "3/4".into()));
        assert_eq!(config.connections, 2, "shard 3/4 of 10 has 2 nodes");
        let error = FleetArgs::try_parse_from(["fleet", "--shard", "4/4"]).unwrap_err();
        assert!(error.to_string().contains("out of range"), "{error}");
        let old = FleetArgs::try_parse_from(["fleet", "--clients", "7"]).unwrap();
        assert_eq!(old.nodes, 7);
        let merge = FleetArgs::try_parse_from(["fleet", "merge", "a.json", "b.json"]).unwrap();
        assert!(matches!(merge.command, Some(FleetCommand::Merge(m)) if m.reports.len() == 2));
        assert!(
            FleetArgs::try_parse_from(["fleet", "merge"]).is_err(),
            "needs reports"
        );
        assert!(FleetArgs::try_parse_from(["fleet", "--nodes", "5", "merge", "a"]).is_err());
    }

    #[test]
    fn fleet_warns_above_the_servers_default_streams_per_connection() {
        assert_eq!(streams_hint(32_768, 8), None, "4096 each");
        let hint = streams_hint(40_000, 8).unwrap();
        assert!(hint.contains("5000 streams per connection"), "{hint}");
        assert!(hint.contains("--connections 10"), "{hint}");
        assert_eq!(streams_hint(10, 1), None);
    }
}
