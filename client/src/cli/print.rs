//! The print loop: the client's reports as lines, updates on stdout and connection news on
//! stderr (in the log format), until the run is done.

use std::future::Future;
use std::io::Write;

use tokio::sync::broadcast::{self, error::RecvError};

use super::{Args, LOG_TARGET, output};
use crate::core::event::{ConnectionReport, Report};
use crate::error::ClientError;

/// Prints reports as they come until `shutdown`, or until [`Printed::report`] says the run is
/// done.
pub(super) async fn print_reports(
    args: &Args,
    reports: &mut broadcast::Receiver<Report>,
    shutdown: impl Future<Output = ()>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), ClientError> {
    tokio::pin!(shutdown);
    let mut printed = Printed::default();
    loop {
        let give_up = async {
            match printed.dump_deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let report = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            _ = give_up => return Ok(()),
            report = reports.recv() => report,
        };
        let report = match report {
            Ok(report) => report,
            Err(RecvError::Lagged(missed)) => {
                let message = format!("{missed} reports were dropped (output too slow)");
                let line = stderr_line(args, tracing::Level::WARN, Some("warning"), &message);
                writeln!(err, "{line}")?;
                continue;
            }
            Err(RecvError::Closed) => return Ok(()),
        };
        if printed.report(args, &report, out, err)? {
            return Ok(());
        }
    }
}

/// What the print loop keeps between reports.
#[derive(Debug, Default)]
struct Printed {
    updates: u64,
    /// A wildcard type the server has nothing for may never be answered: --dump gives up
    /// waiting for "synced" one not-found timeout after connecting.
    dump_deadline: Option<tokio::time::Instant>,
}

impl Printed {
    /// Prints `report`; true once the run is done (`--exit-after` updates, or `--dump` synced).
    fn report(
        &mut self,
        args: &Args,
        report: &Report,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<bool, ClientError> {
        if let Report::Connection(news) = report {
            let (level, message) = (
                output::connection_level(news),
                output::connection_line(news),
            );
            let line = stderr_line(args, level, Some("xdsloop-client"), &message);
            writeln!(err, "{line}")?;
            let connected = matches!(
                news,
                ConnectionReport::Connected { .. } | ConnectionReport::Watching { .. }
            );
            if args.dump && args.exit_after.is_none() && connected && self.dump_deadline.is_none() {
                self.dump_deadline = Some(tokio::time::Instant::now() + args.not_found_timeout);
            }
        }
        // With --dump, stdout is only the document (so it can be piped to jq or yq).
        if let Some(line) = output::line(report, args.output).filter(|_| !args.dump) {
            writeln!(out, "{line}")?;
            out.flush()?;
        }
        if matches!(report, Report::Update(_) | Report::Expired { .. }) {
            self.updates += 1;
        }
        let done_counting = args.exit_after.is_some_and(|n| self.updates >= n);
        let synced_dump = args.dump && args.exit_after.is_none() && *report == Report::Synced;
        Ok(done_counting || synced_dump)
    }
}

pub(super) fn stderr_line(
    args: &Args,
    level: tracing::Level,
    prefix: Option<&str>,
    message: &str,
) -> String {
    xdsloop_log::line(args.log_format, level, LOG_TARGET, prefix, message)
}
