//! `xdsloop-client check`: flags, one line per check as it finishes, the summary, the JSON or
//! JUnit document, `--list` (the spec's sentences and what checks each), and the exit code.

use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use xdsloop_log::LogFormat;
use xdsloop_proto::spec::{self, Sentence};

use super::catalog::CHECKS;
use super::report::note_line;
use super::{CheckConfig, CheckReport, Event};

use crate::ClientError;
use crate::cli::LOG_TARGET;
use crate::cli::tls::TlsArgs;
use crate::config::DEFAULT_MAX_MESSAGE_BYTES;

const EXAMPLES: &str = "\
Examples:
  # every check that needs no control over the server's configuration
  xdsloop-client check --server 127.0.0.1:18000
  # all checks against xdsloop-server (its edits go to this node's overlay directory)
  xdsloop-client check --server 127.0.0.1:18000 --fixtures fixtures/demo \\
      --fixtures-subdir nodes/xdsloop-check
  # the checks of one spec section, and one sentence, as JUnit XML for CI
  xdsloop-client check --only resource-hints,delta.6 --output junit > check.xml
  # everything but the Delta subscription checks
  xdsloop-client check --skip delta-unsubscribe,delta-resource-not-existed
  # every normative sentence of the spec, and what checks it
  xdsloop-client check --list
  # a server over mTLS
  xdsloop-client check --server cp.example:18000 --tls-ca ca.pem --tls-cert me.pem --tls-key me.key

Exit status: 0 no MUST check failed; 1 a MUST check failed (or a SHOULD one with --strict);
2 usage error, a server it cannot talk to (refused, TLS on one side only, not an ADS
server: the reason is printed, no check runs), interrupted, or the fixture directory not
restored.
What each check sends, and what its failure means for the server's clients: docs/check.md;
which sentence is checked how: docs/spec-coverage.md";

/// How the results are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckOutput {
    /// A line per check as it finishes, then a summary.
    Text,
    /// One JSON document (`xdsloop.check.v2`).
    Json,
    /// JUnit XML: a testcase per check, a failure quoting its sentence.
    Junit,
}

/// Judges any xDS server (ADS and the per-type services, SotW and Delta), sentence by sentence
/// of Envoy's xDS protocol spec.
///
/// Each check enforces named sentences of the spec (its id is the first one's, e.g.
/// `resource-hints.4`) and runs once per type, variant and service the sentence holds for. One
/// line per check: PASS, FAIL with the evidence (types, versions, nonces, names) and the
/// sentence quoted, or SKIP with why; then a summary. With --fixtures (the directory a
/// file-driven server serves) it also writes its own fixture files, in Envoy's filesystem-xDS
/// shape, to check what gets pushed, and puts the directory back as it found it.
#[derive(Debug, Parser)]
#[command(name = "xdsloop-client check", bin_name = "xdsloop-client check", version = env!("XDSLOOP_VERSION"), after_help = EXAMPLES)]
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
    /// Run only these checks, comma-separated: check ids (`resource-hints.4/re-added`),
    /// sentence ids (`delta.6`) or spec sections (`resource-hints`).
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    pub only: Vec<String>,
    /// Leave out these checks, named as for --only (`xdsloop` names xdsloop's own rules).
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    pub skip: Vec<String>,
    /// Print every normative sentence of the spec (id, level, whom it binds, what checks it)
    /// and exit.
    #[arg(long)]
    pub list: bool,
    /// How long to wait for a response a conforming server sends at once.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub timeout: Duration,
    /// How long to watch for a response that must not come (also the quiet window every case
    /// ends with).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    pub quiet: Duration,
    /// How long to wait for a fixture edit to be pushed.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub push_timeout: Duration,
    /// `text` (a line per check, then a summary), `json` (one document) or `junit` (JUnit XML).
    #[arg(long, value_enum, default_value = "text")]
    pub output: CheckOutput,
    /// A failed SHOULD check fails the run too (exit 1).
    #[arg(long)]
    pub strict: bool,
    /// gRPC message size limit in bytes (xdsloop.large-responses sends about 6.4 MB).
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
            skip: self.skip.clone(),
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
        let listed = match args.output {
            CheckOutput::Json => writeln!(out, "{}", list_json()),
            _ => out.write_all(list_text().as_bytes()),
        };
        return exit_on_io(listed.and_then(|()| out.flush()));
    }
    let text = args.output == CheckOutput::Text;
    let mut broken_pipe = false;
    let config = match args.config() {
        Ok(config) => config,
        Err(e) => return usage(&args, err, &e.to_string()),
    };
    let result = super::run(&config, shutdown, |event| {
        let lines = match event {
            Event::Note(note) => vec![note_line(note)],
            Event::Result(result) => result.lines(),
        };
        if text {
            for line in lines {
                broken_pipe |= writeln!(out, "{line}").and_then(|()| out.flush()).is_err();
            }
        }
    })
    .await;
    let report = match result {
        Ok(report) => report,
        // A server that cannot be judged: the reason on stderr, and for CI a document that
        // says so (exit 2, no checks).
        Err(e @ ClientError::Io(_)) if !text => {
            let code = usage(&args, err, &e.to_string());
            let report = super::unjudged(&config, &e.to_string());
            let _ = finish(&report, args.output, out);
            return code;
        }
        Err(e) => return usage(&args, err, &e.to_string()),
    };
    if broken_pipe {
        return 2;
    }
    match finish(&report, args.output, out) {
        Ok(()) => report.summary().exit,
        Err(_) => 2,
    }
}

/// Writes `message` as the program's error line; exit 2.
fn usage(args: &CheckArgs, err: &mut dyn Write, message: &str) -> u8 {
    let program = "xdsloop-client check";
    let line = xdsloop_log::error_line(args.log_format, LOG_TARGET, program, message);
    let _ = writeln!(err, "{line}");
    2
}

fn finish(report: &CheckReport, output: CheckOutput, out: &mut dyn Write) -> std::io::Result<()> {
    match output {
        CheckOutput::Text => {
            for line in report.text_tail() {
                writeln!(out, "{line}")?;
            }
        }
        CheckOutput::Json => writeln!(out, "{}", report.to_json())?,
        CheckOutput::Junit => out.write_all(super::junit::document(report).as_bytes())?,
    }
    out.flush()
}

/// The checks that enforce `sentence`.
fn checks_of(sentence: &Sentence) -> Vec<&'static str> {
    let named = CHECKS
        .iter()
        .filter(|c| c.sentences.contains(&sentence.id.as_str()));
    named.map(|c| c.id).collect()
}

/// `--list`: the spec section by section, each sentence with its level, whom it binds, where
/// it applies and what holds xdsloop to it; then xdsloop's own checks.
fn list_text() -> String {
    let spec = spec::spec();
    let mut text = format!(
        "{} normative sentences of {} ({}) and of {} (in {} {}); id, level, binds, applies to, checked by\n",
        spec.sentences.len(),
        spec.source.rst.path,
        &spec.source.rst.commit[..12],
        spec.source.proto.path,
        spec.source.proto.krate,
        spec.source.proto.version,
    );
    for (slug, title) in spec.sections() {
        text += &format!("\n{title}\n");
        for s in spec.sentences.iter().filter(|s| s.slug() == slug) {
            text += &format!(
                "  {:<30}{:<11}{:<7}{:<6} {}\n",
                s.id,
                s.strength().word(),
                format!("{:?}", s.binds).to_lowercase(),
                s.variant.word(),
                coverage(s)
            );
        }
    }
    text += "\nxdsloop's own rules (no sentence of the spec states them)\n";
    for c in CHECKS.iter().filter(|c| c.beyond.is_some()) {
        text += &format!("  {:<30}{}\n", c.id, c.beyond.unwrap_or_default());
    }
    text
}

/// What holds xdsloop to `s`, in a few words.
fn coverage(s: &Sentence) -> String {
    let mut parts = Vec::new();
    let checks = checks_of(s);
    if !checks.is_empty() {
        parts.push(format!("check {}", checks.join(", ")));
    }
    let c = &s.covered_by;
    if !c.judge.is_empty() {
        parts.push(format!("judge {}", c.judge.join(", ")));
    }
    let tests = c.server_tests.len() + c.client_tests.len();
    if tests > 0 {
        parts.push(format!("{tests} test{}", if tests == 1 { "" } else { "s" }));
    }
    if !s.is_requirement() {
        parts.push("a permission".to_string());
    }
    if let Some(why) = s.observable.reason() {
        parts.push(format!("not on the wire: {why}"));
    }
    match parts.is_empty() {
        true => "—".to_string(),
        false => parts.join("; "),
    }
}

/// `--list --output json`: the sentences with what checks each, and the checks.
fn list_json() -> String {
    let spec = spec::spec();
    let sentences: Vec<serde_json::Value> = spec
        .sentences
        .iter()
        .map(|s| {
            serde_json::json!({
                "id": s.id, "section": s.section, "level": s.level.word(),
                "strength": s.strength().word(), "binds": s.binds, "variant": s.variant,
                "quote": s.quote, "reading": s.reading, "checks": checks_of(s),
                "covered_by": s.covered_by, "observable": s.observable,
            })
        })
        .collect();
    let checks: Vec<serde_json::Value> = CHECKS
        .iter()
        .map(|c| {
            serde_json::json!({
                "id": c.id, "sentences": c.sentences, "level": c.strength().word(),
                "edits": c.edits, "about": c.about, "beyond": c.beyond,
            })
        })
        .collect();
    let doc = serde_json::json!({
        "schema": "xdsloop.check-list.v1",
        "source": spec.source, "sentences": sentences, "checks": checks,
    });
    serde_json::to_string_pretty(&doc).expect("plain data serializes")
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
            "resource-hints,delta.6",
            "--skip",
            "xdsloop",
            "--quiet",
            "300ms",
        ]);
        let config = a.config().unwrap();
        assert_eq!(config.fixtures, Some(PathBuf::from("d")));
        assert_eq!(config.fixtures_subdir, PathBuf::from("nodes/x"));
        assert_eq!(config.only, ["resource-hints", "delta.6"]);
        assert_eq!(config.skip, ["xdsloop"]);
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
    async fn list_shows_every_sentence_and_an_unknown_only_is_a_usage_error() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(
            args(&["--list"]),
            std::future::pending(),
            &mut out,
            &mut err,
        )
        .await;
        assert_eq!(code, 0);
        let listed = String::from_utf8(out).unwrap();
        for s in &spec::spec().sentences {
            assert!(
                listed.contains(&format!("  {:<30}", s.id)),
                "{} not listed",
                s.id
            );
        }
        assert!(
            listed.contains(
                "  resource-updates.3            SHOULD NOT server sotw   check resource-updates.3"
            ),
            "{listed}"
        );
        assert!(
            listed.contains("\nHow the client specifies what resources to return\n"),
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
        assert!(err.contains("no check is named by S99"), "{err}");
    }
}
