//! Per-stream, per-type subscription state, shared by the SotW and Delta state machines:
//! what the client is interested in ([`Interest`]) and what happened on the wire
//! ([`Ledger`]: last sent, last ACKed, last NACKed). Pure: no I/O, no clock; the timestamps
//! recorded for `/status` are the time the machine was given (`at`).

use std::{collections::BTreeSet, sync::Arc, time::SystemTime};

use serde::Serialize;

use crate::protocol::wire::{FaultMark, Touched, WireFate};
pub(crate) use crate::snapshot::names::SharedNames;

use crate::protocol::ttl::HeartbeatStatus;

pub(crate) use xdsloop_proto::discovery::WILDCARD;
use xdsloop_proto::discovery::{MAX_NACK_MESSAGE_BYTES, truncated};

/// Which resources of one type a stream wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Interest {
    wildcard: bool,
    /// Sorted, shared with other streams asking for the same names and with `/status`.
    names: SharedNames,
    /// Bumped whenever `wildcard` or `names` change, so callers can keep values derived from
    /// the interest until it changes.
    revision: u64,
    /// Whether the client ever named resources (or `*`) for this type. Before that, an empty
    /// SotW request is the legacy wildcard; after it, an empty request unsubscribes (S6).
    explicit: bool,
}

impl Interest {
    pub(crate) fn is_wildcard(&self) -> bool {
        self.wildcard
    }

    /// Explicitly named resources (without `*`), sorted.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether `name` is explicitly named.
    pub(crate) fn names_contain(&self, name: &str) -> bool {
        self.names.has(name)
    }

    /// The explicit names as a shared list (cheap to clone).
    pub(crate) fn shared_names(&self) -> SharedNames {
        self.names.clone()
    }

    /// Changes with every change of the wildcard flag or the names.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    fn set_names(&mut self, names: SharedNames) {
        if names != self.names {
            self.names = names;
            self.revision += 1;
        }
    }

    fn set_wildcard(&mut self, wildcard: bool) {
        if self.wildcard != wildcard {
            self.wildcard = wildcard;
            self.revision += 1;
        }
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.wildcard || self.names.has(name)
    }

    /// Interested in nothing at all (explicitly unsubscribed from everything).
    pub(crate) fn is_empty(&self) -> bool {
        !self.wildcard && self.names.is_empty()
    }

    /// SotW: every request carries the complete set of names. Returns whether the interest
    /// widened (wildcard switched on, or a name not asked for before), which the server must
    /// answer even if it sent those resources before (S5).
    pub(crate) fn replace<S: AsRef<str>>(&mut self, requested: &[S]) -> bool {
        let was_wildcard = self.wildcard;
        let wildcard = self.sotw_subscribes_wildcard(requested);
        if requested.is_empty() {
            self.set_wildcard(wildcard);
            self.set_names(SharedNames::default());
            return self.wildcard && !was_wildcard;
        }
        self.explicit = true;
        // Fast path for the common ACK: the same names again, in the set's (sorted) order.
        let requested = requested.iter().map(AsRef::as_ref);
        let same = !self.wildcard
            && requested.len() == self.names.len()
            && requested.clone().eq(self.names.iter().map(String::as_str));
        if same {
            return false;
        }
        let names = requested.filter(|n| *n != WILDCARD).map(str::to_string);
        let names = SharedNames::interned(names.collect());
        let widened = (wildcard && !was_wildcard) || !names.iter().all(|n| self.names.has(n));
        self.set_wildcard(wildcard);
        self.set_names(names);
        widened
    }

    /// SotW: whether a request naming `requested` subscribes to the wildcard, as
    /// [`Interest::replace`] reads it: naming nothing before the client ever named a resource
    /// of this type (the legacy wildcard, which the empty-named ACKs after it keep), or naming
    /// `*`. Once the client has named resources, naming nothing unsubscribes from everything.
    pub(crate) fn sotw_subscribes_wildcard<S: AsRef<str>>(&self, requested: &[S]) -> bool {
        if requested.is_empty() {
            return !self.explicit;
        }
        requested.iter().any(|n| n.as_ref() == WILDCARD)
    }

    /// Delta: requests carry changes only. A first request that subscribes nothing is the
    /// legacy wildcard, equivalent to subscribing to `*`.
    pub(crate) fn apply_delta(
        &mut self,
        first: bool,
        subscribe: &[String],
        unsubscribe: &[String],
    ) {
        if delta_subscribes_wildcard(first, subscribe) {
            self.set_wildcard(true);
        }
        if subscribe.is_empty() && unsubscribe.is_empty() {
            // An ACK or NACK: the names stay as they are (and are not rebuilt per request).
            return;
        }
        let current = self.names.clone();
        let mut names: BTreeSet<&String> = current.iter().collect();
        for name in subscribe {
            if name == WILDCARD {
                self.set_wildcard(true);
            } else {
                names.insert(name);
            }
        }
        for name in unsubscribe {
            if name == WILDCARD {
                self.set_wildcard(false);
            } else {
                names.remove(name);
            }
        }
        if !names.iter().copied().eq(current.iter()) {
            let names = names.into_iter().cloned().collect();
            self.set_names(SharedNames::interned(names));
        }
        self.explicit |= !subscribe.is_empty() || !unsubscribe.is_empty();
    }
}

/// A response as recorded for `/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sent {
    /// Its `version_info` (Delta: `system_version_info`).
    pub version: String,
    /// Its nonce.
    pub nonce: String,
    /// Resources in the response (Delta: changed resources, not counting removals).
    pub resources: usize,
    /// When it was sent (or, while held back, decided).
    pub at: SystemTime,
    /// The scenario rule that changed, delayed or withheld this response on its way out.
    pub fault: Option<FaultMark>,
    /// Resources a `withhold` rule left out of it (not counted in `resources`).
    pub withheld: Option<Withheld>,
    /// While a `delay` holds it back: it is not on the wire yet.
    pub held: Option<HeldBack>,
}

/// Whether a fault of this action can leave the client holding something other than what is
/// served. Repeating a response, sending it late or under an earlier nonce cannot.
fn changes_content(action: &str) -> bool {
    !matches!(action, "ignore_acks" | "delay" | "stale_nonce")
}

/// A response a `delay` holds back: decided at `since`, on the wire at `until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HeldBack {
    /// When the `delay` took it.
    pub since: SystemTime,
    /// When it goes out.
    pub until: SystemTime,
    /// The stream ended while it was held: it never went out.
    pub never_sent: bool,
}

/// What a `withhold` rule left out of a response: the client was never told of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Withheld {
    /// The rule's id.
    #[serde(serialize_with = "arc_str")]
    pub rule: Arc<str>,
    /// The names left out.
    pub names: Vec<String>,
    /// Since when the client has been kept waiting for them: the first response of the
    /// stream's unbroken run of responses that left these names out (its not-found timer
    /// started with its request, just before).
    #[serde(skip)]
    pub since: SystemTime,
}

fn arc_str<S: serde::Serializer>(text: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(text)
}

/// The last ACK: the client applied `version` (sent with `nonce`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Acked {
    /// The version applied.
    pub version: String,
    /// The nonce the client echoed.
    pub nonce: String,
    /// When the ACK arrived.
    pub at: SystemTime,
}

/// The last NACK: the client rejected `version` (sent with `nonce`) with `message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Nacked {
    /// The version rejected.
    pub version: String,
    /// The nonce the client echoed.
    pub nonce: String,
    /// The client's `error_detail.message`.
    pub message: String,
    /// When the NACK arrived.
    pub at: SystemTime,
}

/// What a request's `response_nonce` and `error_detail` say about our last response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No response was sent for this type yet, or the request carries no nonce: a plain
    /// (re)subscription, neither ACK nor NACK.
    Initial,
    /// The latest response was accepted (no `error_detail`; S2: never judged by version).
    Ack,
    /// The latest response was rejected (`error_detail` set).
    Nack,
    /// The nonce is not the latest sent for this type: the client has not seen our newest
    /// response yet (S4).
    Stale,
    /// Not classified: the request has no type URL. Never returned by the ledger's classification.
    Ignored,
}

/// Delta: whether a request subscribes to the wildcard, as [`Interest::apply_delta`] reads it:
/// the first request for its type subscribing nothing (the legacy wildcard), or any request
/// naming `*`. The ACKs and NACKs after a first request subscribe nothing too, and are not.
pub(crate) fn delta_subscribes_wildcard<S: AsRef<str>>(first: bool, subscribe: &[S]) -> bool {
    (first && subscribe.is_empty()) || subscribe.iter().any(|n| n.as_ref() == WILDCARD)
}

/// What one request did, as the machine decided it: set by every `on_request`, read by the
/// loop's observers (the tap, the judge, the counters) and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    /// ACK, NACK, stale or initial.
    pub verdict: Verdict,
    /// The first request for its type on this stream.
    pub first_for_type: bool,
    /// Whether it widened or narrowed the interest in its type.
    pub change: Change,
    /// Whether it subscribes to the wildcard: SotW, [`Interest::sotw_subscribes_wildcard`] (an
    /// empty list is the wildcard only until the client names resources); Delta,
    /// [`delta_subscribes_wildcard`].
    pub wildcard: bool,
}

impl Default for Exchange {
    /// Before any request: nothing was decided.
    fn default() -> Self {
        Self {
            verdict: Verdict::Ignored,
            first_for_type: false,
            change: Change::None,
            wildcard: false,
        }
    }
}

/// Whether a request changed the interest in its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The interest stayed as it was.
    None,
    /// Something is wanted that was not before: a new name, or the wildcard.
    Widened,
    /// Only names (or the wildcard) were given up.
    Narrowed,
}

impl Change {
    /// From the interest's revision before and after the request, and whether it widened.
    pub(crate) fn of(widened: bool, revision_before: u64, revision_after: u64) -> Self {
        match (widened, revision_before == revision_after) {
            (true, _) => Change::Widened,
            (false, true) => Change::None,
            (false, false) => Change::Narrowed,
        }
    }
}

/// The wire history of one type on one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Ledger {
    pub last_sent: Option<Sent>,
    /// The response before `last_sent`, in case that one never goes on the wire after all
    /// ([`Ledger::withdraw`]).
    pub previous_sent: Option<Sent>,
    pub last_acked: Option<Acked>,
    pub last_nack: Option<Nacked>,
    /// The last response of this type a scenario rule touched (kept after later responses).
    pub last_fault: Option<Touched>,
    /// What the response before the latest withheld, so a run of withholding responses keeps
    /// the time the wait began.
    pub withheld_before: Option<Withheld>,
}

impl Ledger {
    pub(crate) fn classify(&self, response_nonce: &str, has_error: bool) -> Verdict {
        match &self.last_sent {
            // A nonce on a type we never answered on this stream can only come from an
            // earlier stream; treat it as a fresh subscription rather than ignore it forever.
            None => Verdict::Initial,
            Some(_) if response_nonce.is_empty() => Verdict::Initial,
            Some(sent) if sent.nonce != response_nonce => Verdict::Stale,
            Some(_) if has_error => Verdict::Nack,
            Some(_) => Verdict::Ack,
        }
    }

    /// A response went out at `at` with `version` and `nonce`, holding `resources`.
    pub(crate) fn record_sent(
        &mut self,
        version: &str,
        nonce: &str,
        resources: usize,
        at: SystemTime,
    ) {
        self.withheld_before = self.last_sent.as_ref().and_then(|s| s.withheld.clone());
        self.previous_sent = self.last_sent.take();
        self.last_sent = Some(Sent {
            version: version.to_string(),
            nonce: nonce.to_string(),
            resources,
            at,
            fault: None,
            withheld: None,
            held: None,
        });
    }

    /// The response planned with `planned_nonce` never went on the wire (the stream ended
    /// before it, or it went under another type): the one before it is the latest again.
    /// Returns it, if it was the latest.
    pub(crate) fn withdraw(&mut self, planned_nonce: &str) -> Option<Sent> {
        if self.last_sent.as_ref()?.nonce != planned_nonce {
            return None;
        }
        let withdrawn = self.last_sent.take();
        self.last_sent = self.previous_sent.take();
        withdrawn
    }

    /// `sent`, planned for another type, went on the wire as this type's response at `at`.
    pub(crate) fn adopt(&mut self, mut sent: Sent, mark: FaultMark, at: SystemTime) {
        sent.fault = Some(mark.clone());
        self.previous_sent = self.last_sent.replace(sent);
        self.last_fault = Some(Touched { mark, at });
    }

    /// Whether a fault left the client without what this type serves, so a resync sends it
    /// again: the latest response was changed, dropped, cut or is still held, a `withhold`
    /// left something out of it, the client NACKed it, or a fault that changes content touched
    /// the type since the client's last ACK (a response sent under another type instead). A
    /// response that went out as served and is merely not answered yet is on its way, and a
    /// fault that only repeats or delays what is served (`ignore_acks`, a `delay` once sent,
    /// `stale_nonce`) leaves nothing to repair.
    pub(crate) fn unsettled(&self) -> bool {
        let Some(sent) = &self.last_sent else {
            return false;
        };
        let touched = sent
            .fault
            .as_ref()
            .is_some_and(|m| changes_content(m.action));
        let nacked = self
            .last_nack
            .as_ref()
            .is_some_and(|n| n.nonce == sent.nonce);
        let faulted_since = match (&self.last_fault, &self.last_acked) {
            (Some(fault), acked) if changes_content(fault.mark.action) => {
                acked.as_ref().is_none_or(|acked| fault.at >= acked.at)
            }
            _ => false,
        };
        touched || nacked || faulted_since || sent.held.is_some() || sent.withheld.is_some()
    }

    /// Corrects the record of the response planned with `planned_nonce` to what went on the
    /// wire. A reused nonce becomes the one the client will echo, so its answer counts.
    /// Returns false when that response is no longer the latest (nothing to correct).
    pub(crate) fn note_wire(
        &mut self,
        planned_nonce: &str,
        mark: FaultMark,
        fate: &WireFate,
        at: SystemTime,
    ) -> bool {
        let Some(sent) = self.last_sent.as_mut().filter(|s| s.nonce == planned_nonce) else {
            return false;
        };
        match fate {
            WireFate::Sent { nonce } => sent.nonce.clone_from(nonce),
            WireFate::Held { since, until } => {
                sent.held = Some(HeldBack {
                    since: *since,
                    until: *until,
                    never_sent: false,
                });
            }
            WireFate::Delayed { .. } => {
                // On the wire now: that is when it was sent.
                sent.held = None;
                sent.at = at;
            }
            WireFate::NeverSent => {
                if let Some(held) = &mut sent.held {
                    held.never_sent = true;
                }
            }
            WireFate::Withheld { names } => {
                sent.resources = sent.resources.saturating_sub(names.len());
                let waiting = self.withheld_before.as_ref().filter(|before| {
                    before.rule == mark.rule && names.iter().any(|n| before.names.contains(n))
                });
                sent.withheld = Some(Withheld {
                    rule: mark.rule.clone(),
                    names: names.clone(),
                    since: waiting.map_or(at, |before| before.since),
                });
            }
            _ => {}
        }
        sent.fault = Some(mark.clone());
        self.last_fault = Some(Touched { mark, at });
        true
    }

    /// Whether the latest response was answered with an ACK.
    pub(crate) fn acked_latest(&self) -> bool {
        match (&self.last_sent, &self.last_acked) {
            (Some(sent), Some(acked)) => sent.nonce == acked.nonce,
            _ => false,
        }
    }

    /// Records an ACK of the latest response, received at `at`; `version` is what the client
    /// says it applied.
    pub(crate) fn record_ack(&mut self, version: &str, at: SystemTime) {
        let nonce = self.last_sent.as_ref().map(|s| s.nonce.clone());
        self.last_acked = Some(Acked {
            version: version.to_string(),
            nonce: nonce.unwrap_or_default(),
            at,
        });
    }

    /// Records a NACK of the latest response, received at `at`: the rejected version is the
    /// one we sent.
    pub(crate) fn record_nack(&mut self, message: &str, at: SystemTime) -> &Nacked {
        let (version, nonce) = self
            .last_sent
            .as_ref()
            .map(|s| (s.version.clone(), s.nonce.clone()))
            .unwrap_or_default();
        self.last_nack.insert(Nacked {
            version,
            nonce,
            message: bounded(message),
            at,
        })
    }
}

/// NACK messages are client-controlled; keep at most [`MAX_NACK_MESSAGE_BYTES`] of one so a
/// hostile or buggy client cannot grow server memory through the registry.
fn bounded(message: &str) -> String {
    if message.len() <= MAX_NACK_MESSAGE_BYTES {
        return message.to_string();
    }
    format!("{}…", truncated(message, MAX_NACK_MESSAGE_BYTES))
}

/// One type's subscription on one stream, as `/status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TypeStatus {
    /// The full type URL.
    pub type_url: String,
    /// Subscribed to every resource of the type (`*`, or SotW's empty list).
    pub wildcard: bool,
    /// Explicitly subscribed names (without `*`).
    pub names: SharedNames,
    /// The latest response sent.
    pub last_sent: Option<Sent>,
    /// The latest response the client accepted.
    pub last_acked: Option<Acked>,
    /// The latest response the client rejected.
    pub last_nack: Option<Nacked>,
    /// The last response of this type a scenario rule touched.
    pub last_fault: Option<Touched>,
    /// Content hash of what the latest response left the client with (or offered it, if that
    /// was NACKed), restricted to the current subscription and computed like
    /// `TypeResources::content_hash`. `/status` compares it, and for SotW `last_sent.version`
    /// too, with what the current snapshot would serve this stream: an explicit `version_info`
    /// can stay the same while the content changes. `None` before the first response.
    pub held_hash: Option<u64>,
    /// TTL'd resources and heartbeats (S15); `None` when the type holds none.
    pub heartbeats: Option<HeartbeatStatus>,
    /// Served from a recording (`--replay`), not from the snapshot: its state is how the
    /// client answered the latest recorded response.
    pub replayed: bool,
}

/// One type's state on one stream.
#[derive(Debug, Clone, Default)]
pub(crate) struct Subscription {
    pub interest: Interest,
    pub ledger: Ledger,
}

impl Subscription {
    /// The `/status` view of this subscription; `held_hash` is what the client holds (see
    /// [`TypeStatus::held_hash`]).
    pub(crate) fn status(&self, type_url: &str, held_hash: Option<u64>) -> TypeStatus {
        TypeStatus {
            type_url: type_url.to_string(),
            wildcard: self.interest.is_wildcard(),
            names: self.interest.shared_names(),
            last_sent: self.ledger.last_sent.clone(),
            last_acked: self.ledger.last_acked.clone(),
            last_nack: self.ledger.last_nack.clone(),
            last_fault: self.ledger.last_fault.clone(),
            held_hash,
            heartbeats: None,
            replayed: false,
        }
    }
}

#[cfg(test)]
mod tests;
