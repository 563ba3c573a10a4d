//! The `xdsloop-client` command line: flags, the subscriptions they mean, and the print loop.

pub mod explain;
pub(crate) mod output;
pub mod record;
pub(crate) mod run;
pub(crate) mod tls;

pub use run::run;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use xdsloop_log::LogFormat;
use xdsloop_proto::type_url;
use xdsloop_transcript::terms::Lang;

use self::output::Format;
use self::tls::TlsArgs;
use crate::config::Validator;
use crate::config::{ClientConfig, ReceivedReports};
use crate::config::{DEFAULT_MAX_MESSAGE_BYTES, Source};
use crate::core::watch_map::Interest;
use crate::error::ClientError;

/// The `target` of the stderr lines the CLI writes itself (connection news, fleet progress,
/// the error that ends it), shaped like the log lines around them by [`xdsloop_log::line`].
pub const LOG_TARGET: &str = "xdsloop_client";

/// Envoy-style xDS client: subscribes over ADS (or per-type gRPC, REST polling, a watched file),
/// applies, ACKs or NACKs, reconnects, and prints one line per update (or, with --explain, one
/// per step of the loop).
#[derive(Debug, Parser)]
#[command(
    name = "xdsloop-client",
    version = env!("XDSLOOP_VERSION"),
    after_help = "Follow the loop step by step: xdsloop-client --explain (docs/tutorial.md walks \
                  through it)\n\
                  Fleet mode (N simulated nodes, a load report): xdsloop-client fleet --help\n\
                  Conformance suite (judges any ADS server): xdsloop-client check --help\n\
                  Transcripts (print one, diff two): xdsloop-client transcript --help"
)]
pub struct Args {
    /// Server address (`host:port`, `http://host:port`, or `https://host:port` with --tls-ca).
    #[arg(long, default_value = "127.0.0.1:18000")]
    pub server: String,
    /// TLS toward the server (`--tls-ca`, `--tls-cert`, `--tls-key`).
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Show secret values (private keys, passwords, session ticket keys) in --dump; they are
    /// shown as `[redacted, N bytes]` otherwise.
    #[arg(long)]
    pub show_secrets: bool,
    /// Node id sent on the first request of every stream.
    #[arg(long, default_value = "xdsloop-client")]
    pub node_id: String,
    /// Config source: ads, ads-delta, grpc (a stream per type), delta-grpc, rest (polling) or
    /// file (with --file).
    #[arg(long, value_name = "SOURCE", value_parser = clap::builder::PossibleValuesParser::new(crate::config::SOURCE_NAMES))]
    pub source: Option<String>,
    /// Shorthand for `--source ads-delta`.
    #[arg(long, conflicts_with = "source")]
    pub delta: bool,
    /// The DiscoveryResponse file the file source watches (implies `--source file`).
    #[arg(long, value_name = "PATH")]
    pub file: Option<std::path::PathBuf>,
    /// REST: time between polls of each type.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    pub refresh_delay: Duration,
    /// REST: how long one poll may take before it counts as failed.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    pub request_timeout: Duration,
    /// Types to subscribe (cds, eds, lds, rds, ... or type URLs). Default: lds,cds with
    /// dependencies followed.
    #[arg(long, value_delimiter = ',')]
    pub types: Vec<String>,
    /// Explicit names for a type, e.g. `--names eds=web,api` (repeatable). Other types are
    /// wildcard.
    #[arg(long, value_name = "TYPE=a,b")]
    pub names: Vec<String>,
    /// Follow LDS → RDS and CDS → EDS references (always on without --types).
    #[arg(long)]
    pub follow_deps: bool,
    /// Output format for update lines and --dump.
    #[arg(long, value_enum, default_value = "text")]
    pub output: Format,
    /// Exit after this many updates (ACK or NACK, or resources expiring).
    #[arg(long, value_name = "N")]
    pub exit_after: Option<u64>,
    /// Narrate the loop as it happens instead of printing one line per update: one line per
    /// step (stream established, subscribe, push, apply + ACK, reject + NACK, resubscribe after
    /// reconnect, stream closed), each with the Envoy call that takes that step. Connection
    /// news is part of the story (stdout). Streamed sources only; text only.
    #[arg(long, conflicts_with = "dump")]
    pub explain: bool,
    /// The language of --explain: `en`, or `zh` for the words and order of the Chinese course
    /// lesson xdsloop grew from (建流 → 订阅 → 下发 → 应用 → 确认, or 拒绝 (NACK, 保留旧配置);
    /// 断线 → 重连). Envoy's calls keep their names; docs/zh/lab-day12.md follows the lesson.
    #[arg(long, value_enum)]
    pub lang: Option<Lang>,
    /// Record this client's side of the loop as a transcript, one JSON line per stream opened
    /// or closed, request sent and response received (docs/transcripts.md). Read it with
    /// `xdsloop-client transcript print FILE`. Streamed sources only.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// With --record: add every received resource itself (proto3 JSON, secret values
    /// redacted) to the transcript.
    #[arg(long, requires = "record")]
    pub record_resources: bool,
    /// NACK any response holding this resource, e.g. `--reject cds:web` (repeatable).
    #[arg(long, value_name = "TYPE:NAME")]
    pub reject: Vec<String>,
    /// Print only the applied resources (YAML, or JSON with --output json) once synced, and
    /// exit.
    #[arg(long)]
    pub dump: bool,
    /// How long a requested resource may take before it is reported not found.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15s")]
    pub not_found_timeout: Duration,
    /// gRPC message size limit in bytes, both directions.
    #[arg(long, default_value_t = DEFAULT_MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
    /// Serve this client's Client Status Discovery Service (what it holds, ACKED / NACKED /
    /// REQUESTED / DOES_NOT_EXIST per resource) on ADDR, e.g. `127.0.0.1:0`; the bound
    /// address is printed on stderr (`CSDS on ADDR`).
    #[arg(long, value_name = "ADDR")]
    pub csds: Option<std::net::SocketAddr>,
    /// stderr (connection news and logs): `text`, coloured only on a terminal and never with
    /// NO_COLOR set, or `json`, one object per line for machines.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

/// What to subscribe to.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// Follow LDS → RDS and CDS → EDS references (C12).
    pub follow_deps: bool,
    /// The watches to start: each type with its names (or wildcard).
    pub watches: Vec<(String, Interest)>,
}

fn resolve(alias: &str) -> Result<String, ClientError> {
    type_url::resolve(alias).ok_or_else(|| ClientError::UnknownType(alias.to_string()))
}

/// Turns `--types`, `--names` and `--follow-deps` into watches.
pub fn plan(args: &Args) -> Result<Plan, ClientError> {
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for spec in &args.names {
        let (kind, list) = spec
            .split_once('=')
            .ok_or_else(|| ClientError::Argument(format!("--names {spec:?}: expected TYPE=a,b")))?;
        let list = list
            .split(',')
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        names.entry(resolve(kind)?).or_default().extend(list);
    }
    let mut types = args
        .types
        .iter()
        .map(|t| resolve(t))
        .collect::<Result<Vec<_>, _>>()?;
    let mut follow_deps = args.follow_deps;
    if types.is_empty() && names.is_empty() {
        types = vec![
            type_url::LISTENER.to_string(),
            type_url::CLUSTER.to_string(),
        ];
        follow_deps = true;
    }
    types.extend(names.keys().cloned());
    types.sort_by_key(|t| (type_url::order(t), t.clone()));
    types.dedup();
    let parent_of = |child: &str| {
        [type_url::LISTENER, type_url::CLUSTER]
            .into_iter()
            .find(|p| crate::core::deps::child_of(p) == Some(child))
    };
    let mut watches = Vec::new();
    for t in &types {
        if let Some(list) = names.get(t) {
            watches.push((t.clone(), Interest::names(list.clone())));
        } else if follow_deps && parent_of(t).is_some_and(|p| types.iter().any(|x| x == p)) {
            // Dependency following decides these names.
        } else {
            watches.push((t.clone(), Interest::Wildcard));
        }
    }
    Ok(Plan {
        follow_deps,
        watches,
    })
}

/// `--source`, `--delta` and `--file` as one [`Source`].
pub fn source(args: &Args) -> Result<Source, ClientError> {
    let named = match (&args.source, args.delta) {
        (Some(name), _) => Some(name.as_str()),
        (None, true) => Some("ads-delta"),
        (None, false) => None,
    };
    match (named, &args.file) {
        (None | Some("file"), Some(path)) => Ok(Source::File(path.clone())),
        (Some(other), Some(_)) => Err(ClientError::Argument(format!(
            "--file goes with the file source, not {other}"
        ))),
        (Some(name), None) => Source::parse(name),
        (None, None) => Ok(Source::Ads),
    }
}

/// The language of `--explain`'s lines (English unless `--lang` says otherwise). `--lang`
/// alone prints nothing different, so it is refused with what it is for.
pub fn explain_lang(args: &Args) -> Result<Lang, ClientError> {
    match (args.lang, args.explain) {
        (None, _) => Ok(Lang::En),
        (Some(lang), true) => Ok(lang),
        (Some(lang), false) => Err(ClientError::Argument(format!(
            "--lang {} is the language of --explain's lines (en, or zh: 建流 → 订阅 → 下发 → \
             应用 → 确认); without --explain nothing is printed in it: add --explain",
            match lang {
                Lang::En => "en",
                Lang::Zh => "zh",
            }
        ))),
    }
}

/// `--reject TYPE:NAME` as a validator.
pub fn reject_validator(specs: &[String]) -> Result<Option<Validator>, ClientError> {
    if specs.is_empty() {
        return Ok(None);
    }
    let mut rules = Vec::new();
    for spec in specs {
        let (kind, name) = spec.split_once(':').ok_or_else(|| {
            ClientError::Argument(format!("--reject {spec:?}: expected TYPE:NAME"))
        })?;
        rules.push((resolve(kind)?, name.to_string(), spec.clone()));
    }
    Ok(Some(Arc::new(
        move |type_url: &str, name: &str, _: &[u8]| match rules
            .iter()
            .find(|(t, n, _)| t == type_url && n == name)
        {
            Some((_, _, spec)) => Err(format!("rejected by --reject {spec}")),
            None => Ok(()),
        },
    )))
}

/// The client's config from the flags and the plan.
pub fn client_config(args: &Args, plan: &Plan) -> Result<ClientConfig, ClientError> {
    let mut config = ClientConfig::new(args.server.clone(), args.node_id.clone());
    config.source = source(args)?;
    config.refresh_delay = args.refresh_delay;
    config.request_timeout = args.request_timeout;
    config.follow_deps = plan.follow_deps;
    config.validator = reject_validator(&args.reject)?;
    config.not_found_timeout = args.not_found_timeout;
    config.max_message_bytes = args.max_message_bytes;
    config.tls = args.tls.load()?;
    config.received_reports = following_the_loop(args, &config.source)?;
    Ok(config)
}

/// `--explain` and `--record` follow the loop on a stream; they need each response reported
/// as it arrives.
fn following_the_loop(args: &Args, source: &Source) -> Result<ReceivedReports, ClientError> {
    let flag = match (args.explain, &args.record) {
        (false, None) => return Ok(ReceivedReports::Off),
        (true, _) => "--explain",
        (false, Some(_)) => "--record",
    };
    if matches!(source, Source::Rest | Source::File(_)) {
        return Err(ClientError::Argument(format!(
            "{flag} follows the loop on a stream (ads, ads-delta, grpc, delta-grpc); the {} \
             source has none",
            source.name()
        )));
    }
    if args.explain && args.output == Format::Json {
        return Err(ClientError::Argument(
            "--explain prints text for people; for JSON lines record a transcript with \
             --record FILE"
                .into(),
        ));
    }
    Ok(if args.record_resources {
        ReceivedReports::Bodies
    } else {
        ReceivedReports::Names
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        Args::parse_from(["xdsloop-client"].iter().chain(extra))
    }

    #[test]
    fn default_plan_is_lds_and_cds_wildcard_following_dependencies() {
        let plan = plan(&args(&[])).unwrap();
        assert!(plan.follow_deps);
        let expected = vec![
            (type_url::CLUSTER.to_string(), Interest::Wildcard),
            (type_url::LISTENER.to_string(), Interest::Wildcard),
        ];
        assert_eq!(plan.watches, expected);
    }

    #[test]
    fn names_make_explicit_watches_and_dependents_are_left_to_following() {
        let plan = plan(&args(&[
            "--types",
            "lds,rds,cds,eds",
            "--follow-deps",
            "--names",
            "rds=r1",
        ]))
        .unwrap();
        let types: Vec<_> = plan
            .watches
            .iter()
            .map(|(t, i)| (type_url::short_name(t), i.clone()))
            .collect();
        assert_eq!(
            types,
            vec![
                ("cds", Interest::Wildcard),
                ("lds", Interest::Wildcard),
                ("rds", Interest::names(["r1"])),
            ]
        );
    }

    #[test]
    fn lang_is_english_unless_zh_is_asked_for_and_goes_with_explain() {
        assert_eq!(explain_lang(&args(&["--explain"])).unwrap(), Lang::En);
        let zh = args(&["--explain", "--lang", "zh"]);
        assert_eq!(explain_lang(&zh).unwrap(), Lang::Zh);
        assert!(Args::try_parse_from(["c", "--explain", "--lang", "fr"]).is_err());
        let alone = explain_lang(&args(&["--lang", "zh"]))
            .unwrap_err()
            .to_string();
        assert!(
            alone.contains("is the language of --explain's lines")
                && alone.contains("add --explain"),
            "{alone}"
        );
    }

    #[test]
    fn source_flags_map_to_one_source() {
        let source_of = |extra: &[&str]| source(&args(extra));
        assert_eq!(source_of(&[]).unwrap(), Source::Ads);
        assert_eq!(source_of(&["--delta"]).unwrap(), Source::AdsDelta);
        assert_eq!(
            source_of(&["--source", "delta-grpc"]).unwrap(),
            Source::DeltaGrpc
        );
        assert_eq!(source_of(&["--source", "rest"]).unwrap(), Source::Rest);
        assert_eq!(
            source_of(&["--file", "x.yaml"]).unwrap(),
            Source::File("x.yaml".into())
        );
        assert_eq!(
            source_of(&["--source", "file", "--file", "x.yaml"]).unwrap(),
            Source::File("x.yaml".into())
        );
        assert!(
            source_of(&["--source", "file"]).is_err(),
            "file needs --file"
        );
        assert!(source_of(&["--source", "grpc", "--file", "x"]).is_err());
        assert!(Args::try_parse_from(["c", "--source", "xds"]).is_err());
        assert!(Args::try_parse_from(["c", "--source", "ads", "--delta"]).is_err());
    }

    #[test]
    fn reject_flag_builds_a_validator_for_that_resource_only() {
        let validator = reject_validator(&["cds:web".into()]).unwrap().unwrap();
        assert!(
            validator(type_url::CLUSTER, "web", &[])
                .unwrap_err()
                .contains("--reject cds:web")
        );
        assert!(validator(type_url::CLUSTER, "api", &[]).is_ok());
        assert!(validator(type_url::ENDPOINT, "web", &[]).is_ok());
        assert!(reject_validator(&["nonsense".into()]).is_err());
    }
}
