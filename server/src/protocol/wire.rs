//! What went on the wire, when that is not simply what the machine decided.
//!
//! The machines decide what to send; a fault stage between them and the wire may then drop,
//! delay, mutate or replace a response. The loop reports each such fate back
//! ([`crate::protocol::machine::MachineHooks::note_wire`]) so the ledger, and `/status` with
//! it, shows the response the client really saw (or did not), and which rule touched it.

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use serde::{Serialize, Serializer};

/// Which scenario rule did what to a response or a stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FaultMark {
    /// The rule's id in the scenario file.
    #[serde(serialize_with = "text")]
    pub rule: Arc<str>,
    /// The action's name as the scenario file spells it (`drop`, `stale_nonce`, ...).
    pub action: &'static str,
}

fn text<S: Serializer>(text: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(text)
}

/// What became of a planned response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WireFate {
    /// Sent with `nonce` on it (differs from the planned nonce only when one was reused).
    Sent { nonce: String },
    /// Never sent: the client will answer an older nonce, if any.
    Dropped,
    /// Sent changed (`kind`: what was changed, e.g. `corrupt`).
    Mutated { kind: &'static str },
    /// Sent without these resources (`withhold`).
    Withheld { names: Vec<String> },
    /// Held back from `since` until `until` (a `delay`): not on the wire yet.
    Held {
        since: SystemTime,
        until: SystemTime,
    },
    /// Sent late, after `by`.
    Delayed { by: Duration },
    /// Held back by a `delay`, and the stream ended before it went out.
    NeverSent,
    /// Sent under the foreign type URL `to` instead of its own, `from` (`wrong_type_url` in
    /// the response): it is the client's latest response of `to`, not of `from`.
    Retyped { from: String, to: String },
    /// Not sent: the stream was closed, reset or hung instead (`kind`).
    Cut { kind: &'static str },
}

/// The fault a response met, as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Touched {
    /// The rule and its action.
    #[serde(flatten)]
    pub mark: FaultMark,
    /// When it acted.
    pub at: SystemTime,
}

/// A change the fault stage makes to a response (indexes are entry order: the manifest's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Edit<'a> {
    /// The resource's bytes become undecodable (`Any.value` = a key of wire type 7).
    Corrupt(usize),
    /// The resource twice, side by side.
    Duplicate(usize),
    /// A foreign type URL on the resource's `Any`.
    ResourceTypeUrl(usize, &'a str),
    /// A foreign type URL on the response itself.
    ResponseTypeUrl(&'a str),
    /// An unknown field (number 1000) pads the response to at least this many bytes.
    PadTo(usize),
    /// These resources (ascending entry indexes) are left out, never mentioned.
    Remove(&'a [usize]),
}

/// What the fault stage needs of a response beyond its type URL and nonce.
pub(crate) trait WireResponse {
    /// `version_info` (Delta: `system_version_info`).
    fn version(&self) -> &str;
    /// Bytes of the resource entries (close to the message's encoded size).
    fn entry_bytes(&self) -> usize;
    fn set_nonce(&mut self, nonce: &str);
    /// The entry of the resource named `name`, or the first with `None`; `None` when the
    /// response has no such resource.
    fn position(&self, name: Option<&str>) -> Option<usize>;
    /// The entries of the resources whose names `wanted` picks, ascending.
    fn positions(&self, wanted: &dyn Fn(&str) -> bool) -> Vec<usize>;
    /// The name of the resource at entry `i`, when known.
    fn name_at(&self, i: usize) -> Option<&str>;
    /// Applies `edit`; false when it had nothing to act on.
    fn edit(&mut self, edit: Edit<'_>) -> bool;
}
