//! What went on the wire, when that is not simply what the machine decided.
//!
//! The machines decide what to send; a fault stage between them and the wire may then drop,
//! delay, mutate or replace a response. The loop reports each such fate back
//! ([`crate::protocol::machine::StreamMachine::note_wire`]) so the ledger, and `/status` with
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
pub enum WireFate {
    /// Sent with `nonce` on it (differs from the planned nonce only when one was reused).
    Sent { nonce: String },
    /// Never sent: the client will answer an older nonce, if any.
    Dropped,
    /// Sent changed (`kind`: what was changed, e.g. `corrupt`).
    Mutated { kind: &'static str },
    /// Sent late, after `by`.
    Delayed { by: Duration },
    /// Not sent: the stream was closed, reset or hung instead (`kind`).
    Cut { kind: &'static str },
}

/// The fault a response met, as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Touched {
    #[serde(flatten)]
    pub mark: FaultMark,
    pub at: SystemTime,
}
