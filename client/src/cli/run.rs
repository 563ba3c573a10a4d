//! The CLI's run loop: start the client, subscribe the plan, and show every report until
//! shutdown, `--exit-after` or `--dump` ends it: update lines (or the `--explain` narration) on
//! stdout, connection news on stderr, the `--record` transcript, the dump at the end.

use std::future::Future;
use std::io::Write;
use std::time::SystemTime;

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::Instant;

use super::explain::Explainer;
use super::output::{self, Format};
use super::record::Recorder;
use super::{Args, LOG_TARGET, client_config, plan};
use crate::client::Client;
use crate::client::csds::{self, CsdsServer};
use crate::config::ClientConfig;
use crate::core::event::{ConnectionReport, Report};
use crate::error::ClientError;
use xdsloop_log::LogFormat;
use xdsloop_proto::redact::Secrets;

/// Runs the CLI until `shutdown`, `--exit-after` or `--dump` ends it. Update lines (or the
/// narration) go to `out`, connection news to `err`.
pub async fn run(
    args: Args,
    shutdown: impl Future<Output = ()>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), ClientError> {
    let plan = plan(&args)?;
    let config = client_config(&args, &plan)?;
    let codec = config.codec.clone();
    let mut view = View::new(&args, &config)?;
    let client = Client::start(config, std::future::pending())?;
    let csds = serve_csds(&args, &client, &view, err).await?;
    let mut reports = client.reports();
    // All at once: subscribed one by one, a fast server could have the first types "synced"
    // (and --dump printed) before the later ones were even registered.
    for mut subscription in client.subscribe_all(plan.watches).await? {
        // Updates are printed from reports; events only need draining (see Subscription).
        tokio::spawn(async move { while subscription.recv().await.is_some() {} });
    }
    let followed = follow(&args, &mut view, &mut reports, shutdown, out, err).await;
    let store = client.store().borrow().clone();
    if let Some(csds) = csds {
        csds.stop().await;
    }
    client.stop().await;
    let finished = view.finish(&mut reports, out, err);
    followed?;
    finished?;
    if args.dump {
        let secrets = match args.show_secrets {
            true => Secrets::Show,
            false => Secrets::Hide,
        };
        let dump = output::dump(&store, &codec, secrets);
        let rendered = output::render_dump(&dump, args.output)?;
        write!(out, "{rendered}")?;
        out.flush()?;
    }
    Ok(())
}

/// `--csds ADDR`: the client's own CSDS (C18), its address said on stderr.
async fn serve_csds(
    args: &Args,
    client: &Client,
    view: &View,
    err: &mut dyn Write,
) -> Result<Option<CsdsServer>, ClientError> {
    let Some(listen) = args.csds else {
        return Ok(None);
    };
    let server = csds::serve(listen, client.status()).await?;
    let message = format!("CSDS on {}", server.addr());
    let line = view.stderr_line(tracing::Level::INFO, Some("xdsloop-client"), &message);
    writeln!(err, "{line}")?;
    Ok(Some(server))
}

/// Shows reports until one of the ends comes.
async fn follow(
    args: &Args,
    view: &mut View,
    reports: &mut broadcast::Receiver<Report>,
    shutdown: impl Future<Output = ()>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), ClientError> {
    tokio::pin!(shutdown);
    let mut updates = 0u64;
    // A wildcard type the server has nothing for may never be answered: --dump gives up
    // waiting for "synced" one not-found timeout after connecting.
    let mut dump_deadline: Option<Instant> = None;
    loop {
        let flush_at = view.next_flush().map(Instant::from_std);
        let received = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            _ = sleep_until(dump_deadline) => return Ok(()),
            _ = sleep_until(flush_at) => {
                view.flush_if_due()?;
                continue;
            }
            received = reports.recv() => received,
        };
        let report = match received {
            Ok(report) => report,
            Err(RecvError::Lagged(missed)) => {
                view.lagged(missed, err)?;
                continue;
            }
            Err(RecvError::Closed) => return Ok(()),
        };
        view.show(&report, out, err)?;
        let connected = matches!(
            report,
            Report::Connection(
                ConnectionReport::Connected { .. } | ConnectionReport::Watching { .. }
            )
        );
        if args.dump && args.exit_after.is_none() && connected && dump_deadline.is_none() {
            dump_deadline = Some(Instant::now() + args.not_found_timeout);
        }
        if matches!(report, Report::Update(_) | Report::Expired { .. }) {
            updates += 1;
        }
        let done_counting = args.exit_after.is_some_and(|n| updates >= n);
        let synced_dump = args.dump && args.exit_after.is_none() && report == Report::Synced;
        if done_counting || synced_dump {
            return Ok(());
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Where reports are shown: update lines, or the narration; stderr; the transcript.
struct View {
    log_format: LogFormat,
    /// The format of update and not-found lines; `None` with `--dump` (stdout is only the
    /// document, so it can be piped to jq or yq) and with `--explain` (the narration has them).
    lines: Option<Format>,
    explain: Option<Explainer>,
    recorder: Option<Recorder>,
}

impl View {
    fn new(args: &Args, config: &ClientConfig) -> Result<Self, ClientError> {
        let recorder = match &args.record {
            Some(path) => Some(Recorder::create(path, config, args.record_resources)?),
            None => None,
        };
        let lang = super::explain_lang(args)?;
        Ok(Self {
            log_format: args.log_format,
            lines: (!args.dump && !args.explain).then_some(args.output),
            explain: args
                .explain
                .then(|| Explainer::in_lang(config.source.variant(), lang)),
            recorder,
        })
    }

    fn show(
        &mut self,
        report: &Report,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<(), ClientError> {
        let now = SystemTime::now();
        if let Some(recorder) = &mut self.recorder {
            recorder.record(report, now)?;
        }
        if let Some(explain) = &mut self.explain {
            if let Some(line) = explain.line(report, now) {
                writeln!(out, "{line}")?;
                out.flush()?;
            }
            return Ok(());
        }
        if let Report::Connection(news) = report {
            let level = output::connection_level(news);
            let message = output::connection_line(news);
            let line = self.stderr_line(level, Some("xdsloop-client"), &message);
            writeln!(err, "{line}")?;
        }
        if let Some(line) = self.lines.and_then(|format| output::line(report, format)) {
            writeln!(out, "{line}")?;
            out.flush()?;
        }
        Ok(())
    }

    /// The observer fell behind and `missed` reports are gone: said on stderr, and in the
    /// transcript as a gap.
    fn lagged(&mut self, missed: u64, err: &mut dyn Write) -> Result<(), ClientError> {
        let message = format!("{missed} reports were dropped (output too slow)");
        let line = self.stderr_line(tracing::Level::WARN, Some("warning"), &message);
        writeln!(err, "{line}")?;
        match &mut self.recorder {
            Some(recorder) => recorder.gap(missed, SystemTime::now()),
            None => Ok(()),
        }
    }

    fn next_flush(&self) -> Option<std::time::Instant> {
        self.recorder.as_ref().and_then(Recorder::next_flush)
    }

    fn flush_if_due(&mut self) -> Result<(), ClientError> {
        match &mut self.recorder {
            Some(recorder) => recorder.flush_if_due(),
            None => Ok(()),
        }
    }

    /// After the client stopped: what it did since the last report shown (the ACK of the
    /// update `--exit-after` stopped at, ...) still goes into the narration and the
    /// transcript, not into the update lines; then the transcript is closed.
    fn finish(
        mut self,
        reports: &mut broadcast::Receiver<Report>,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<(), ClientError> {
        self.lines = None;
        loop {
            match reports.try_recv() {
                Ok(report) => self.show(&report, out, err)?,
                Err(TryRecvError::Lagged(missed)) => self.lagged(missed, err)?,
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        match self.recorder.take() {
            Some(recorder) => recorder.finish(SystemTime::now()),
            None => Ok(()),
        }
    }

    fn stderr_line(&self, level: tracing::Level, prefix: Option<&str>, message: &str) -> String {
        xdsloop_log::line(self.log_format, level, LOG_TARGET, prefix, message)
    }
}
