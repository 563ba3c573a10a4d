//! `xdsloop-server`: parse flags, set up logging, run [`xdsloop_server::app`] until Ctrl-C or
//! SIGTERM.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use tracing::info;
use xdsloop_log::LogFormat;
use xdsloop_server::{
    app::{
        self, DEFAULT_LISTEN,
        flags::{ServeArgs, StatusArgs},
    },
    status::remote,
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
    let output = args.output.output();
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
    let config = cli.into_config();
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
