//! Delta heartbeats (S15): on a tick, each type whose heartbeat is due gets a response with,
//! for each TTL'd resource the client holds, `Resource{name, version, ttl}` without `resource`
//! (the version it holds: a heartbeat, not an update).

use std::{
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use xdsloop_proto::{Resource, discovery::DeltaDiscoveryResponse, type_url};

use super::{DeltaStream, TypeState, control_plane};
use crate::{
    TypeResources,
    protocol::response::{DeltaResponse, Manifest},
    snapshot::entries::delta_heartbeat,
};

impl DeltaStream {
    /// Heartbeats due at `now`; also schedules the types that just became due one.
    pub fn on_tick(&mut self, now: Instant) -> Vec<DeltaResponse> {
        if !self.features.ttl {
            return Vec::new();
        }
        let node = self.node.clone().unwrap_or_default();
        let mut out = Vec::new();
        for (url, state) in &mut self.types {
            if !state.heartbeats.due(now) {
                continue;
            }
            let resources = self
                .snapshot
                .get(&node, url)
                .cloned()
                .unwrap_or_else(|| self.empty.clone());
            let held: Arc<[Arc<Resource>]> = held_resources(state, &resources)
                .into_iter()
                .cloned()
                .collect();
            if held.is_empty() {
                state.heartbeats.stop();
                continue;
            }
            let entries: Vec<_> = held.iter().map(|r| delta_heartbeat(r)).collect();
            let version = state
                .sub
                .ledger
                .last_sent
                .as_ref()
                .map(|s| s.version.clone());
            let nonce = self.nonces.next_nonce();
            crate::stream_line!(stream = self.id, %node, r#type = %type_url::short_name(url), %nonce,
                resources = entries.len(), "heartbeat");
            let head = DeltaDiscoveryResponse {
                system_version_info: version.unwrap_or_default(),
                type_url: url.clone(),
                nonce: nonce.clone(),
                control_plane: Some(control_plane()),
                ..Default::default()
            };
            state.heartbeats.on_sent(nonce, now, SystemTime::now());
            self.changed.insert(url.clone());
            out.push(DeltaResponse {
                head,
                entries,
                manifest: Manifest::Heartbeat(held),
            });
        }
        out
    }

    /// When the next heartbeat is due, if any type is scheduled one.
    pub fn next_deadline(&self) -> Option<Instant> {
        let due = self
            .types
            .values()
            .filter_map(|s| s.heartbeats.next_deadline());
        due.min()
    }
}

/// The TTL'd resources the client holds at their current version.
fn held_resources<'a>(state: &TypeState, resources: &'a TypeResources) -> Vec<&'a Arc<Resource>> {
    let known = state.known.iter().into_iter();
    let held = known.filter_map(|(name, version)| {
        let resource = resources.resources.get(name)?;
        let same = version == Some(resource.version.as_str());
        (same && resource.ttl.is_some()).then_some(resource)
    });
    held.collect()
}

/// The shortest TTL among the resources the client holds, and how many have one.
pub(super) fn held_ttl(state: &TypeState, resources: &TypeResources) -> (Option<Duration>, usize) {
    let held = held_resources(state, resources);
    (held.iter().filter_map(|r| r.ttl).min(), held.len())
}
