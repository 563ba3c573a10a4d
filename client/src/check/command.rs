//! `xdsloop-client check`: flags, one line per check as it finishes, the summary or the JSON
//! document, and the exit code.

use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use xdsloop_log::LogFormat;

use super::catalog::CHECKS;
use super::report::note_line;
use super::{CheckConfig, CheckReport, Event};

use crate::ClientError;
use crate::cli::LOG_TARGET;
use crate::cli::output::Format;
use crate::cli::tls::TlsArgs;
use crate::config::DEFAULT_MAX_MESSAGE_BYTES;

const EXAMPLES: &str = "\
Examples:
  # every check that needs no control over the server's configuration
  xdsloop-client check --server 127.0.0.1:18000
  # all checks against xdsloop-server (its edits go to this node's overlay directory)
  xdsloop-client check --server 127.0.0.1:18000 --fixtures fixtures/demo \\
      --fixtures-subdir nodes/xdsloop-check
  # two checks, for CI
  xdsloop-client check --only S4,S5.named-set --output json
  # a server over mTLS
  xdsloop-client check --server cp.example:18000 --tls-ca ca.pem --tls-cert me.pem --tls-key me.key

Exit status: 0 no MUST check failed; 1 a MUST check failed (or a SHOULD one with --strict);
2 usage error, a server it cannot talk to (refused, TLS on one side only, not an ADS
server: the reason is printed, no check runs), interrupted, or the fixture directory not
restored.
What each check sends, and what its failure means for the server's clients: docs/check.md";

/// Judges any ADS server (SotW and Delta) against the server rules of docs/protocol.md (S1–S13).
///
/// One line per check, PASS, FAIL with the evidence (types, versions, nonces, names) or SKIP
/// with why, then a summary. With --fixtures (the directory a file-driven
/// server serves) it also writes its own fixture files, in Envoy's filesystem-xDS shape, to
/// check what gets pushed, and puts the directory back as it found it.
#[derive(Debug, Parser)]
#[command(name = "xdsloop-client check", bin_name = "xdsloop-client check", version, after_help = EXAMPLES)]
pub struct CheckArgs {
    /// The server under test (`host:port`, `http://host:port`, or `https://host:port` with
    /// --tls-ca).
    #[arg(long, default_value = "127.0.0.1:18000")]
    pub server: String,
    /// Node id on every stream (servers with per-node configuration serve it the same set).
    #[arg(long, default_value = "xdsloop-check")]
    pub node_id: String,
    /// The fixture directory the server serves: enables the checks that edit fixtures. The
    /// suite writes only its own `xdsloop-check-<run>-*.json` files and removes them.
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
    /// Where inside --fixtures to write, e.g. `nodes/xdsloop-check`: xdsloop-server serves
    /// that directory to node xdsloop-check only, so other clients never see the edits.
    #[arg(long, value_name = "PATH", requires = "fixtures")]
    pub fixtures_subdir: Option<PathBuf>,
    /// Run only these checks: ids (`S5.named-set`) or rules (`S5`, `FX`), comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    pub only: Vec<String>,
    /// List the checks (id, rule, level, what it does) and exit.
    #[arg(long)]
    pub list: bool,
    /// How long to wait for a response a conforming server sends at once.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub timeout: Duration,
    /// How long to watch for a response that must not come.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    pub quiet: Duration,
    /// How long to wait for a fixture edit to be pushed.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub push_timeout: Duration,
    /// `text` (a line per check, then a summary) or `json` (one document, for CI).
    #[arg(long, value_enum, default_value = "text")]
    pub output: Format,
    /// A failed SHOULD check fails the run too (exit 1).
    #[arg(long)]
    pub strict: bool,
    /// gRPC message size limit in bytes (S13 sends about 6.4 MB).
    #[arg(long, default_value_t = DEFAULT_MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
    /// stderr: `text` or `json` (one object per line).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// TLS toward the server (`--tls-ca`, `--tls-cert`, `--tls-key`).
    #[command(flatten)]
    pub tls: TlsArgs,
}

impl CheckArgs {
    /// The suite's configuration; the TLS files are read and checked here.
    pub fn config(&self) -> Result<CheckConfig, ClientError> {
        Ok(CheckConfig {
            server: self.server.clone(),
            tls: self.tls.load()?,
            node_id: self.node_id.clone(),
            fixtures: self.fixtures.clone(),
            fixtures_subdir: self.fixtures_subdir.clone().unwrap_or_default(),
            only: self.only.clone(),
            timeout: self.timeout,
            quiet: self.quiet,
            push_timeout: self.push_timeout,
            strict: self.strict,
            max_message_bytes: self.max_message_bytes,
        })
    }
}

/// Runs the suite (or `--list`); check lines and the summary go to `out`, an error that stops
/// the run to `err`. Returns the exit code.
pub async fn run(
    args: CheckArgs,
    shutdown: impl Future<Output = ()>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    if args.list {
        return exit_on_io(list(out));
    }
    let text = args.output == Format::Text;
    let mut broken_pipe = false;
    let result = match args.config() {
        Ok(config) => {
            super::run(&config, shutdown, |event| {
                let line = match event {
                    Event::Note(note) => note_line(note),
                    Event::Result(result) => result.line(),
                };
                if text {
                    broken_pipe |= writeln!(out, "{line}").and_then(|()| out.flush()).is_err();
                }
            })
            .await
        }
        Err(e) => Err(e),
    };
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            let message = e.to_string();
            let program = "xdsloop-client check";
            let line = xdsloop_log::error_line(args.log_format, LOG_TARGET, program, &message);
            let _ = writeln!(err, "{line}");
            return 2;
        }
    };
    if broken_pipe {
        return 2;
    }
    match finish(&report, text, out) {
        Ok(()) => report.summary().exit,
        Err(_) => 2,
    }
}

fn finish(report: &CheckReport, text: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if text {
        for line in report.text_tail() {
            writeln!(out, "{line}")?;
        }
    } else {
        writeln!(out, "{}", report.to_json())?;
    }
    out.flush()
}

fn list(out: &mut dyn Write) -> std::io::Result<()> {
    for c in CHECKS {
        let edits = if c.edits { " (--fixtures)" } else { "" };
        let (id, rule, level) = (c.id, c.rule, c.level.to_string());
        writeln!(out, "{id:<29}{rule:<5}{level:<8}{}{edits}", c.about)?;
    }
    out.flush()
}

fn exit_on_io(result: std::io::Result<()>) -> u8 {
    if result.is_ok() { 0 } else { 2 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> CheckArgs {
        CheckArgs::parse_from(["xdsloop-client check"].iter().chain(extra))
    }

    #[test]
    fn flags_become_the_config() {
        let a = args(&[
            "--fixtures",
            "d",
            "--fixtures-subdir",
            "nodes/x",
            "--only",
            "S4,FX",
            "--quiet",
            "300ms",
        ]);
        let config = a.config().unwrap();
        assert_eq!(config.fixtures, Some(PathBuf::from("d")));
        assert_eq!(config.fixtures_subdir, PathBuf::from("nodes/x"));
        assert_eq!(config.only, ["S4", "FX"]);
        assert_eq!(config.quiet, Duration::from_millis(300));
        assert_eq!(config.node_id, "xdsloop-check");
        assert!(config.tls.is_none());
        assert!(
            CheckArgs::try_parse_from(["c", "--fixtures-subdir", "x"]).is_err(),
            "subdir needs --fixtures"
        );
        assert!(
            CheckArgs::try_parse_from(["c", "--tls-cert", "x.pem"]).is_err(),
            "a client certificate needs its key and a CA"
        );
        let missing = args(&["--tls-ca", "/nonexistent/ca.pem"]).config();
        let error = missing.unwrap_err().to_string();
        assert!(error.contains("--tls-ca /nonexistent/ca.pem"), "{error}");
    }

    #[tokio::test]
    async fn list_shows_every_check_and_an_unknown_only_is_a_usage_error() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(
            run(
                args(&["--list"]),
                std::future::pending(),
                &mut out,
                &mut err
            )
            .await,
            0
        );
        let listed = String::from_utf8(out).unwrap();
        assert_eq!(listed.lines().count(), CHECKS.len());
        assert!(
            listed.contains("S11.make-before-break        S11  MUST    "),
            "{listed}"
        );
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(
            args(&["--only", "S99"]),
            std::future::pending(),
            &mut out,
            &mut err,
        )
        .await;
        assert_eq!(code, 2);
        let err = String::from_utf8(err).unwrap();
        assert!(err.contains("--only \"S99\" names no check"), "{err}");
    }
}
