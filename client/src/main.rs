use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use xdsloop_client::ClientError;
use xdsloop_client::cli::{self, Args};
use xdsloop_client::fleet::cli::{self as fleet_cli, FleetArgs};

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    // `fleet` is a separate mode with its own flags; everything else is the single client.
    if std::env::args().nth(1).as_deref() == Some("fleet") {
        let args = FleetArgs::parse_from(std::env::args().skip(1));
        init_tracing();
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        let result = fleet_cli::run(args, ctrl_c(), &mut out, &mut err).await;
        return exit_code("xdsloop-client fleet", result);
    }
    let args = Args::parse();
    init_tracing();
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let result = cli::run(args, ctrl_c(), &mut out, &mut err).await;
    exit_code("xdsloop-client", result)
}

/// Logs go to stderr (stdout carries the update lines); quiet unless `RUST_LOG` says otherwise.
fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
}

async fn ctrl_c() {
    let _ = tokio::signal::ctrl_c().await;
}

fn exit_code(program: &str, result: Result<(), ClientError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: {e}");
            ExitCode::FAILURE
        }
    }
}
