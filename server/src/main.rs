//! `xdsloop-server`: parse flags, set up logging, run [`xdsloop_server::app`] until Ctrl-C or
//! SIGTERM.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, time::Duration};

use clap::{Args, Parser, Subcommand, ValueEnum};
use tracing::info;
use xdsloop_log::LogFormat;
use xdsloop_server::{
    ConformanceMode,
    app::DEFAULT_MAX_MESSAGE_BYTES,
    app::Placement,
    app::Recording,
    app::{
        self, Config, DEFAULT_LISTEN,
        flags::{RemoteArgs, SecurityArgs},
    },
    fixtures,
    status::remote::{self, Output},
};

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The `target` of the lines this binary writes itself.
const LOG_TARGET: &str = "xdsloop_server";

/// Start-up failures users can fix (bad directory, descriptor set or address).
const EXIT_USAGE: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "xdsloop-server",
    version = env!("XDSLOOP_VERSION"),
    about = "Mock xDS control plane: serves a directory of fixture files over ADS (SotW and Delta) \
             and hot-pushes every edit to connected clients.",
    long_about = "Mock xDS control plane: serves a directory of fixture files over the Envoy v3 \
                  Aggregated Discovery Service (State-of-the-World and Delta) and hot-pushes every \
                  edit, with versions, nonces and ACK/NACK tracking, to connected clients (Envoy, \
                  proxyless gRPC, xdsloop-client). The same port serves the per-type services \
                  (CDS, EDS, LDS, RDS, SRDS, VHDS, SDS, RTDS, ECDS: SotW, Delta and unary Fetch) \
                  and Envoy's REST-JSON polling (POST /v3/discovery:clusters and the like, \
                  HTTP/1.1).\n\n\
                  Fixtures: every *.yaml/*.yml/*.json file under DIR holds Envoy resources in the \
                  proto3 JSON mapping, each with an \"@type\" (or a DiscoveryResponse-shaped \
                  {version_info, resources}); files under nodes/<node-id>/ are served to that node only. \
                  A resource wrapped in envoy.service.discovery.v3.Resource with a ttl is kept \
                  alive by heartbeats; xdstp:// names are served with sorted context parameters.\n\n\
                  The admin routes (GET /status, /snapshot, /healthz, the live page: open \
                  http://ADDR/ in a browser, and gRPC CSDS: \
                  envoy.service.status.v3.ClientStatusDiscoveryService) are on the xDS port too, so \
                  several servers run side by side with nothing more than their own --listen \
                  (127.0.0.1:0 picks a free port). The first line on stdout says where it \
                  listens: \"xdsloop-server listening on ADDR\".",
    after_help = "Examples:\n  \
                  xdsloop-server --fixtures fixtures/demo              # xDS and admin on 127.0.0.1:18000\n  \
                  xdsloop-server status                                # reads 127.0.0.1:18000/status\n  \
                  xdsloop-server --fixtures DIR --record run.jsonl     # a transcript of every stream\n  \
                  xdsloop-server --fixtures DIR --scenario faults.yaml # misbehave on purpose\n  \
                  xdsloop-server transcript diff a.jsonl b.jsonl       # compare two recordings\n  \
                  xdsloop-server --replay run.jsonl                    # serve a recording again\n  \
                  xdsloop-server --fixtures DIR --listen 127.0.0.1:0   # a free port, printed on stdout\n  \
                  xdsloop-server --fixtures DIR --listen 0.0.0.0:18000 --admin 127.0.0.1:18001\n  \
                  xdsloop-server --fixtures DIR --tls-cert srv.pem --tls-key srv.key --tls-client-ca ca.pem\n  \
                  xdsloop-server status --server localhost:18000 --tls-ca ca.pem --admin-token \"$T\"\n\n\
                  docs/security.md: what TLS, the admin access rule, secret redaction and the limits \
                  protect, and what they do not.\n\n\
                  Logs go to stderr, coloured only on a terminal and never with NO_COLOR set \
                  (--log-format json: one JSON object per line); set RUST_LOG (default: info), \
                  e.g. RUST_LOG=xdsloop_server=debug.",
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
    /// stderr: `text`, coloured only on a terminal and never with NO_COLOR set, or `json`, one
    /// object per line (timestamp, level, target, message and the event's fields).
    #[arg(long, value_enum, global = true, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show what every connected client ACKed, NACKed and is still waiting for, read from a
    /// running server's admin endpoint: one row per node, stream and type.
    Status(StatusArgs),
    /// Print a recorded transcript, or compare two ignoring what varies between runs.
    Transcript(xdsloop_transcript::cli::Args),
    /// Work with scenario files (docs/scenarios.md) without a server.
    #[command(subcommand)]
    Scenario(ScenarioCommand),
}

#[derive(Debug, Subcommand)]
enum ScenarioCommand {
    /// Read FILE as `--scenario FILE` and `PUT /scenario` would, and list its rules; a file
    /// the server would refuse is reported as FILE:line:col: what is wrong (exit status 2).
    Check {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

#[derive(Debug, Args)]
struct StatusArgs {
    /// The server's address: its --listen (the admin routes are on the xDS port), or its
    /// --admin ADDR if it was started with one.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    server: String,
    /// `text`: a table for a terminal; `json`: the raw /status document.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output: OutputFormat,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutputFormat {
    Text,
    Json,
}

/// `--admin ADDR`, or `--admin off`.
fn admin_placement(value: &str) -> Result<Placement, String> {
    if matches!(value, "off" | "none") {
        return Ok(Placement::Off);
    }
    let addr = value
        .parse()
        .map_err(|e| format!("{e} (expected HOST:PORT or `off`)"))?;
    Ok(Placement::Listener(addr))
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Fixture directory, watched recursively and reloaded on every change.
    #[arg(long, value_name = "DIR", required_unless_present = "replay")]
    fixtures: Option<PathBuf>,
    /// Address to serve xDS on: gRPC (HTTP/2), REST-JSON (HTTP/1.1) and the admin routes; port 0
    /// picks a free port (printed on stdout).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// A FileDescriptorSet (protoc --include_imports -o FILE) with your own resource types.
    /// Repeat for several.
    #[arg(long = "descriptor-set", value_name = "FILE")]
    descriptor_sets: Vec<PathBuf>,
    /// How long a burst of file changes may stay quiet before it is reloaded, in milliseconds.
    /// A save whose fixture files are all complete (each closed after writing, or renamed into
    /// place) is reloaded after a 10 ms settle window (or MS, if smaller); MS is the wait after
    /// the last change while a file is still open for writing, was deleted or renamed away (an
    /// editor may be writing its replacement), a new directory appeared, or events were lost. A
    /// directory that never goes quiet is still reloaded every 20 x MS (at least 1 s).
    #[arg(long, value_name = "MS", default_value_t = 100)]
    debounce_ms: u64,
    /// Largest fixture file read, in bytes; a larger one is a rejected reload naming the file.
    /// The default (16 MiB, about 100,000 small clusters) is far above a hand-written or
    /// generated fixture file: it stops a pasted blob or a runaway generator from holding up
    /// every later edit while it decodes.
    #[arg(long, value_name = "N", default_value_t = fixtures::DEFAULT_MAX_FILE_BYTES,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_fixture_bytes: u64,
    /// Largest gRPC response sent, in bytes (gRPC's usual default of 4 MiB is too small for
    /// large CDS and EDS sets). Requests have their own limit, --max-request-bytes.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_MESSAGE_BYTES)]
    max_message_bytes: usize,
    /// Serve the admin routes (/status, /snapshot, /healthz, the page /, CSDS) on a listener of
    /// their own at ADDR instead of the xDS port, or `off` for none. Default: on the xDS port.
    /// Either way all but /healthz answer only loopback peers, --admin-token and verified
    /// client certificates.
    #[arg(long, value_name = "ADDR|off", value_parser = admin_placement)]
    admin: Option<Placement>,
    /// Events each stream keeps for /status (its `recent` list: the last requests, responses
    /// and how it ended, also for recently closed streams); 0 keeps none. Always 0 with
    /// `--admin off`.
    #[arg(long, value_name = "N", default_value_t = app::DEFAULT_TIMELINE_DEPTH)]
    timeline_depth: usize,
    /// Write a transcript to FILE: one JSON line per stream opened or closed and per request
    /// and response on every stream (names, versions, nonces, ACK/NACK, error_detail), as
    /// docs/transcripts.md describes. Read it with `xdsloop-server transcript print FILE`.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// With --record: also write every resource sent, as proto3 JSON, in each response line
    /// (secret values redacted).
    #[arg(long, requires = "record")]
    record_resources: bool,
    /// Misbehave on purpose, as the rules in FILE say (YAML, docs/scenarios.md): delay, drop
    /// or corrupt responses, reuse nonces, close or reset streams, withhold or flap resources,
    /// push storms, an outage of the whole xDS port (connections refused for a while, e.g. when
    /// a client first asks for a resource). Watched like the fixtures: a bad edit is refused
    /// (FILE:line:col in the log and /status) and the rules in force stay. Also
    /// GET/PUT/DELETE /scenario on the admin routes.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    #[command(flatten)]
    security: SecurityArgs,
    /// Judge every client against the client rules of docs/protocol.md (C1, C4, C5, C10,
    /// C11, C12, C20) as it runs: each violation is logged with its evidence, counted per
    /// stream and shown in /status and transcripts. `off` turns the judge off.
    #[arg(long, value_enum, value_name = "on|off", default_value_t = Judging::On)]
    conformance: Judging,
    /// End a client's stream at its first violation, with FAILED_PRECONDITION naming the
    /// rule and the evidence (for client authors' CI: a violation fails loudly).
    #[arg(long, conflicts_with = "conformance")]
    strict: bool,
    /// Serve a recording instead of fixtures: a server transcript written with `--record FILE
    /// --record-resources`. Each stream is bound, at its first request, to the next recorded
    /// stream of the same node id and transport; each request must be the next one recorded
    /// for its type (nonce, ACK/NACK, version, names), and is answered with the responses
    /// recorded after it, nonces and versions as they were. A request that differs ends the
    /// stream with FAILED_PRECONDITION naming the recording's line, what it expected and what
    /// came (also in the log and /status `replay`). For reproducing a bug report offline.
    #[arg(long, value_name = "FILE", conflicts_with = "fixtures")]
    replay: Option<PathBuf>,
    /// With --replay: send each response as long after its request as the recorded server
    /// did (a push that came seconds after an ACK comes seconds after it again), rather than
    /// at once.
    #[arg(long, requires = "replay", conflicts_with = "fixtures")]
    replay_timing: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Judging {
    On,
    Off,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let format = cli.log_format;
    // notify logs its own bookkeeping when a watched directory goes (watch descriptors it can
    // no longer remove); the server says what that means for the fixtures itself.
    xdsloop_log::init(format, "info,notify=error");
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            fail(
                format,
                "xdsloop-server",
                &format!("cannot start the async runtime: {e}"),
            );
            return ExitCode::FAILURE;
        }
    };
    let code = match cli.command {
        Some(Command::Status(args)) => runtime.block_on(status(args, format)),
        Some(Command::Transcript(args)) => {
            xdsloop_transcript::cli::main(args, |e| fail(format, "xdsloop-server transcript", e))
        }
        Some(Command::Scenario(ScenarioCommand::Check { file })) => {
            match xdsloop_server::scenario::check_file(&file) {
                Ok(summary) => {
                    print!("{summary}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    fail(format, "xdsloop-server scenario check", &e);
                    ExitCode::from(EXIT_USAGE)
                }
            }
        }
        None => runtime.block_on(run(cli.serve, format)),
    };
    // Everything that matters has stopped by now. What may remain is a fixture decode on a
    // blocking thread, which only reads: dropping the runtime would wait for it.
    runtime.shutdown_timeout(Duration::from_millis(500));
    code
}

/// The error that ends the program, on stderr in the log format: not through `tracing`, so
/// `RUST_LOG` cannot hide it.
fn fail(format: LogFormat, program: &str, message: &dyn std::fmt::Display) {
    let message = message.to_string();
    eprintln!(
        "{}",
        xdsloop_log::error_line(format, LOG_TARGET, program, &message)
    );
}

async fn status(args: StatusArgs, format: LogFormat) -> ExitCode {
    let output = match args.output {
        OutputFormat::Text => Output::Text,
        OutputFormat::Json => Output::Json,
    };
    let access = match args.remote.access() {
        Ok(access) => access,
        Err(e) => {
            fail(format, "xdsloop-server status", &e);
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match remote::command_with(&args.server, output, &access).await {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            fail(format, "xdsloop-server status", &e);
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: ServeArgs, format: LogFormat) -> ExitCode {
    let mut config = Config::new(cli.fixtures.unwrap_or_default());
    config.listen = cli.listen;
    config.descriptor_sets = cli.descriptor_sets;
    config.debounce = Duration::from_millis(cli.debounce_ms);
    config.max_fixture_bytes = cli.max_fixture_bytes;
    config.max_message_bytes = cli.max_message_bytes;
    config.admin = cli.admin.unwrap_or_default();
    config.timeline_depth = cli.timeline_depth;
    config.record = cli.record.map(|path| Recording {
        path,
        resources: cli.record_resources,
    });
    config.scenario = cli.scenario;
    config.replay = cli.replay;
    config.replay_timing = cli.replay_timing;
    config.conformance = match (cli.conformance, cli.strict) {
        (Judging::Off, _) => ConformanceMode::Off,
        (Judging::On, true) => ConformanceMode::Strict,
        (Judging::On, false) => ConformanceMode::Report,
    };
    cli.security.apply(&mut config);
    let tls = config.tls.is_some();
    let running = match app::start(config).await {
        Ok(running) => running,
        Err(e) => {
            fail(format, "xdsloop-server", &e);
            return ExitCode::from(EXIT_USAGE);
        }
    };
    println!("xdsloop-server listening on {}", running.addr);
    if let Some(admin) = running.admin_addr {
        let scheme = if tls { "https" } else { "http" };
        println!(
            "admin: {scheme}://{admin}/status (or `{}`)",
            status_command(admin, tls)
        );
    }
    shutdown_signal().await;
    info!("shutting down");
    match running.shutdown().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            fail(format, "xdsloop-server", &e);
            ExitCode::FAILURE
        }
    }
}

/// The `status` command that reads this server: no flags at the default address.
fn status_command(admin: SocketAddr, tls: bool) -> String {
    let mut command = "xdsloop-server status".to_string();
    if admin.to_string() != DEFAULT_LISTEN {
        command.push_str(&format!(" --server {admin}"));
    }
    if tls {
        command.push_str(" --tls-ca CA_FILE");
    }
    command
}

/// Ctrl-C, or SIGTERM (how containers and process managers stop us).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

// A binary crate root looks for `mod tests` beside itself; the parser's tests live under
// `main/` so they do not read as a module of the library.
#[cfg(test)]
#[path = "main/tests.rs"]
mod tests;
