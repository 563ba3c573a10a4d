use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use xdsloop_client::cli::{self, Args};
use xdsloop_client::fleet::cli::{self as fleet_cli, FleetArgs};

#[tokio::main]
async fn main() -> ExitCode {
    // `fleet` is a separate mode with its own flags; everything else is the single client.
    if std::env::args().nth(1).as_deref() == Some("fleet") {
        return fleet(FleetArgs::parse_from(std::env::args().skip(1))).await;
    }
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    match cli::run(args, shutdown, &mut out, &mut err).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xdsloop-client: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn fleet(args: FleetArgs) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    match fleet_cli::run(args, shutdown, &mut out, &mut err).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xdsloop-client fleet: {e}");
            ExitCode::FAILURE
        }
    }
}
