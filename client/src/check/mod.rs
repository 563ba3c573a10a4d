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
//! - `catalog`: the checks, their rule, level and quoted spec sentence, in run order;
//!   `--only` selection.
//! - `probe`: raw SotW/Delta ADS streams, one connection each; `garbage`: a malformed message.
//! - `preflight`: whether the server can be judged at all (else exit 2, with the reason),
//!   and what it cannot be judged on (Delta not served, a fixture directory not its own).
//! - `inventory`: the names the server serves, learned once (wildcard CDS/LDS, then EDS).
//! - `suite`: the checks, one module per rule (`edit*`: the `FX.*` fixture-edit checks).
//! - `fixtures`: the suite's own files in Envoy's filesystem-xDS shape, the journal and the
//!   fingerprint that put the directory back as found.
//! - [`report`]: outcomes, the text lines and summary, JSON, the exit code.
//! - [`command`]: the subcommand's flags and output.

pub(crate) mod catalog;
pub mod command;
mod describe;
mod fixtures;
mod garbage;
mod inventory;
mod preflight;
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
pub use report::{CheckReport, CheckResult, Event, Outcome, Summary};

use crate::ClientError;
use crate::config::{ClientTls, DEFAULT_MAX_MESSAGE_BYTES};

/// What to check and how patiently.
#[derive(Clone, Debug)]
pub struct CheckConfig {
    /// `host:port`, `http://host:port`, or `https://host:port` with `tls`.
    pub server: String,
    /// TLS toward the server (the client's `--tls-*` files, read and checked).
    pub tls: Option<ClientTls>,
    /// Sent on every stream, so per-node configuration is the same for every check.
    pub node_id: String,
    /// The directory the server serves; enables the checks that edit fixtures.
    pub fixtures: Option<PathBuf>,
    /// Where inside it the suite writes (relative), e.g. `nodes/xdsloop-check`.
    pub fixtures_subdir: PathBuf,
    /// Check ids or rules to run (empty: all).
    pub only: Vec<String>,
    /// How long to wait for a response any conforming server sends at once.
    pub timeout: Duration,
    /// How long to watch for something that must not arrive.
    pub quiet: Duration,
    /// How long to wait for a fixture edit to be pushed.
    pub push_timeout: Duration,
    /// SHOULD failures fail the run too.
    pub strict: bool,
    /// gRPC message limit, both directions.
    pub max_message_bytes: usize,
}

impl CheckConfig {
    /// A suite run against `server` (`host:port` or a URI) with the default timeouts.
    pub fn new(server: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            tls: None,
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

/// Runs the selected checks in order until done or `shutdown`, calling `on_event` with each
/// finding about the server as a whole and each check as it finishes, then puts the fixture
/// directory back. Errors are usage errors and a server the suite cannot talk to (refused, TLS
/// on one side only, not an ADS server); everything the server does is in the [`CheckReport`].
pub async fn run(
    config: &CheckConfig,
    shutdown: impl Future<Output = ()>,
    mut on_event: impl FnMut(Event<'_>),
) -> Result<CheckReport, ClientError> {
    let checks = catalog::select(&config.only).map_err(ClientError::Argument)?;
    let target = probe::Target::new(
        &config.server,
        &config.node_id,
        config.max_message_bytes,
        config.tls.clone(),
    )?;
    preflight::reachable(&target, config.timeout).await?;
    let run = format!("{:06x}", fastrand::u32(..0x0100_0000));
    let mut fixtures = match &config.fixtures {
        Some(dir) => Some(fixtures::Fixtures::open(
            dir,
            &config.fixtures_subdir,
            &run,
        )?),
        None => None,
    };
    let codec = Codec::envoy();
    let inv = inventory::Inventory::learn(&target, &codec, config.timeout).await;
    let mut notes = Vec::new();
    let no_delta = preflight::delta_served(&target, config.timeout).await;
    if let Some(why) = &no_delta {
        notes.push(format!("Delta not served: {why}; the Delta checks SKIP"));
    }
    // Kept aside, not used: the directory is still put back as found at the end.
    let mut unserved = None;
    let unserved_why = config
        .fixtures
        .as_ref()
        .and_then(|dir| preflight::fixtures_served(dir, &codec, &inv));
    if let Some(why) = unserved_why {
        notes.push(why);
        unserved = fixtures.take();
    }
    for note in &notes {
        on_event(Event::Note(note));
    }
    let mut ctx = suite::Ctx {
        target,
        codec,
        inv,
        timeout: config.timeout,
        quiet: config.quiet,
        push_timeout: config.push_timeout,
        run,
        fixtures,
        no_delta,
        fixtures_unserved: unserved.is_some(),
    };
    let mut report = CheckReport {
        server: config.server.clone(),
        node_id: config.node_id.clone(),
        strict: config.strict,
        notes,
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
        on_event(Event::Result(&result));
        report.results.push(result);
    }
    let used = ctx.fixtures.take().or(unserved);
    report.fixtures = used.map(fixtures::Fixtures::restore);
    Ok(report)
}
