//! `xdsloop-client check`: the client judges any ADS server. A suite of checks, each named
//! after the docs/protocol.md server rule it proves (S1–S13), run over real ADS streams
//! against the server under test, each ending PASS, FAIL (with the evidence: types, versions,
//! nonces, names) or SKIP (with what is missing). With `--fixtures DIR` (the directory a
//! file-driven server serves) the suite also edits fixtures and checks what gets pushed.
//!
//! It is a scripted probe, not a client: it must send what a correct client never sends
//! (stale nonces, an unknown type URL, a malformed message), so it drives raw tonic streams
//! (`probe`) instead of the mux, and decides nothing about the protocol outside the checks.
//!
//! Layout:
//! - [`catalog`]: the checks, their rule and level, in run order; `--only` selection.
//! - `probe`: raw SotW/Delta ADS streams, one connection each; `garbage`: a malformed message.
//! - `inventory`: the names the server serves, learned once (wildcard CDS/LDS, then EDS).
//! - `suite`: the checks, one module per rule (`edit*`: the `FX.*` fixture-edit checks).
//! - `fixtures`: the suite's own files in Envoy's filesystem-xDS shape, the journal and the
//!   fingerprint that put the directory back as found.
//! - [`report`]: outcomes, the text lines and summary, JSON, the exit code.
//! - [`command`]: the subcommand's flags and output.

pub mod catalog;
pub mod command;
mod describe;
mod fixtures;
mod garbage;
mod inventory;
mod probe;
pub mod report;
mod suite;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;
use xdsloop_proto::Codec;

pub use catalog::{CHECKS, Check, Level};
pub use fixtures::Restored;
pub use report::{CheckReport, CheckResult, Outcome, Summary};

use crate::ClientError;
use crate::config::DEFAULT_MAX_MESSAGE_BYTES;

/// What to check and how patiently.
#[derive(Clone, Debug)]
pub struct CheckConfig {
    /// `host:port` or `http://host:port`.
    pub server: String,
    /// Sent on every stream, so per-node configuration is the same for every check.
    pub node_id: String,
    /// The directory the server serves; enables the checks that edit fixtures.
    pub fixtures: Option<PathBuf>,
    /// Where inside it the suite writes (relative), e.g. `nodes/xdsloop-check`.
    pub fixtures_subdir: PathBuf,
    /// Check ids or rules to run (empty: all).
    pub only: Vec<String>,
    pub timeout: Duration,
    pub quiet: Duration,
    pub push_timeout: Duration,
    /// SHOULD failures fail the run too.
    pub strict: bool,
    pub max_message_bytes: usize,
}

impl CheckConfig {
    pub fn new(server: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            node_id: "xdsloop-check".to_string(),
            fixtures: None,
            fixtures_subdir: PathBuf::new(),
            only: Vec::new(),
            timeout: Duration::from_secs(5),
            quiet: Duration::from_secs(1),
            push_timeout: Duration::from_secs(10),
            strict: false,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

/// Runs the selected checks in order until done or `shutdown`, calling `on_result` as each
/// finishes, then puts the fixture directory back. Errors are usage errors and an
/// unreachable server; everything the server does is in the [`CheckReport`].
pub async fn run(
    config: &CheckConfig,
    shutdown: impl Future<Output = ()>,
    mut on_result: impl FnMut(&CheckResult),
) -> Result<CheckReport, ClientError> {
    let checks = catalog::select(&config.only).map_err(ClientError::Argument)?;
    let target = probe::Target::new(&config.server, &config.node_id, config.max_message_bytes)?;
    target.reachable().await?;
    let run = format!("{:06x}", fastrand::u32(..0x0100_0000));
    let fixtures = match &config.fixtures {
        Some(dir) => Some(fixtures::Fixtures::open(
            dir,
            &config.fixtures_subdir,
            &run,
        )?),
        None => None,
    };
    let codec = Codec::envoy();
    let inv = inventory::Inventory::learn(&target, &codec, config.timeout).await;
    let mut ctx = suite::Ctx {
        target,
        codec,
        inv,
        timeout: config.timeout,
        quiet: config.quiet,
        push_timeout: config.push_timeout,
        run,
        fixtures,
    };
    let mut report = CheckReport {
        server: config.server.clone(),
        node_id: config.node_id.clone(),
        strict: config.strict,
        ..CheckReport::default()
    };
    tokio::pin!(shutdown);
    for check in checks {
        let started = Instant::now();
        let outcome = tokio::select! {
            outcome = suite::run(check, &mut ctx) => outcome,
            () = &mut shutdown => {
                report.interrupted = true;
                break;
            }
        };
        let elapsed = started.elapsed();
        let result = CheckResult {
            check,
            outcome,
            elapsed,
        };
        on_result(&result);
        report.results.push(result);
    }
    report.fixtures = ctx.fixtures.take().map(fixtures::Fixtures::restore);
    Ok(report)
}
