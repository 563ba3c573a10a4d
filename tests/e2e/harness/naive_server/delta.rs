//! The naive server's Delta stream: per type the subscription (wildcard and names), the latest
//! nonce and what the client holds (`known`: name → version, `None` = told it does not exist).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use tonic::Status;
use xdsloop_proto::{
    discovery::{Any, DeltaDiscoveryRequest, DeltaDiscoveryResponse, WireResource},
    type_url,
};

use super::{
    Bug, Legal,
    machine::{Machine, eds_silenced, of_type, order, version},
    store::Set,
};

#[derive(Default)]
struct TypeState {
    wildcard: bool,
    names: BTreeSet<String>,
    known: BTreeMap<String, Option<String>>,
    nonce: String,
    /// Names unsubscribed whose changes are still pushed ([`Legal::PushUnsubscribed`]).
    lingering: BTreeSet<String>,
}

pub(super) struct Delta {
    bug: Bug,
    legal: Legal,
    nonces: u64,
    types: BTreeMap<String, TypeState>,
    eds_streams: Arc<AtomicU64>,
    eds_silent: Option<bool>,
}

/// What one reconciliation found to tell the client.
#[derive(Default)]
struct Changes {
    resources: Vec<WireResource>,
    removed: BTreeSet<String>,
}

impl Changes {
    fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.removed.is_empty()
    }
}

impl Delta {
    pub(super) fn new(bug: Bug, legal: Legal, eds_streams: Arc<AtomicU64>) -> Self {
        Self {
            bug,
            legal,
            nonces: 0,
            types: BTreeMap::new(),
            eds_streams,
            eds_silent: None,
        }
    }

    /// Brings `known` in line with the set; names in `force` are sent even if held, and with
    /// `all` (a change under [`Legal::ResendAll`]) every wanted resource is.
    fn reconcile(&mut self, set: &Set, url: &str, force: &BTreeSet<String>, all: bool) -> Changes {
        let bug = self.bug;
        let state = self.types.entry(url.to_string()).or_default();
        let mut changes = Changes::default();
        let wanted =
            |n: &str| state.wildcard || state.names.contains(n) || state.lingering.contains(n);
        let present: Vec<_> = of_type(set, url).filter(|(n, _)| wanted(n)).collect();
        for (name, r) in &present {
            let held = state.known.get(*name) == Some(&Some(r.version.clone()));
            if held && !force.contains(*name) && !all {
                continue;
            }
            changes.resources.push(WireResource {
                name: if bug == Bug::DeltaNoNames {
                    String::new()
                } else {
                    r.name.clone()
                },
                version: r.version.clone(),
                resource: Some(Any {
                    type_url: url.to_string(),
                    value: r.bytes.to_vec(),
                }),
                ..Default::default()
            });
            state.known.insert(r.name.clone(), Some(r.version.clone()));
        }
        let exists = |n: &str| present.iter().any(|(p, _)| p.as_str() == n);
        let gone: Vec<String> = state
            .known
            .iter()
            .filter(|(n, v)| v.is_some() && !exists(n))
            .map(|(n, _)| n.clone())
            .collect();
        let missing = state.names.iter().filter(|n| !exists(n));
        let unreported = missing.filter(|n| force.contains(*n) || !state.known.contains_key(*n));
        let mut removed: Vec<String> = unreported.cloned().collect();
        if bug == Bug::DeltaSilentMissing {
            removed.clear();
        }
        removed.extend(gone);
        for name in removed {
            state.known.insert(name.clone(), None);
            changes.removed.insert(name);
        }
        changes
    }

    fn respond(&mut self, set: &Set, url: &str, changes: Changes) -> DeltaDiscoveryResponse {
        self.nonces += 1;
        let nonce = self.nonces.to_string();
        self.types.entry(url.to_string()).or_default().nonce = nonce.clone();
        DeltaDiscoveryResponse {
            system_version_info: version(of_type(set, url).map(|(_, r)| r)),
            resources: changes.resources,
            type_url: url.to_string(),
            removed_resources: changes.removed.into_iter().collect(),
            nonce,
            ..Default::default()
        }
    }
}

impl Machine for Delta {
    type Request = DeltaDiscoveryRequest;
    type Response = DeltaDiscoveryResponse;

    fn on_request(
        &mut self,
        request: DeltaDiscoveryRequest,
        set: &Set,
    ) -> Result<Vec<DeltaDiscoveryResponse>, Status> {
        if self.legal == Legal::DeltaReset {
            return Err(Status::internal("naive server: Delta is not supported"));
        }
        let url = request.type_url.clone();
        let (bug, legal) = (self.bug, self.legal);
        if url == type_url::ENDPOINT && eds_silenced(bug, &self.eds_streams, &mut self.eds_silent) {
            return Ok(Vec::new());
        }
        let first = !self.types.contains_key(&url);
        let state = self.types.entry(url.clone()).or_default();
        let nonce = request.response_nonce.as_str();
        if bug == Bug::DeltaStaleIgnored && !nonce.is_empty() && nonce != state.nonce {
            return Ok(Vec::new());
        }
        let subscribe = &request.resource_names_subscribe;
        state.wildcard |= first && subscribe.is_empty();
        for name in subscribe {
            if name == "*" {
                state.wildcard = true;
            } else {
                state.names.insert(name.clone());
                state.lingering.remove(name);
            }
        }
        let mut dropped = BTreeSet::new();
        for name in &request.resource_names_unsubscribe {
            let subscribed = state.names.contains(name) || (name == "*" && state.wildcard);
            if bug == Bug::DeltaPhantomCloses && !subscribed {
                return Err(Status::invalid_argument(format!(
                    "{name} was never subscribed"
                )));
            }
            if name == "*" {
                state.wildcard = false;
            } else if state.names.remove(name) {
                dropped.insert(name.clone());
            }
        }
        for name in &dropped {
            if legal == Legal::PushUnsubscribed && !state.wildcard {
                // Still pushed when it changes; what the client holds stays as it was.
                state.lingering.insert(name.clone());
            } else {
                state.known.remove(name);
            }
        }
        // Named beside the wildcard and given up: the client cannot tell whether to keep it.
        let owed = if state.wildcard {
            dropped
        } else {
            BTreeSet::new()
        };
        let declared = &request.initial_resource_versions;
        if first && legal != Legal::IgnoreDeclared {
            state.known = declared
                .iter()
                .map(|(n, v)| (n.clone(), Some(v.clone())))
                .collect();
        }
        if first && bug == Bug::DeltaTrustAnyDeclared {
            // Held "at some version" taken as held at the current one.
            for (name, r) in of_type(set, &url).filter(|(n, _)| declared.contains_key(*n)) {
                state.known.insert(name.clone(), Some(r.version.clone()));
            }
        }
        let trust = legal == Legal::TrustDeclared || bug == Bug::DeltaTrustAnyDeclared;
        let force = subscribe
            .iter()
            .filter(|n| *n != "*" && !(trust && declared.contains_key(*n)));
        let mut force: BTreeSet<String> = force.cloned().collect();
        if bug == Bug::DeltaResubscribeIgnored && !first {
            force.clear();
        }
        // A subscription that adds names is a change; an ACK is not.
        let all = legal == Legal::ResendAll && !subscribe.is_empty() && !first;
        let mut changes = self.reconcile(set, &url, &force, all);
        let exists: BTreeSet<&String> = of_type(set, &url).map(|(n, _)| n).collect();
        if !matches!(
            bug,
            Bug::DeltaWildcardUnsubscribeSilent | Bug::DeltaSilentMissing
        ) {
            changes
                .removed
                .extend(owed.into_iter().filter(|n| !exists.contains(n)));
        }
        if !first && changes.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![self.respond(set, &url, changes)])
    }

    fn on_set(&mut self, set: &Set) -> Vec<DeltaDiscoveryResponse> {
        let mut planned = Vec::new();
        let urls: Vec<String> = self.types.keys().cloned().collect();
        for url in urls {
            if url == type_url::ENDPOINT && self.eds_silent == Some(true) {
                continue;
            }
            let all = self.legal == Legal::ResendAll;
            let changes = self.reconcile(set, &url, &BTreeSet::new(), all);
            if changes.is_empty() {
                continue;
            }
            let removal_only = changes.resources.is_empty();
            let response = self.respond(set, &url, changes);
            planned.push((url, removal_only, response));
        }
        order(planned, self.bug, self.legal)
    }
}
