//! TTLs on the client (C17): heartbeats refresh held resources without counting as an update,
//! and a resource whose TTL lapses is removed and reported `Expired`, like Envoy's TTL manager.

use std::time::{Instant, SystemTime};

use super::Mux;
use crate::config::Variant;
use crate::core::event::Report;
use crate::core::store::Diff;
use crate::core::validate::{Heartbeat, Rejection};

impl Mux {
    /// SotW: a heartbeat (a wrapper without `resource`) carries the version the client holds;
    /// in a response of another version it is an error.
    pub(super) fn check_sotw_heartbeats(
        &self,
        type_url: &str,
        version: &str,
        heartbeats: &[Heartbeat],
    ) -> Result<(), Rejection> {
        let held = self.types.get(type_url).map(|t| t.version.as_str());
        let Some(first) = heartbeats.first().filter(|_| held != Some(version)) else {
            return Ok(());
        };
        let problem = format!(
            "resource \"{}\": a Resource without resource (a heartbeat) in a response of version \
             {version:?}, but the held version is {:?}",
            first.name,
            held.unwrap_or_default()
        );
        Err(Rejection {
            problems: vec![problem],
            names: heartbeats.iter().map(|h| h.name.clone()).collect(),
        })
    }

    /// Refreshes the TTLs of the heartbeats that name a held resource (Delta: at the version
    /// held); returns their names.
    pub(super) fn refresh(
        &mut self,
        type_url: &str,
        beats: &[Heartbeat],
        now: Instant,
    ) -> Vec<String> {
        let held = self.store.held_versions(type_url);
        let mut refreshed = Vec::new();
        for beat in beats {
            let current = match self.config.mode {
                Variant::Sotw => held.contains_key(&beat.name),
                Variant::Delta => held.get(&beat.name) == Some(&beat.version),
            };
            if !current {
                tracing::debug!(type_url, name = %beat.name, "heartbeat for a resource not held: ignored");
                continue;
            }
            self.expiry.refresh(type_url, &beat.name, beat.ttl, now);
            refreshed.push(beat.name.clone());
        }
        refreshed
    }

    /// A response that only held heartbeats: ACKed, TTLs refreshed, no update (C17).
    pub(super) fn heartbeat_only(
        &mut self,
        type_url: &str,
        version: &str,
        nonce: &str,
        beats: &[Heartbeat],
        (now, at): (Instant, SystemTime),
    ) {
        let names = self.refresh(type_url, beats, now);
        tracing::debug!(type_url, version, nonce, ?names, "heartbeat");
        self.types
            .get_mut(type_url)
            .expect("checked")
            .ack(nonce, version);
        self.answered.insert(type_url.to_string());
        let type_url = type_url.to_string();
        self.out.reports.push(Report::Heartbeat {
            at,
            type_url,
            names,
        });
    }

    /// Held resources whose TTL lapsed by `now` are removed, delivered as removals and
    /// reported; a name still wanted counts as missing until the server sends it again.
    pub(super) fn expire(&mut self, now: Instant, at: SystemTime) {
        let mut by_type: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (type_url, name) in self.expiry.expired(now) {
            by_type.entry(type_url).or_default().push(name);
        }
        for (type_url, names) in by_type {
            let names = self.store.forget(&type_url, &names);
            if names.is_empty() {
                continue;
            }
            tracing::info!(
                type_url,
                ?names,
                "resources expired (TTL lapsed without a heartbeat)"
            );
            let wanted = self.watches.wanted(&type_url);
            for name in names.iter().filter(|n| wanted.names.contains(*n)) {
                self.not_found.mark_missing(&type_url, name);
            }
            let diff = Diff {
                removed: names.clone(),
                ..Diff::default()
            };
            match self.config.mode {
                Variant::Sotw => self.deliver_sotw_update(&type_url, &diff),
                Variant::Delta => self.deliver_delta_update(&type_url, &diff),
            }
            self.out.store_changed = true;
            self.out.reports.push(Report::Expired {
                at,
                type_url,
                names,
            });
        }
    }
}
