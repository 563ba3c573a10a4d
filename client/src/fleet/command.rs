//! `xdsloop-client fleet`: flags, a progress line while it runs, the report at the end.

use std::future::Future;
use std::io::Write;
use std::time::Duration;

use clap::Parser;
use xdsloop_log::LogFormat;
use xdsloop_proto::type_url;

use super::{DEFAULT_CONNECTIONS, Fleet, FleetConfig};
use crate::cli::LOG_TARGET;
use crate::cli::output::Format;
use crate::cli::tls::TlsArgs;
use crate::config::DEFAULT_MAX_MESSAGE_BYTES;
use crate::config::Mode;
use crate::error::ClientError;

/// Simulates N Envoy-like nodes against any ADS server: CDS wildcard, EDS for the clusters seen,
/// optionally LDS/RDS; every response ACKed. Prints a progress line (stderr) while it runs and
/// a per-version report (stdout) at the end: nodes, time to first config, time to converge,
/// NACKs, reconnects, bytes.
#[derive(Debug, Parser)]
#[command(
    name = "xdsloop-client fleet",
    version,
    after_help = "The fleet neither narrates nor records its streams (it is built to be cheap per \
                  node): to follow the loop step by step, or record it as a transcript, run one \
                  client with `xdsloop-client --explain` or `--record FILE`."
)]
pub struct FleetArgs {
    /// Server address (`host:port`, `http://host:port`, or `https://host:port` with --tls-ca).
    #[arg(long, default_value = "127.0.0.1:18000")]
    pub server: String,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Number of simulated nodes.
    #[arg(long, default_value_t = 100)]
    pub clients: usize,
    /// Use Delta (incremental) ADS instead of State-of-the-World.
    #[arg(long)]
    pub delta: bool,
    /// HTTP/2 connections the nodes share (default: min(8, clients); `--connections N` = one
    /// each). Servers that cap concurrent streams per connection need enough of them.
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
    pub fn config(&self) -> Result<FleetConfig, ClientError> {
        let mut config = FleetConfig::new(self.server.clone(), self.clients);
        config.mode = if self.delta { Mode::Delta } else { Mode::Sotw };
        config.connections = self
            .connections
            .unwrap_or(DEFAULT_CONNECTIONS.min(self.clients));
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

/// Runs the fleet until `--duration` or `shutdown`; progress lines go to `err`, the report to
/// `out`.
pub async fn run(
    args: FleetArgs,
    shutdown: impl Future<Output = ()>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), ClientError> {
    let config = args.config()?;
    if let Some(hint) = streams_hint(config.nodes, config.connections) {
        let line = xdsloop_log::line(
            args.log_format,
            tracing::Level::WARN,
            LOG_TARGET,
            None,
            &hint,
        );
        writeln!(err, "{line}")?;
    }
    let fleet = Fleet::start(config)?;
    let deadline = async {
        match args.duration {
            Some(duration) => tokio::time::sleep(duration).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(shutdown, deadline);
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
                let level = tracing::Level::INFO;
                let line = xdsloop_log::line(args.log_format, level, LOG_TARGET, None, &progress);
                writeln!(err, "{line}")?;
            },
        }
    }
    let report = fleet.stop().await;
    match args.output {
        Format::Text => write!(out, "{}", report.text())?,
        Format::Json => {
            let json = serde_json::to_string_pretty(&report)
                .map_err(|e| ClientError::Output(e.to_string()))?;
            writeln!(out, "{json}")?;
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_warns_above_the_servers_default_streams_per_connection() {
        assert_eq!(streams_hint(32_768, 8), None, "4096 each");
        let hint = streams_hint(40_000, 8).unwrap();
        assert!(hint.contains("5000 streams per connection"), "{hint}");
        assert!(hint.contains("--connections 10"), "{hint}");
        assert_eq!(streams_hint(10, 1), None);
    }
}
