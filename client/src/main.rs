use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use xdsloop_client::ClientError;
use xdsloop_client::check::command::{self as check_cli, CheckArgs};
use xdsloop_client::cli::log_format::{self, LogFormat};
use xdsloop_client::cli::{self, Args};
use xdsloop_client::fleet::command::{self as fleet_cli, FleetArgs};

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    // `fleet`, `check` and `transcript` are separate modes with their own flags; everything else is the
    // single client.
    if std::env::args().nth(1).as_deref() == Some("fleet") {
        let args = FleetArgs::parse_from(std::env::args().skip(1));
        let format = args.log_format;
        init_tracing(format);
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        let result = fleet_cli::run(args, ctrl_c(), &mut out, &mut err).await;
        return exit_code(format, "xdsloop-client fleet", result);
    }
    if std::env::args().nth(1).as_deref() == Some("transcript") {
        let argv = std::env::args_os().skip(1);
        return xdsloop_transcript::cli::main_from("xdsloop-client transcript", argv);
    }
    if std::env::args().nth(1).as_deref() == Some("check") {
        let args = CheckArgs::parse_from(std::env::args().skip(1));
        init_tracing(args.log_format);
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        return ExitCode::from(check_cli::run(args, ctrl_c(), &mut out, &mut err).await);
    }
    let args = Args::parse();
    let format = args.log_format;
    init_tracing(format);
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let result = cli::run(args, ctrl_c(), &mut out, &mut err).await;
    exit_code(format, "xdsloop-client", result)
}

/// Logs go to stderr (stdout carries the update lines); quiet unless `RUST_LOG` says otherwise.
fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("error"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => {
            let no_color = std::env::var_os("NO_COLOR");
            let colour = log_format::colour(std::io::stderr().is_terminal(), no_color.as_deref());
            logs.with_ansi(colour).init();
        }
        // The event's fields, `message` included, at the top level next to `level` and
        // `target`, like the lines the CLI writes itself.
        LogFormat::Json => logs.json().flatten_event(true).with_ansi(false).init(),
    }
}

async fn ctrl_c() {
    let _ = tokio::signal::ctrl_c().await;
}

fn exit_code(format: LogFormat, program: &str, result: Result<(), ClientError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let (now, level) = (SystemTime::now(), tracing::Level::ERROR);
            let message = e.to_string();
            eprintln!(
                "{}",
                log_format::line(format, now, level, Some(program), &message)
            );
            ExitCode::FAILURE
        }
    }
}
