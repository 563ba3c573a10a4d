//! `xdsloop-client check`: the client judges any xDS server, sentence by sentence of the spec
//! (`xdsloop_proto::spec`). Each check enforces named sentences and runs across the types,
//! variants (SotW, Delta) and services (ADS, per-type) they hold for, each case on real gRPC
//! streams against the server under test, and ends PASS, FAIL (with the evidence: types,
//! versions, nonces, names, and the sentence quoted) or SKIP (with what is missing). With
//! `--fixtures DIR` (the directory a file-driven server serves) the suite also edits fixtures
//! and checks what gets pushed.
//!
//! It is a scripted probe, not a client: it must send what a correct client never sends
//! (stale nonces, an unknown type URL, a malformed message), so it drives raw tonic streams
//! (`probe`) through a model of a correct client's side of each stream (`conversation`),
//! which also judges every response against the sentences that hold for all of them.
//!
//! Layout:
//! - `catalog`: the checks, their sentences and matrices, in run order; `--only`/`--skip`.
//! - `case`: the matrix of a check: type × variant × service.
//! - `probe`: raw SotW/Delta streams of ADS and the per-type services, a connection each;
//!   `garbage`: a malformed message.
//! - `conversation`: one stream as a correct client holds it; findings for the wire-wide
//!   checks.
//! - `preflight`: whether the server can be judged at all (else exit 2, with the reason),
//!   and what it cannot be judged on (Delta or the per-type services not served, a fixture
//!   directory not its own).
//! - `inventory`: the names the server serves, learned once (wildcard CDS/LDS, then EDS and
//!   RDS).
//! - `suite`: the checks' scripts, by area of the spec.
//! - `fixtures`: the suite's own files in Envoy's filesystem-xDS shape, the journal and the
//!   fingerprint that put the directory back as found.
//! - [`report`]: outcomes, the text lines and summary, JSON; `junit`: JUnit XML; the exit code.
//! - [`command`]: the subcommand's flags and output.

mod case;
pub(crate) mod catalog;
pub mod command;
mod conversation;
mod describe;
mod fixtures;
mod garbage;
mod inventory;
mod junit;
mod preflight;
mod probe;
pub mod report;
mod suite;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;
use xdsloop_proto::Codec;

pub use catalog::{CHECKS, Check};
pub use fixtures::Restored;
pub use report::{CaseResult, CheckReport, CheckResult, Event, JSON_SCHEMA, Outcome, Summary};

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
    /// Checks to run, by check id, sentence id or section (empty: all).
    pub only: Vec<String>,
    /// Checks not to run, named the same ways.
    pub skip: Vec<String>,
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
            skip: Vec::new(),
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
/// on one side only, not an ADS server; [`CheckReport::unjudged`] holds the reason when the
/// report is still wanted, see [`unjudged`]); everything the server does is in the
/// [`CheckReport`].
pub async fn run(
    config: &CheckConfig,
    shutdown: impl Future<Output = ()>,
    mut on_event: impl FnMut(Event<'_>),
) -> Result<CheckReport, ClientError> {
    let checks = catalog::select(&config.only, &config.skip).map_err(ClientError::Argument)?;
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
        notes.push(format!("Delta not served: {why}; the Delta cases SKIP"));
    }
    let no_services = preflight::per_type_served(&target, config.timeout).await;
    if let Some(why) = &no_services {
        notes.push(format!(
            "the per-type services are not served: {why}; their cases SKIP (ADS is judged)"
        ));
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
        no_services,
        fixtures_unserved: unserved.is_some(),
        findings: conversation::Findings::default(),
        check: "",
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
        let cases = tokio::select! {
            cases = suite::run(&check, &mut ctx) => cases,
            () = &mut shutdown => {
                report.interrupted = true;
                break;
            }
        };
        let mut cases: Vec<CaseResult> = cases
            .into_iter()
            .map(|(case, outcome)| CaseResult {
                case: case.to_string(),
                outcome,
            })
            .collect();
        cases.extend(whole_run(check.id, &ctx.findings));
        let result = CheckResult::of(check, cases, started.elapsed());
        on_event(Event::Result(&result));
        report.results.push(result);
    }
    let used = ctx.fixtures.take().or(unserved);
    report.fixtures = used.map(fixtures::Fixtures::restore);
    Ok(report)
}

/// How many findings against one sentence a FAIL quotes.
const SHOWN_FINDINGS: usize = 3;

/// For a check judged on every response of the run: a FAIL case holding what the run's
/// streams found against its sentences, if anything.
fn whole_run(id: &str, findings: &conversation::Findings) -> Option<CaseResult> {
    let found: Vec<conversation::Finding> = suite::collects(id)
        .iter()
        .flat_map(|sentence| findings.of(sentence))
        .collect();
    if found.is_empty() {
        return None;
    }
    let shown: Vec<String> = found
        .iter()
        .take(SHOWN_FINDINGS)
        .map(|f| format!("{} (during {})", f.text, f.during))
        .collect();
    let more = found.len().saturating_sub(SHOWN_FINDINGS);
    let more = match more {
        0 => String::new(),
        n => format!("; and {n} more"),
    };
    Some(CaseResult {
        case: "every response of the run".to_string(),
        outcome: Outcome::Fail(format!("{}{more}", shown.join("; "))),
    })
}

/// The report of a server that could not be judged: no check, the reason, exit 2 (what
/// `--output json` and `junit` print instead of nothing).
pub fn unjudged(config: &CheckConfig, why: &str) -> CheckReport {
    CheckReport {
        server: config.server.clone(),
        node_id: config.node_id.clone(),
        strict: config.strict,
        unjudged: Some(why.to_string()),
        ..CheckReport::default()
    }
}
