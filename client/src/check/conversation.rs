//! One stream as a correct client holds it, for the checks to script: per type its interest,
//! the last response and what it holds; every response ACKed (or NACKed when a check says so)
//! the way a client would, whatever its type.
//!
//! Why a model and not "the next response": on ADS a response answers only the pending request
//! of its own type, and a server may push any subscribed type at any moment. So a check waits
//! for a response *of the type it asked*; what arrives of other types is ACKed and kept, never
//! taken for an answer. A push of the same type that crosses a request is ACKed with the
//! client's current interest, as Envoy does, and the check goes on waiting for what it asked.
//!
//! Every response is also judged against the sentences that hold for all responses (a nonce,
//! fresh for its type; `Any`s of the response's type; one instance of each name; a resource
//! name on each Delta resource; nothing resent that the client already holds; no type the
//! stream never asked for). What breaks one is a [`Finding`] for the check of that sentence,
//! not a failure of the check that happened to be running.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::{Instant, timeout_at};
use xdsloop_proto::Codec;
use xdsloop_proto::Variant;
use xdsloop_proto::discovery::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
    Status as RpcStatus,
};

use super::case::Case;
use super::describe;
use super::probe::{Delta, Gone, Probe, Sotw, Target};

/// The sentences every response is judged by, as the findings name them.
pub(super) mod sentence {
    /// "All server responses will contain a nonce" (SotW).
    pub(crate) const NONCE: &str = "basic-protocol.4";
    /// "the nonce field is required" (Delta).
    pub(crate) const DELTA_NONCE: &str = "delta.2";
    /// SotW: the response's type_url "Must be consistent with the type_url in the 'resources'
    /// repeated Any".
    pub(crate) const ANY_TYPE: &str = "proto.discovery-response.1";
    /// Delta: "typed resources, whose types must match the type_url field".
    pub(crate) const DELTA_ANY_TYPE: &str = "proto.delta-response.1";
    /// "It is an error for a server to send a single response that contains the same resource
    /// name twice."
    pub(crate) const DUPLICATE: &str = "duplicate-names.1";
    /// "The management server should only send updates to the Envoy client when the resources
    /// in the DiscoveryResponse have changed."
    pub(crate) const NEEDLESS: &str = "resource-update.1";
    /// "The resource name will be returned in the name field in the resource of a
    /// DeltaDiscoveryResponse."
    pub(crate) const DELTA_NAME: &str = "resource-names.1";
    /// "each resource type is treated as a separate logical stream within the aggregated
    /// stream": a type the stream never asked for is not pushed to it.
    pub(crate) const SEPARATE: &str = "rpc-services.1";
}

/// Something a response broke, for the check of `sentence`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Finding {
    pub sentence: &'static str,
    /// The check that was running, and its case.
    pub during: String,
    pub text: String,
}

/// Every finding of a run, shared by the streams that make them.
#[derive(Clone, Debug, Default)]
pub(super) struct Findings(Arc<Mutex<Vec<Finding>>>);

impl Findings {
    fn push(&self, finding: Finding) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(finding);
    }

    /// The findings against `sentence`, in the order they were made.
    pub(super) fn of(&self, sentence: &str) -> Vec<Finding> {
        let all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.iter()
            .filter(|f| f.sentence == sentence)
            .cloned()
            .collect()
    }
}

/// One resource of a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Item {
    pub name: String,
    /// Delta: the resource's version; SotW: empty.
    pub version: String,
    /// The `Any`'s type URL (empty for a Delta resource without a body).
    pub type_url: String,
    /// The encoded resource (`None`: a Delta resource without one).
    pub body: Option<Vec<u8>>,
}

/// A response, whichever variant carried it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Seen {
    pub type_url: String,
    pub nonce: String,
    /// SotW `version_info`, Delta `system_version_info`.
    pub version: String,
    pub resources: Vec<Item>,
    /// Delta `removed_resources`.
    pub removed: Vec<String>,
    /// The evidence phrase (`eds v"3" nonce "1-4" [a, b]`).
    pub shown: String,
}

impl Seen {
    fn sotw(codec: &Codec, r: &DiscoveryResponse) -> Self {
        let names = describe::sotw_names(codec, r);
        let resources = r.resources.iter().zip(names);
        Self {
            type_url: r.type_url.clone(),
            nonce: r.nonce.clone(),
            version: r.version_info.clone(),
            resources: resources
                .map(|(any, name)| Item {
                    name,
                    version: String::new(),
                    type_url: any.type_url.clone(),
                    body: Some(any.value.clone()),
                })
                .collect(),
            removed: Vec::new(),
            shown: describe::sotw(codec, r),
        }
    }

    fn delta(r: &DeltaDiscoveryResponse) -> Self {
        Self {
            type_url: r.type_url.clone(),
            nonce: r.nonce.clone(),
            version: r.system_version_info.clone(),
            resources: r
                .resources
                .iter()
                .map(|w| Item {
                    name: w.name.clone(),
                    version: w.version.clone(),
                    type_url: w
                        .resource
                        .as_ref()
                        .map(|a| a.type_url.clone())
                        .unwrap_or_default(),
                    body: w.resource.as_ref().map(|a| a.value.clone()),
                })
                .collect(),
            removed: r.removed_resources.clone(),
            shown: describe::delta(r),
        }
    }

    /// The names of the resources it carries with a body.
    pub(super) fn names(&self) -> Vec<&str> {
        let sent = self.resources.iter().filter(|r| r.body.is_some());
        sent.map(|r| r.name.as_str()).collect()
    }

    pub(super) fn has(&self, name: &str) -> bool {
        self.resources
            .iter()
            .any(|r| r.name == name && r.body.is_some())
    }

    /// Delta: it says `name` does not exist (`removed_resources`, or a resource without body).
    pub(super) fn removes(&self, name: &str) -> bool {
        self.removed.iter().any(|n| n == name)
            || self
                .resources
                .iter()
                .any(|r| r.name == name && r.body.is_none())
    }

    /// The same version and resources (names, versions, bodies) and removals as `other`.
    pub(super) fn same_content(&self, other: &Seen) -> bool {
        let items = |s: &Seen| -> Vec<(String, String, Option<Vec<u8>>)> {
            let mut v: Vec<_> = s
                .resources
                .iter()
                .map(|r| (r.name.clone(), r.version.clone(), r.body.clone()))
                .collect();
            v.sort();
            v
        };
        self.type_url == other.type_url
            && self.version == other.version
            && items(self) == items(other)
            && self.removed == other.removed
    }

    /// name → body, what a client holds after applying it (SotW) or what it changes (Delta).
    fn bodies(&self) -> BTreeMap<&str, &[u8]> {
        let with_body = self
            .resources
            .iter()
            .filter_map(|r| Some((r.name.as_str(), r.body.as_deref()?)));
        with_body.collect()
    }
}

/// Why the response a check waited for did not come.
#[derive(Clone, Debug)]
pub(super) struct Miss {
    pub gone: Gone,
    /// What else the stream showed meanwhile that another check judges (a response under a
    /// type URL never asked for, ...): the wait was disturbed, not answered wrongly.
    pub disturbed: Option<String>,
    /// Responses of the awaited type that came but did not satisfy the wait.
    pub before: Vec<Seen>,
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.gone)?;
        if !self.before.is_empty() {
            // The first few and the last: a server pushing in a loop would fill a screen.
            let n = self.before.len();
            let mut shown: Vec<&str> = self
                .before
                .iter()
                .take(3)
                .map(|s| s.shown.as_str())
                .collect();
            if n > 4 {
                write!(
                    f,
                    "; sent instead ({n} responses): {}; …; ",
                    shown.join("; ")
                )?;
                write!(f, "{}", self.before[n - 1].shown)?;
            } else {
                shown.extend(self.before.iter().skip(3).map(|s| s.shown.as_str()));
                write!(f, "; sent instead: {}", shown.join("; "))?;
            }
        }
        Ok(())
    }
}

/// What arrived in a quiet window.
#[derive(Debug, Default)]
pub(super) struct Quiet {
    pub got: Vec<Seen>,
    pub ended: Option<Gone>,
}

enum Wire {
    Sotw(Probe<Sotw>),
    Delta(Probe<Delta>),
}

/// What the client side keeps per type.
#[derive(Debug, Default)]
struct TypeState {
    /// SotW: the names of the latest request (its interest); Delta: the names subscribed.
    names: BTreeSet<String>,
    /// A request of the type was sent.
    asked: bool,
    /// The latest response of the type.
    last: Option<Seen>,
    /// SotW: the version last accepted.
    accepted: String,
    /// Nonces seen for the type on this stream.
    nonces: BTreeSet<String>,
    /// Delta: name → version held; SotW: name → body (what a client holds).
    held: BTreeMap<String, Vec<u8>>,
    /// Names the client asked for since the last response (a response may repeat them).
    fresh: BTreeSet<String>,
    /// Changes of interest sent whose answer has not come yet: each may be answered by a
    /// response that repeats what the client holds.
    pending: u32,
    /// NACK the next response instead of ACKing it.
    nack_next: bool,
}

/// One stream, scripted by a check.
pub(super) struct Conv {
    wire: Wire,
    case: Case,
    codec: Codec,
    /// `<check> <case>`, for findings.
    during: String,
    findings: Findings,
    types: BTreeMap<String, TypeState>,
    /// Responses under a type this stream never asked for: why a wait may be disturbed.
    strays: Vec<String>,
}

impl Conv {
    /// A stream for `case`, on a connection of its own.
    pub(super) fn open(
        target: &Target,
        codec: &Codec,
        case: Case,
        check: &str,
        findings: &Findings,
    ) -> Self {
        let wire = match case.variant {
            Variant::Sotw => Wire::Sotw(Probe::open_on(target, case.service)),
            Variant::Delta => Wire::Delta(Probe::open_on(target, case.service)),
        };
        Self {
            wire,
            case,
            codec: codec.clone(),
            during: format!("{check} {case}"),
            findings: findings.clone(),
            types: BTreeMap::new(),
            strays: Vec::new(),
        }
    }

    pub(super) fn case(&self) -> Case {
        self.case
    }

    /// Asks for exactly `names` of `url` (the wildcard is `*`; nothing at all on a type never
    /// asked is the legacy wildcard, and after names, no interest). SotW sends the whole list
    /// with the latest nonce and accepted version; Delta subscribes and unsubscribes the
    /// difference.
    pub(super) async fn want(&mut self, url: &str, names: &[&str]) -> Result<(), Gone> {
        let wanted: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
        let state = self.types.entry(url.to_string()).or_default();
        let added: Vec<String> = wanted.difference(&state.names).cloned().collect();
        let dropped: Vec<String> = state.names.difference(&wanted).cloned().collect();
        state.fresh.extend(added.iter().cloned());
        state.pending += 1;
        match &mut self.wire {
            Wire::Sotw(p) => {
                let nonce = state
                    .last
                    .as_ref()
                    .map(|l| l.nonce.clone())
                    .unwrap_or_default();
                let (version, listed) = (state.accepted.clone(), names.to_vec());
                state.names = wanted;
                state.asked = true;
                p.send(sotw_request(url, &listed, &version, &nonce)).await
            }
            Wire::Delta(p) => {
                state.names = wanted;
                state.asked = true;
                let add: Vec<&str> = added.iter().map(String::as_str).collect();
                let drop: Vec<&str> = dropped.iter().map(String::as_str).collect();
                p.change(url, &add, &drop).await
            }
        }
    }

    /// Delta: subscribes `add` and unsubscribes `drop` as given (names never subscribed
    /// included), the interest following.
    pub(super) async fn change(
        &mut self,
        url: &str,
        add: &[&str],
        drop: &[&str],
    ) -> Result<(), Gone> {
        let state = self.types.entry(url.to_string()).or_default();
        state.asked = true;
        state.pending += 1;
        for name in add {
            state.names.insert(name.to_string());
            state.fresh.insert(name.to_string());
        }
        for name in drop {
            state.names.remove(*name);
        }
        match &mut self.wire {
            Wire::Delta(p) => p.change(url, add, drop).await,
            Wire::Sotw(_) => unreachable!("change is a Delta request"),
        }
    }

    /// Delta: a first request that subscribes `names` and declares `held` (name → version) in
    /// `initial_resource_versions`.
    pub(super) async fn resume(
        &mut self,
        url: &str,
        names: &[&str],
        held: BTreeMap<String, String>,
    ) -> Result<(), Gone> {
        let state = self.types.entry(url.to_string()).or_default();
        state.asked = true;
        state.pending += 1;
        state.names = names.iter().map(|n| n.to_string()).collect();
        state.fresh = state.names.clone();
        for (name, version) in &held {
            state
                .held
                .insert(name.clone(), version.clone().into_bytes());
        }
        match &mut self.wire {
            Wire::Delta(p) => p.resume(url, names, held).await,
            Wire::Sotw(_) => unreachable!("resume is a Delta request"),
        }
    }

    /// SotW: a new stream's first request for `names` at `version`: what a client sends when
    /// it comes back holding that version.
    pub(super) async fn resume_sotw(
        &mut self,
        url: &str,
        names: &[&str],
        version: &str,
    ) -> Result<(), Gone> {
        let state = self.types.entry(url.to_string()).or_default();
        state.asked = true;
        state.pending += 1;
        state.accepted = version.to_string();
        state.names = names.iter().map(|n| n.to_string()).collect();
        state.fresh = state.names.clone();
        match &mut self.wire {
            Wire::Sotw(p) => p.send(sotw_request(url, names, version, "")).await,
            Wire::Delta(_) => unreachable!("resume_sotw is a SotW request"),
        }
    }

    /// SotW: a request sent as given, leaving the interest as it was: what a check sends that
    /// a client would not (a stale nonce, a version it never had).
    pub(super) async fn raw(
        &mut self,
        url: &str,
        names: &[&str],
        version: &str,
        nonce: &str,
    ) -> Result<(), Gone> {
        self.types.entry(url.to_string()).or_default().asked = true;
        match &mut self.wire {
            Wire::Sotw(p) => p.send(sotw_request(url, names, version, nonce)).await,
            Wire::Delta(_) => unreachable!("raw is a SotW request"),
        }
    }

    /// Delta: a request with subscription changes and the nonce given (a stale one), as sent.
    pub(super) async fn raw_delta(&mut self, request: DeltaDiscoveryRequest) -> Result<(), Gone> {
        let url = request.type_url.clone();
        let state = self.types.entry(url).or_default();
        for name in &request.resource_names_subscribe {
            state.names.insert(name.clone());
            state.fresh.insert(name.clone());
        }
        for name in &request.resource_names_unsubscribe {
            state.names.remove(name);
        }
        state.pending += 1;
        match &mut self.wire {
            Wire::Delta(p) => p.send(request).await,
            Wire::Sotw(_) => unreachable!("raw_delta is a Delta request"),
        }
    }

    /// The next response of `url`, ACKed; what arrives of other types meanwhile is ACKed and
    /// kept.
    pub(super) async fn next(&mut self, url: &str, within: Duration) -> Result<Seen, Miss> {
        self.until(url, within, |_| true).await
    }

    /// The next response of `url` for which `wanted` holds, within `within`; every response is
    /// ACKed (or NACKed, see [`Self::nack_next`]).
    pub(super) async fn until(
        &mut self,
        url: &str,
        within: Duration,
        mut wanted: impl FnMut(&Seen) -> bool,
    ) -> Result<Seen, Miss> {
        let deadline = Instant::now() + within;
        let mut before = Vec::new();
        loop {
            match timeout_at(deadline, self.read()).await {
                Err(_) => return Err(self.miss(Gone::Silent(within), before)),
                Ok(Err(gone)) => return Err(self.miss(gone, before)),
                Ok(Ok(seen)) if seen.type_url == url && wanted(&seen) => return Ok(seen),
                Ok(Ok(seen)) if seen.type_url == url => before.push(seen),
                Ok(Ok(_)) => {}
            }
        }
    }

    /// The next response of any type, ACKed, within `within`.
    pub(super) async fn until_any(&mut self, within: Duration) -> Result<Seen, Miss> {
        match tokio::time::timeout(within, self.read()).await {
            Err(_) => Err(self.miss(Gone::Silent(within), Vec::new())),
            Ok(Err(gone)) => Err(self.miss(gone, Vec::new())),
            Ok(Ok(seen)) => Ok(seen),
        }
    }

    /// Everything that arrives within `window`, each ACKed.
    pub(super) async fn quiet(&mut self, window: Duration) -> Quiet {
        let deadline = Instant::now() + window;
        let mut quiet = Quiet::default();
        loop {
            match timeout_at(deadline, self.read()).await {
                Err(_) => return quiet,
                Ok(Ok(seen)) => quiet.got.push(seen),
                Ok(Err(gone)) => {
                    quiet.ended = Some(gone);
                    return quiet;
                }
            }
        }
    }

    /// The next response of `url` will be NACKed (with the last accepted version), not ACKed.
    pub(super) fn nack_next(&mut self, url: &str) {
        self.types.entry(url.to_string()).or_default().nack_next = true;
    }

    /// The latest response of `url`, if any.
    pub(super) fn last(&self, url: &str) -> Option<&Seen> {
        self.types.get(url)?.last.as_ref()
    }

    /// A last quiet window, so that what the server sends after the check's own exchange is
    /// judged too ("never responds more than necessary").
    pub(super) async fn finish(mut self, window: Duration) {
        let _ = self.quiet(window).await;
    }

    fn miss(&self, gone: Gone, before: Vec<Seen>) -> Miss {
        let disturbed = (!self.strays.is_empty()).then(|| {
            let n = self.strays.len();
            let mut shown: Vec<&str> = self.strays.iter().take(3).map(String::as_str).collect();
            if n > 3 {
                shown.push("…");
            }
            format!("the stream was disturbed: {}", shown.join("; "))
        });
        Miss {
            gone,
            disturbed,
            before,
        }
    }

    /// The next response of any type: judged, recorded and answered.
    async fn read(&mut self) -> Result<Seen, Gone> {
        let seen = match &mut self.wire {
            Wire::Sotw(p) => Seen::sotw(&self.codec, &p.next().await?),
            Wire::Delta(p) => Seen::delta(&p.next().await?),
        };
        self.judge(&seen);
        // A type never asked for is not answered: a request for it would subscribe (as Envoy,
        // which ignores a response no subscription of its own wants).
        if self.types.get(&seen.type_url).is_some_and(|t| t.asked) {
            self.answer(&seen).await?;
        }
        Ok(seen)
    }

    /// ACKs (or NACKs) `seen` as a client would, and records what it now holds.
    async fn answer(&mut self, seen: &Seen) -> Result<(), Gone> {
        let delta = self.case.variant == Variant::Delta;
        let state = self.types.entry(seen.type_url.clone()).or_default();
        let news = !repeats(state, seen, delta);
        let nack = std::mem::take(&mut state.nack_next);
        match &mut self.wire {
            Wire::Sotw(p) => {
                let names: Vec<&str> = state.names.iter().map(String::as_str).collect();
                let names: Vec<&str> = match state.names.is_empty() && !state.asked {
                    true => Vec::new(),
                    false => names,
                };
                let version = match nack {
                    true => state.accepted.clone(),
                    false => seen.version.clone(),
                };
                let error = nack.then(rejection);
                p.send(DiscoveryRequest {
                    version_info: version.clone(),
                    resource_names: names.iter().map(|n| n.to_string()).collect(),
                    type_url: seen.type_url.clone(),
                    response_nonce: seen.nonce.clone(),
                    error_detail: error,
                    ..Default::default()
                })
                .await?;
                if !nack {
                    state.accepted = version;
                    state.held = seen
                        .bodies()
                        .into_iter()
                        .map(|(n, b)| (n.to_string(), b.to_vec()))
                        .collect();
                }
            }
            Wire::Delta(p) => {
                p.send(DeltaDiscoveryRequest {
                    type_url: seen.type_url.clone(),
                    response_nonce: seen.nonce.clone(),
                    error_detail: nack.then(rejection),
                    ..Default::default()
                })
                .await?;
                if !nack {
                    for item in &seen.resources {
                        if item.body.is_some() {
                            state
                                .held
                                .insert(item.name.clone(), item.version.clone().into_bytes());
                        }
                    }
                    for name in &seen.removed {
                        state.held.remove(name);
                    }
                }
            }
        }
        // A repeat is taken for the answer to the oldest change pending. A response that
        // brought news may be a push that crossed the requests on the wire: the answers may
        // still follow, and may repeat.
        if !news {
            state.pending = state.pending.saturating_sub(1);
        }
        if state.pending == 0 {
            state.fresh.clear();
        }
        state.last = Some(seen.clone());
        Ok(())
    }

    /// Judges `seen` by the sentences that hold for every response.
    fn judge(&mut self, seen: &Seen) {
        let delta = self.case.variant == Variant::Delta;
        let short = describe::short(&seen.type_url).to_string();
        let asked = self.types.get(&seen.type_url).is_some_and(|t| t.asked);
        let mut found = Vec::new();
        let nonce = if delta {
            sentence::DELTA_NONCE
        } else {
            sentence::NONCE
        };
        let state = self.types.entry(seen.type_url.clone()).or_default();
        if seen.nonce.is_empty() {
            found.push((nonce, format!("a response without a nonce: {}", seen.shown)));
        } else if !state.nonces.insert(seen.nonce.clone()) {
            found.push((
                nonce,
                format!(
                    "nonce {:?} sent twice for {short} on one stream: {}",
                    seen.nonce, seen.shown
                ),
            ));
        }
        let any_type = if delta {
            sentence::DELTA_ANY_TYPE
        } else {
            sentence::ANY_TYPE
        };
        let foreign = seen
            .resources
            .iter()
            .enumerate()
            .find(|(_, r)| r.body.is_some() && r.type_url != seen.type_url);
        // One sentence per response: a type the stream never asked for is judged as that (its
        // resources answer no request of theirs); only an asked type's resources are held to
        // its type_url.
        if !asked {
            found.push((
                sentence::SEPARATE,
                format!(
                    "a response of type {:?}, which this stream never asked for: {}",
                    seen.type_url, seen.shown
                ),
            ));
        } else if let Some((i, r)) = foreign {
            found.push((
                any_type,
                format!(
                    "resource #{} has Any type_url {:?} in a {:?} response: {}",
                    i + 1,
                    r.type_url,
                    seen.type_url,
                    seen.shown
                ),
            ));
        }
        let unnamed = seen.resources.iter().position(|r| r.name.is_empty());
        if delta && let Some(i) = unnamed {
            found.push((
                sentence::DELTA_NAME,
                format!("resource #{} has no name: {}", i + 1, seen.shown),
            ));
        }
        // A response whose resources cannot be told apart or answer no request of theirs: a
        // case waiting on it is disturbed (a SKIP naming the sentence that judged it).
        let stray = match (asked, foreign.is_some(), delta && unnamed.is_some()) {
            (false, _, _) => Some(sentence::SEPARATE),
            (true, true, _) => Some(any_type),
            (true, false, true) => Some(sentence::DELTA_NAME),
            _ => None,
        };
        if let Some(by) = stray {
            self.strays.push(format!(
                "a response under type_url {:?} ({}), judged by {by}",
                seen.type_url, seen.shown
            ));
        }
        let mut names = BTreeSet::new();
        // An unnamed resource is judged above; two of them are not "the same name twice".
        let mut named = seen.resources.iter().filter(|r| !r.name.is_empty());
        if let Some(twice) = named.find(|r| !names.insert(r.name.as_str())) {
            found.push((
                sentence::DUPLICATE,
                format!("{} appears twice in {}", twice.name, seen.shown),
            ));
        }
        if stray.is_none() && needless(state, seen, delta) {
            let last = state
                .last
                .as_ref()
                .map(|l| l.shown.as_str())
                .unwrap_or_default();
            found.push((
                sentence::NEEDLESS,
                format!(
                    "{} repeats what the client holds ({last}) with no change asked for",
                    seen.shown
                ),
            ));
        }
        for (sentence, text) in found {
            let during = self.during.clone();
            self.findings.push(Finding {
                sentence,
                during,
                text,
            });
        }
    }
}

/// Whether `seen` tells the client nothing it does not hold, though its interest did not
/// change since the last response: the same version and resources again (SotW), or only
/// resources it holds at those versions and no removal of one it holds (Delta).
fn needless(state: &TypeState, seen: &Seen, delta: bool) -> bool {
    state.pending == 0 && state.fresh.is_empty() && repeats(state, seen, delta)
}

/// Whether `seen` holds nothing the client does not hold already, whatever it asked since.
fn repeats(state: &TypeState, seen: &Seen, delta: bool) -> bool {
    let Some(last) = &state.last else {
        return false;
    };
    if !delta {
        return last.version == seen.version && last.bodies() == seen.bodies();
    }
    let same = |r: &Item| {
        r.body.is_some()
            && state
                .held
                .get(&r.name)
                .is_some_and(|v| *v == r.version.as_bytes())
    };
    let removes_held = seen.removed.iter().any(|n| state.held.contains_key(n));
    seen.resources.iter().all(same)
        && !removes_held
        && seen.removed.iter().all(|n| !state.names.contains(n))
}

fn sotw_request(url: &str, names: &[&str], version: &str, nonce: &str) -> DiscoveryRequest {
    DiscoveryRequest {
        version_info: version.to_string(),
        resource_names: names.iter().map(|n| n.to_string()).collect(),
        type_url: url.to_string(),
        response_nonce: nonce.to_string(),
        ..Default::default()
    }
}

/// The `error_detail` of the suite's NACKs: INVALID_ARGUMENT, as gRPC's clients send.
pub(super) fn rejection() -> RpcStatus {
    RpcStatus {
        code: tonic::Code::InvalidArgument as i32,
        message: "rejected by xdsloop-client check".to_string(),
        details: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(version: &str, resources: &[(&str, &str, &[u8])]) -> Seen {
        Seen {
            type_url: "t".into(),
            nonce: "n".into(),
            version: version.into(),
            resources: resources
                .iter()
                .map(|(n, v, b)| Item {
                    name: n.to_string(),
                    version: v.to_string(),
                    type_url: "t".into(),
                    body: Some(b.to_vec()),
                })
                .collect(),
            removed: Vec::new(),
            shown: String::new(),
        }
    }

    #[test]
    fn a_repeat_is_needless_only_when_nothing_was_asked_since() {
        let first = seen("1", &[("a", "", b"x")]);
        let mut state = TypeState {
            last: Some(first.clone()),
            ..TypeState::default()
        };
        assert!(
            needless(&state, &first, false),
            "same version, same resources, only an ACK since"
        );
        assert!(
            !needless(&state, &seen("2", &[("a", "", b"x")]), false),
            "a new version"
        );
        assert!(
            !needless(&state, &seen("1", &[("a", "", b"y")]), false),
            "new content"
        );
        state.pending = 1;
        assert!(
            !needless(&state, &first, false),
            "the interest changed: a repeat may answer it"
        );
    }

    #[test]
    fn a_delta_response_is_needless_when_it_holds_only_what_the_client_holds() {
        let first = seen("s1", &[("a", "1", b"x")]);
        let mut state = TypeState {
            last: Some(first.clone()),
            ..TypeState::default()
        };
        state.held.insert("a".into(), b"1".to_vec());
        assert!(needless(&state, &first, true));
        assert!(!needless(&state, &seen("s2", &[("a", "2", b"y")]), true));
        state.fresh.insert("a".into());
        assert!(
            !needless(&state, &first, true),
            "a was subscribed again: it must be sent"
        );
    }
}
