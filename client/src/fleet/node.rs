//! One simulated node (sans-I/O): subscribes like Envoy — wildcard CDS/LDS, EDS/RDS for the
//! names its clusters and listeners reference — and answers every response with exactly one
//! ACK or NACK (C4). It keeps only names and versions, never the resources themselves.
//!
//! The version a node reports for a type is the SotW `version_info`; for Delta it is the
//! `system_version_info`, or, when a server leaves that empty, a digest of the held
//! name → version map (so nodes holding the same resources report the same version).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::IoSlice;
use std::sync::Arc;

use bytes::Buf;
use prost::Message;

use super::decode::{AnyRef, DeltaResponse, SotwView};
use super::inspect::{Kind, inspect};
use super::names::{Interner, Names};
use super::outgoing::FleetRequest;
use crate::config::Variant;

/// Chunks of one response parsed in place; a response in more pieces is copied into one.
const MAX_PARTS: usize = 16;

/// What every node of a fleet does; shared by all of them.
#[derive(Debug)]
pub(crate) struct Rules {
    pub mode: Variant,
    /// Type URLs to subscribe, in the order their first requests go out.
    pub types: Vec<String>,
    /// `(type URL, resource name)`: NACK any response holding that resource.
    pub nack: Vec<(String, String)>,
    /// The fleet's shared dependent-name lists.
    pub names: Interner,
}

/// What handling one response produced.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Handled {
    /// The ACK or NACK first, then any dependent subscription change (C12).
    pub requests: Vec<FleetRequest>,
    /// `None` when the response was for a type this node never asked for (ignored, C8).
    pub outcome: Option<Outcome>,
}

#[derive(Debug)]
struct TypeState {
    url: String,
    kind: Kind,
    /// Collect dependent names from this type's resources.
    follow: bool,
    /// Interest of a named type (EDS/RDS), shared with the nodes that want the same names.
    names: Names,
    /// A request for this type went out on the current stream.
    active: bool,
    /// Last accepted version as reported; `None` until the first ACK.
    version: Option<String>,
    /// Last accepted SotW `version_info` (echoed in requests).
    wire_version: String,
    nonce: String,
    /// Delta: held names → version (declared on reconnect). SotW keeps no per-resource state.
    held: BTreeMap<String, String>,
    /// Delta: parent resources → the dependent names they need (a SotW response carries all
    /// of them every time, so SotW nodes keep none).
    children: BTreeMap<String, Vec<String>>,
}

/// One simulated node.
#[derive(Debug)]
pub(crate) struct Node {
    id: String,
    rules: Arc<Rules>,
    types: Vec<TypeState>,
    node_sent: bool,
}

impl Node {
    pub(crate) fn new(id: String, rules: Arc<Rules>) -> Self {
        let has = |kind: Kind| rules.types.iter().any(|t| Kind::of(t) == kind);
        let types = rules
            .types
            .iter()
            .map(|url| {
                let kind = Kind::of(url);
                TypeState {
                    url: url.clone(),
                    kind,
                    follow: kind.child().is_some_and(has),
                    names: Names::default(),
                    active: false,
                    version: None,
                    wire_version: String::new(),
                    nonce: String::new(),
                    held: BTreeMap::new(),
                    children: BTreeMap::new(),
                }
            })
            .collect();
        Self {
            id,
            rules,
            types,
            node_sent: false,
        }
    }

    /// The last accepted version of `type_url`.
    #[cfg(test)]
    pub(crate) fn version(&self, type_url: &str) -> Option<&str> {
        let t = self.types.iter().find(|t| t.url == type_url)?;
        t.version.as_deref()
    }

    /// The names held for `type_url` (Delta; SotW nodes keep no per-resource state).
    #[cfg(test)]
    pub(crate) fn held(&self, type_url: &str) -> Vec<&str> {
        let t = self.types.iter().find(|t| t.url == type_url);
        t.into_iter()
            .flat_map(|t| t.held.keys())
            .map(String::as_str)
            .collect()
    }

    /// Every type this node asked for on the current stream has an accepted version.
    pub(crate) fn configured(&self) -> bool {
        self.types.iter().all(|t| !t.active || t.version.is_some())
    }

    /// A new stream: nonces are cleared, versions kept, every type resubscribed in a fixed
    /// order (C11); the node goes on the first request (C1).
    pub(crate) fn on_stream_start(&mut self) -> Vec<FleetRequest> {
        self.node_sent = false;
        let mut requests = Vec::new();
        for i in 0..self.types.len() {
            let t = &mut self.types[i];
            t.nonce.clear();
            t.active = t.kind.is_wildcard() || !t.names.is_empty();
            if t.active {
                requests.push(self.initial_request(i));
            }
        }
        requests
    }

    /// Handles one encoded response (`DiscoveryResponse` or `DeltaDiscoveryResponse`, as the
    /// mode says). An undecodable message is answered by nobody: there is no nonce to echo.
    pub(crate) fn on_response(&mut self, mut message: impl Buf) -> Result<Handled, String> {
        Ok(match self.rules.mode {
            Variant::Sotw => {
                // In place when the message's chunks split it between fields (the usual case:
                // the server's own fields, then the resources); else one contiguous copy.
                let mut parts = [IoSlice::new(&[]); MAX_PARTS];
                let n = message.chunks_vectored(&mut parts);
                let whole =
                    parts[..n].iter().map(|p| p.len()).sum::<usize>() == message.remaining();
                match SotwView::parse_parts(parts[..n].iter().map(|p| &**p)) {
                    Ok(view) if whole => self.on_sotw(view),
                    _ => {
                        let message = message.copy_to_bytes(message.remaining());
                        self.on_sotw(SotwView::parse(&message)?)
                    }
                }
            }
            Variant::Delta => {
                self.on_delta(DeltaResponse::decode(message).map_err(|e| e.to_string())?)
            }
        })
    }

    fn on_sotw(&mut self, response: SotwView<'_>) -> Handled {
        let Some(i) = self.index(response.type_url) else {
            return Handled::default();
        };
        let checked = self.check(i, response.resources.iter().map(|r| (None, Some(*r))));
        let t = &mut self.types[i];
        t.nonce = response.nonce.to_string();
        let resources = response.resources.len();
        let version = response.version_info.to_string();
        let (outcome, wanted) = match checked {
            Ok(checked) => {
                let previous = t.version.replace(version.clone());
                t.wire_version = version.clone();
                let children = checked.children.iter().flat_map(|(_, c)| c);
                let wanted = t.follow.then(|| intern(&self.rules.names, children));
                (accepted(t, version, previous, resources), wanted)
            }
            Err(message) => (rejected(t, version, message, resources), None),
        };
        self.reply(i, outcome, wanted)
    }

    fn on_delta(&mut self, response: DeltaResponse) -> Handled {
        let Some(i) = self.index(&response.type_url) else {
            return Handled::default();
        };
        let items = response.resources.iter();
        let mut checked = self.check(
            i,
            items.map(|r| {
                let any = r.resource.as_ref().map(|a| AnyRef {
                    type_url: &a.type_url,
                    value: &a.value,
                });
                (Some(r.name.as_str()), any)
            }),
        );
        let removed: Vec<String> = (response.removed_resources.iter().cloned())
            .chain(
                response
                    .removed_resource_names
                    .iter()
                    .map(|n| String::from_utf8_lossy(&n.name).into_owned()),
            )
            .collect();
        if let Ok(items) = &checked
            && let Some(both) = removed.iter().find(|n| items.has(n))
        {
            checked = Err(format!("resource {both:?} is both updated and removed"));
        }
        let t = &mut self.types[i];
        t.nonce = response.nonce.clone();
        let resources = response.resources.len();
        let system_version = &response.system_version_info;
        let (outcome, wanted) = match checked {
            Ok(checked) => {
                apply_delta(&mut t.held, &response.resources, &removed);
                let version = delta_version(system_version, &t.held);
                let previous = t.version.replace(version.clone());
                let wanted = t.follow.then(|| {
                    for (name, children) in checked.children {
                        let name = String::from_utf8_lossy(&name).into_owned();
                        let children = children.into_iter().map(Cow::into_owned).collect();
                        t.children.insert(name, children);
                    }
                    for name in &removed {
                        t.children.remove(name);
                    }
                    intern(&self.rules.names, t.children.values().flatten())
                });
                (accepted(t, version, previous, resources), wanted)
            }
            Err(message) => {
                // The version this response would have produced, to name it in the report.
                let mut held = t.held.clone();
                apply_delta(&mut held, &response.resources, &removed);
                let version = delta_version(system_version, &held);
                (rejected(t, version, message, resources), None)
            }
        };
        self.reply(i, outcome, wanted)
    }

    /// The checks every response gets before it is accepted (C6), plus `--nack` rules.
    /// `items` are (envelope name for Delta, resource). Names are compared in place, never
    /// copied, which keeps big SotW responses cheap.
    fn check<'a>(
        &self,
        i: usize,
        items: impl Iterator<Item = (Option<&'a str>, Option<AnyRef<'a>>)>,
    ) -> Result<Checked<'a>, String> {
        let t = &self.types[i];
        let mut checked = Checked::default();
        for (envelope, any) in items {
            let inspected = match any {
                Some(any) if any.type_url != t.url.as_bytes() => {
                    let found = String::from_utf8_lossy(any.type_url);
                    return Err(format!("resource of type {found} in a {} response", t.url));
                }
                Some(any) if t.follow || envelope.is_none() => {
                    inspect(t.kind, any.value, t.follow)?
                }
                _ => Default::default(),
            };
            let envelope = envelope.map(|n| Cow::Borrowed(n.as_bytes()));
            let Some(name) = envelope.or(inspected.name) else {
                continue; // An uninspected type in SotW: nothing to check by name.
            };
            let named = |rule: &(String, String)| rule.0 == t.url && rule.1.as_bytes() == &*name;
            if self.rules.nack.iter().any(named) {
                let name = String::from_utf8_lossy(&name);
                return Err(format!("resource {name:?} rejected by --nack"));
            }
            if t.follow {
                checked.children.push((name.clone(), inspected.children));
            }
            checked.names.push(name);
        }
        // Duplicates found by sorting once (cheaper than hashing every name of a
        // 1,000-resource response).
        checked.names.sort_unstable();
        if let Some(pair) = checked.names.windows(2).find(|pair| pair[0] == pair[1]) {
            let name = String::from_utf8_lossy(&pair[0]);
            return Err(format!("duplicate resource {name:?}"));
        }
        Ok(checked)
    }

    /// The ACK/NACK for type `i`, then the dependent type's interest change if the accepted
    /// response changed it (C12: after the parent's ACK).
    /// `wanted`: the dependent names, for a type whose dependents are followed.
    fn reply(&mut self, i: usize, outcome: Outcome, wanted: Option<Names>) -> Handled {
        let error = outcome.verdict.clone().err();
        let mut requests = vec![self.ack(i, error)];
        if let Some(wanted) = wanted {
            requests.extend(self.follow(i, wanted));
        }
        Handled {
            requests,
            outcome: Some(outcome),
        }
    }

    fn index(&self, type_url: &str) -> Option<usize> {
        self.types.iter().position(|t| t.url == type_url)
    }
}

/// A response's resources as [`Node::check`] passed them.
#[derive(Debug, Default)]
struct Checked<'a> {
    /// Every resource's name, sorted.
    names: Vec<Cow<'a, [u8]>>,
    /// Types whose dependents are followed: each resource's name and the names it needs.
    children: Vec<(Cow<'a, [u8]>, Dependents<'a>)>,
}

/// The dependent names one resource needs.
type Dependents<'a> = Vec<Cow<'a, str>>;

impl Checked<'_> {
    fn has(&self, name: &str) -> bool {
        let found = self.names.binary_search_by(|n| (**n).cmp(name.as_bytes()));
        found.is_ok()
    }
}

/// The shared list of `names` (in any order, repeats allowed).
fn intern<'a, S: AsRef<str> + 'a>(
    interner: &Interner,
    names: impl Iterator<Item = &'a S>,
) -> Names {
    let mut names: Vec<&str> = names.map(AsRef::as_ref).collect();
    names.sort_unstable();
    names.dedup();
    interner.intern(&names)
}

mod outcome;
mod requests;
#[cfg(test)]
mod tests;

pub(crate) use outcome::Outcome;
use outcome::{accepted, apply_delta, delta_version, rejected};
