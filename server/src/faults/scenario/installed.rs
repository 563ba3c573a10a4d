//! The scenario in force and how it changes: [`Scenarios`] is the one handle the file watcher,
//! the admin routes and Rust code all install through (last writer wins), and every stream
//! follows through its `watch` receiver. Each installation gets fresh per-rule counters.

use std::{
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::SystemTime,
};

use tokio::sync::watch;

use super::{model::Scenario, outage::Outages};

/// Who installed the scenario in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// None was ever installed, or the last one was removed.
    None,
    /// `--scenario FILE` (and every reload of it).
    File,
    /// `PUT /scenario`.
    Api,
    /// Rust code ([`Scenarios::set`]).
    Code,
}

impl Origin {
    /// The origin as `/status` writes it: `none`, `file`, `api` or `code`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::None => "none",
            Origin::File => "file",
            Origin::Api => "api",
            Origin::Code => "code",
        }
    }
}

/// One installed scenario with its counters. Streams hold it while it is in force.
#[derive(Debug)]
pub struct Installed {
    /// The rules.
    pub scenario: Scenario,
    /// One per rule, in rule order.
    pub counters: Box<[RuleCounters]>,
    /// 0 for the empty scenario a server starts with; +1 per installation.
    pub generation: u64,
    /// Who installed it.
    pub origin: Origin,
    /// The file, for [`Origin::File`].
    pub path: Option<PathBuf>,
    /// When it was installed.
    pub loaded_at: SystemTime,
    /// The YAML it came from, when it came as text.
    pub text: Option<String>,
}

impl Installed {
    fn empty() -> Self {
        Self {
            scenario: Scenario::default(),
            counters: Box::new([]),
            generation: 0,
            origin: Origin::None,
            path: None,
            loaded_at: SystemTime::now(),
            text: None,
        }
    }

    /// It has no rules: the server behaves.
    pub fn is_empty(&self) -> bool {
        self.scenario.rules.is_empty()
    }
}

/// How often one rule fired, and its last firing.
#[derive(Debug, Default)]
pub struct RuleCounters {
    fired: AtomicU64,
    skipped: AtomicU64,
    last: Mutex<Option<Firing>>,
}

/// One firing of a rule, for `/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Firing {
    /// When it fired.
    pub at: SystemTime,
    /// On which stream.
    pub stream: u64,
    /// The stream's node, once known.
    pub node: Option<String>,
    /// The type of the response it touched.
    pub type_url: Option<String>,
    /// The nonce of the response it touched.
    pub nonce: Option<String>,
}

impl RuleCounters {
    /// Takes one firing if fewer than `limit` were taken server-wide (`None`: no limit).
    pub(crate) fn try_take(&self, limit: Option<u64>) -> bool {
        match limit {
            None => {
                self.fired.fetch_add(1, Ordering::Relaxed);
                true
            }
            Some(limit) => self
                .fired
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < limit).then_some(n + 1)
                })
                .is_ok(),
        }
    }

    /// The rule's firings are all taken.
    pub(crate) fn is_spent(&self, limit: Option<u64>) -> bool {
        limit.is_some_and(|limit| self.fired.load(Ordering::Relaxed) >= limit)
    }

    /// Returns a firing [`Self::try_take`] took that did not happen after all (a `flap`
    /// removal with nothing to tell the stream).
    pub(crate) fn give_back(&self) {
        let _ = self
            .fired
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// A one-shot firing [`Self::try_take`] took that could not start (an `outage` while
    /// another lasts): counted as skipped, not fired, and it stays spent.
    pub(crate) fn not_started(&self) {
        self.give_back();
        self.skipped();
    }

    /// A one-shot rule's chance came: it fired or was skipped.
    pub(crate) fn is_settled(&self) -> bool {
        self.fired() + self.skipped_count() > 0
    }

    /// A firing that had nothing to act on (e.g. `stale_nonce` before any nonce).
    pub(crate) fn skipped(&self) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record(&self, firing: Firing) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(firing);
    }

    /// Times it fired.
    pub fn fired(&self) -> u64 {
        self.fired.load(Ordering::Relaxed)
    }

    /// Times it had nothing to act on (`stale_nonce` before any nonce, a resource not in the
    /// response).
    pub fn skipped_count(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Its latest firing.
    pub fn last(&self) -> Option<Firing> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The last scenario that could not be installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejected {
    pub origin: Origin,
    pub at: SystemTime,
    /// `file:line:col: rules[2] (id): what is wrong`.
    pub error: String,
}

/// The scenario seam: install, remove, follow. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Scenarios {
    tx: Arc<watch::Sender<Arc<Installed>>>,
    rejected: Arc<Mutex<Option<Rejected>>>,
    /// The server-wide `outage`s the rules set off.
    outages: Outages,
}

impl Default for Scenarios {
    fn default() -> Self {
        Self::new()
    }
}

impl Scenarios {
    /// No scenario in force.
    pub fn new() -> Self {
        let (tx, _) = watch::channel(Arc::new(Installed::empty()));
        Self {
            tx: Arc::new(tx),
            rejected: Arc::default(),
            outages: Outages::default(),
        }
    }

    /// The server's outages on purpose: the one in progress, the last one, the signal the
    /// accept loop follows.
    pub(crate) fn outages(&self) -> &Outages {
        &self.outages
    }

    /// What streams follow: the scenario in force, then every change.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Installed>> {
        self.tx.subscribe()
    }

    /// The scenario in force now.
    pub fn current(&self) -> Arc<Installed> {
        self.tx.borrow().clone()
    }

    /// Puts `scenario` in force on every stream, open and new, with fresh counters. A scenario
    /// that breaks a rule is refused (the one in force stays) and the error is kept for
    /// `/status`.
    pub fn set(&self, scenario: Scenario) -> Result<Arc<Installed>, String> {
        self.install(scenario, Origin::Code, None, None)
    }

    /// Removes the scenario in force: the server behaves again.
    pub fn clear(&self) {
        self.install(Scenario::default(), Origin::None, None, None)
            .expect("the empty scenario is valid");
    }

    /// [`Self::set`] for the file watcher and the admin routes, which say where it came from.
    pub(crate) fn install(
        &self,
        scenario: Scenario,
        origin: Origin,
        path: Option<PathBuf>,
        text: Option<String>,
    ) -> Result<Arc<Installed>, String> {
        let checked = scenario
            .with_full_type_urls()
            .and_then(|s| s.check().map(|()| s));
        let scenario = match checked {
            Ok(scenario) => scenario,
            Err(error) => {
                self.reject(origin, error.clone());
                return Err(error);
            }
        };
        let counters = scenario
            .rules
            .iter()
            .map(|_| RuleCounters::default())
            .collect();
        let mut installed = None;
        self.tx.send_modify(|current| {
            let next = Arc::new(Installed {
                scenario,
                counters,
                generation: current.generation + 1,
                origin,
                path,
                loaded_at: SystemTime::now(),
                text,
            });
            installed = Some(next.clone());
            *current = next;
        });
        *self.rejected.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(installed.expect("send_modify ran"))
    }

    /// Asks every open stream to resync: each type whose client may not hold what the
    /// current snapshot serves it (a fault left it NACKED, PENDING or short) is sent again.
    /// The scenario in force stays, with its counters. [`Self::clear`] resyncs too.
    pub fn resync(&self) {
        // The same scenario, sent again: streams take it for a resync, not a change.
        self.tx.send_modify(|_| {});
    }

    /// Keeps `error` for `/status`; the scenario in force stays.
    pub(crate) fn reject(&self, origin: Origin, error: String) {
        *self.rejected.lock().unwrap_or_else(|e| e.into_inner()) = Some(Rejected {
            origin,
            at: SystemTime::now(),
            error,
        });
    }

    /// The last refused scenario, until one is installed.
    pub(crate) fn rejected(&self) -> Option<Rejected> {
        self.rejected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
