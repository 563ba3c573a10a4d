//! What a node reports about each response, and the small pieces of a reply: the NACK status,
//! Delta bookkeeping and the Delta version digest.

use std::collections::BTreeMap;

use xdsloop_proto::discovery::Status;
use xdsloop_proto::version;

use super::TypeState;
use crate::core::request::nack_detail;
use crate::fleet::decode::DeltaResource;

/// The verdict on one response, for the fleet's tally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub type_url: String,
    /// The version the response carried (see the module docs for Delta).
    pub version: String,
    /// `Err(message)` = NACKed.
    pub verdict: Result<(), String>,
    /// Accepted, and this node held no version of this type before.
    pub first: bool,
    /// Accepted with a version different from the one held before.
    pub changed: bool,
    /// The version held before this response.
    pub previous: Option<String>,
    pub resources: usize,
}

pub(super) fn accepted(
    t: &TypeState,
    version: String,
    previous: Option<String>,
    n: usize,
) -> Outcome {
    Outcome {
        type_url: t.url.clone(),
        first: previous.is_none(),
        changed: previous.as_ref() != Some(&version),
        version,
        verdict: Ok(()),
        previous,
        resources: n,
    }
}

pub(super) fn rejected(t: &TypeState, version: String, message: String, n: usize) -> Outcome {
    Outcome {
        type_url: t.url.clone(),
        version,
        verdict: Err(message),
        first: false,
        changed: false,
        previous: t.version.clone(),
        resources: n,
    }
}

/// A NACK's `error_detail`: the library's, so a node and a client NACK alike (C5).
pub(super) fn status(message: String) -> Status {
    nack_detail(&message)
}

pub(super) fn apply_delta(
    held: &mut BTreeMap<String, String>,
    resources: &[DeltaResource],
    removed: &[String],
) {
    for r in resources {
        held.insert(r.name.clone(), r.version.clone());
    }
    for name in removed {
        held.remove(name);
    }
}

pub(super) fn delta_version(system_version: &str, held: &BTreeMap<String, String>) -> String {
    match system_version {
        "" => digest(held),
        v => v.to_string(),
    }
}

/// A version for Delta responses without `system_version_info`: equal held sets give equal
/// digests, on every node.
fn digest(held: &BTreeMap<String, String>) -> String {
    let parts: Vec<&[u8]> = held
        .iter()
        .flat_map(|(n, v)| [n.as_bytes(), v.as_bytes()])
        .collect();
    format!("#{}", version::short(version::fnv1a(&parts)))
}
