//! SotW heartbeats (S15): on a tick, each type whose heartbeat is due gets a response with the
//! version the client holds and, for each resource it holds, the `Resource` wrapper without
//! `resource`: only the TTL'd ones for EDS/RDS-like types, every one for LDS and CDS, whose
//! responses are the full state (a resource missing from one would be deleted).

use std::{
    sync::Arc,
    time::{Instant, SystemTime},
};

use bytes::Bytes;
use xdsloop_proto::{Resource, discovery::DiscoveryResponse, type_url};

use super::{SotwStream, control_plane, view};
use crate::{
    protocol::response::{Manifest, SotwResponse},
    snapshot::entries::sotw_heartbeat,
};

impl SotwStream {
    /// Heartbeats due at `now`; also schedules the types that just became due one.
    pub fn on_tick(&mut self, now: Instant) -> Vec<SotwResponse> {
        if !self.features.ttl {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (url, state) in &mut self.types {
            if !state.heartbeats.due(now) {
                continue;
            }
            let (Some(from), Some(sent)) = (&state.sent_from, &state.sub.ledger.last_sent) else {
                continue;
            };
            let held = view(&state.sub.interest, from);
            let full = type_url::full_state(url);
            let picked = held.picked.iter().filter(|r| full || r.ttl.is_some());
            let kept: Arc<[Arc<Resource>]> = picked.cloned().collect();
            if !kept.iter().any(|r| r.ttl.is_some()) {
                state.heartbeats.stop();
                continue;
            }
            let entries: Vec<Bytes> = kept.iter().map(|r| sotw_heartbeat(r)).collect();
            let nonce = self.nonces.next_nonce();
            crate::stream_line!(stream = self.id, node = self.node.as_deref().unwrap_or_default(),
                r#type = %type_url::short_name(url), version = %sent.version, %nonce,
                resources = entries.len(), "heartbeat");
            let head = DiscoveryResponse {
                version_info: sent.version.clone(),
                type_url: url.clone(),
                nonce: nonce.clone(),
                control_plane: Some(control_plane()),
                ..Default::default()
            };
            state.heartbeats.on_sent(nonce, now, SystemTime::now());
            self.changed.insert(url.clone());
            out.push(SotwResponse {
                head,
                entries,
                manifest: Manifest::Heartbeat(kept),
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
