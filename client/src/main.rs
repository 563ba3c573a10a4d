use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use xdsloop_client::cli::{self, Args};

#[tokio::main]
async fn main() -> ExitCode {
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
