//! `xdsloop-client`: picks the mode from the first argument (`fleet`, `check`, `transcript`, or
//! else the single client), parses its flags, sets up logging, and runs it from the library
//! until it ends or Ctrl-C.

use std::process::ExitCode;

use clap::Parser;
use xdsloop_client::ClientError;
use xdsloop_client::check::command::{self as check_cli, CheckArgs};
use xdsloop_client::cli::{self, Args, LOG_TARGET};
use xdsloop_client::fleet::command::{self as fleet_cli, FleetArgs};
use xdsloop_log::LogFormat;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Logs go to stderr (stdout carries the update lines); quiet unless `RUST_LOG` says otherwise.
const DEFAULT_LOG_FILTER: &str = "error";

#[tokio::main]
async fn main() -> ExitCode {
    // `fleet`, `check` and `transcript` are separate modes with their own flags; everything else is the
    // single client.
    if std::env::args().nth(1).as_deref() == Some("fleet") {
        let args = FleetArgs::parse_from(std::env::args().skip(1));
        let format = args.log_format;
        xdsloop_log::init(format, DEFAULT_LOG_FILTER);
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
        xdsloop_log::init(args.log_format, DEFAULT_LOG_FILTER);
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        return ExitCode::from(check_cli::run(args, ctrl_c(), &mut out, &mut err).await);
    }
    let args = Args::parse();
    let format = args.log_format;
    xdsloop_log::init(format, DEFAULT_LOG_FILTER);
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let result = cli::run(args, ctrl_c(), &mut out, &mut err).await;
    exit_code(format, "xdsloop-client", result)
}

async fn ctrl_c() {
    let _ = tokio::signal::ctrl_c().await;
}

fn exit_code(format: LogFormat, program: &str, result: Result<(), ClientError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let message = xdsloop_client::error_chain(&e);
            let line = xdsloop_log::error_line(format, LOG_TARGET, program, &message);
            eprintln!("{line}");
            ExitCode::FAILURE
        }
    }
}
