//! `xdsloop-server`: parse flags, set up logging, run [`xdsloop_server::app`] until Ctrl-C or
//! SIGTERM.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, time::Duration};

use clap::{Args, Parser, Subcommand, ValueEnum};
use tracing::info;
use tracing_subscriber::EnvFilter;
use xdsloop_server::{
    admin,
    app::{self, Config, DEFAULT_LISTEN},
    fixtures,
    service::DEFAULT_MAX_MESSAGE_BYTES,
    status::fetch::{self, Output},
};

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Start-up failures users can fix (bad directory, descriptor set or address).
const EXIT_USAGE: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "xdsloop-server",
    version,
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
                  {version_info, resources}); files under nodes/<node-id>/ are served to that node only.",
    after_help = "Example:\n  xdsloop-server --fixtures fixtures/demo --listen 127.0.0.1:18000\n  \
                  xdsloop-server status\n\n\
                  Logs go to stderr; set RUST_LOG (default: info), e.g. RUST_LOG=xdsloop_server=debug.",
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show what every connected client ACKed, NACKed and is still waiting for, read from a
    /// running server's admin endpoint: one row per node, stream and type.
    Status(StatusArgs),
}

#[derive(Debug, Args)]
struct StatusArgs {
    /// The server's admin address (its --admin).
    #[arg(long, value_name = "ADDR", default_value = admin::DEFAULT_ADDR)]
    server: String,
    /// `text`: a table for a terminal; `json`: the raw /status document.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output: OutputFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutputFormat {
    Text,
    Json,
}

/// `--admin ADDR`, or `--admin off`.
#[derive(Debug, Clone, Copy)]
struct AdminListen(Option<SocketAddr>);

fn admin_listen(value: &str) -> Result<AdminListen, String> {
    if matches!(value, "off" | "none") {
        return Ok(AdminListen(None));
    }
    let addr = value
        .parse()
        .map_err(|e| format!("{e} (expected HOST:PORT or `off`)"))?;
    Ok(AdminListen(Some(addr)))
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Fixture directory, watched recursively and reloaded on every change.
    #[arg(long, value_name = "DIR", required = true)]
    fixtures: Option<PathBuf>,
    /// Address to serve xDS on: gRPC (h2c) and REST-JSON (HTTP/1.1); port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// A FileDescriptorSet (protoc --include_imports -o FILE) with your own resource types.
    /// Repeat for several.
    #[arg(long = "descriptor-set", value_name = "FILE")]
    descriptor_sets: Vec<PathBuf>,
    /// Quiet time after the last file change before reloading, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    debounce_ms: u64,
    /// Largest fixture file read, in bytes; a larger one is a rejected reload naming the file.
    /// The default (16 MiB, about 100,000 small clusters) is far above a hand-written or
    /// generated fixture file: it stops a pasted blob or a runaway generator from holding up
    /// every later edit while it decodes.
    #[arg(long, value_name = "N", default_value_t = fixtures::DEFAULT_MAX_FILE_BYTES)]
    max_fixture_bytes: u64,
    /// Largest gRPC message sent or accepted, in bytes (gRPC's usual default is 4 MiB).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_MESSAGE_BYTES)]
    max_message_bytes: usize,
    /// Admin HTTP endpoint (/status, /snapshot, /healthz), or `off`. It has no authentication:
    /// keep it on loopback.
    #[arg(long, value_name = "ADDR", default_value = admin::DEFAULT_ADDR, value_parser = admin_listen)]
    admin: AdminListen,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("xdsloop-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match cli.command {
        Some(Command::Status(args)) => runtime.block_on(status(args)),
        None => runtime.block_on(run(cli.serve)),
    };
    // Everything that matters has stopped by now. What may remain is a fixture decode on a
    // blocking thread, which only reads: dropping the runtime would wait for it.
    runtime.shutdown_timeout(Duration::from_millis(500));
    code
}

async fn status(args: StatusArgs) -> ExitCode {
    let output = match args.output {
        OutputFormat::Text => Output::Text,
        OutputFormat::Json => Output::Json,
    };
    match fetch::command(&args.server, output).await {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("xdsloop-server status: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: ServeArgs) -> ExitCode {
    let config = Config {
        fixtures: cli
            .fixtures
            .expect("clap requires --fixtures without a subcommand"),
        listen: cli.listen,
        descriptor_sets: cli.descriptor_sets,
        debounce: Duration::from_millis(cli.debounce_ms),
        max_fixture_bytes: cli.max_fixture_bytes,
        max_message_bytes: cli.max_message_bytes,
        admin: cli.admin.0,
    };
    let running = match app::start(config).await {
        Ok(running) => running,
        Err(e) => {
            eprintln!("xdsloop-server: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    println!("xdsloop-server listening on {}", running.addr);
    if let Some(admin) = running.admin_addr {
        println!("admin: http://{admin}/status (or `xdsloop-server status --server {admin}`)");
    }
    shutdown_signal().await;
    info!("shutting down");
    match running.shutdown().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xdsloop-server: {e}");
            ExitCode::FAILURE
        }
    }
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
