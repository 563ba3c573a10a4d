//! TTLs on the client (C17): a resource sent with a TTL is removed and reported `Expired` when
//! it lapses without a heartbeat (a `Resource` wrapper without a body), like Envoy's TTL
//! manager; a heartbeat refreshes what is held without counting as an update. Its own concept
//! because it changes the store on the clock, not on a response.

use std::time::{Duration, Instant, SystemTime};

use super::Mux;
use crate::config::Variant;
use crate::core::event::Report;
use crate::core::store::Diff;
use crate::core::validate::{Decoded, Heartbeat};

/// The TTL of each resource about to be applied.
pub(super) fn ttls(resources: &[Decoded]) -> Vec<(String, Option<Duration>)> {
    resources.iter().map(|r| (r.name.clone(), r.ttl)).collect()
}

impl Mux {
    /// C17: each applied resource's TTL (none clears an earlier one); removed ones are gone.
    pub(super) fn set_ttls(
        &mut self,
        type_url: &str,
        ttls: Vec<(String, Option<Duration>)>,
        diff: &Diff,
        now: Instant,
    ) {
        for (name, ttl) in ttls {
            self.expiry.set(type_url, &name, ttl, now);
        }
        for name in &diff.removed {
            self.expiry.forget(type_url, name);
        }
    }

    /// Refreshes the TTLs of the heartbeats that name a held resource (Delta: at the version
    /// held); returns their names.
    pub(super) fn refresh(
        &mut self,
        type_url: &str,
        beats: &[Heartbeat],
        now: Instant,
    ) -> Vec<String> {
        let current = self.current_heartbeats(type_url, beats);
        for beat in beats.iter().filter(|b| current.contains(&b.name)) {
            self.expiry.refresh(type_url, &beat.name, beat.ttl, now);
        }
        current
    }

    /// The heartbeats that name a held resource (Delta: at the version held).
    pub(super) fn current_heartbeats(&self, type_url: &str, beats: &[Heartbeat]) -> Vec<String> {
        let held = self.store.held_versions(type_url);
        let mut refreshed = Vec::new();
        for beat in beats {
            let current = match self.config.variant {
                Variant::Sotw => held.contains_key(&beat.name),
                Variant::Delta => held.get(&beat.name) == Some(&beat.version),
            };
            if !current {
                tracing::debug!(type_url, name = %beat.name, "heartbeat for a resource not held: ignored");
                continue;
            }
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
            let events = self.events(&self.store, &type_url, &diff);
            self.deliver(events, &[]);
            self.out.store_changed = true;
            self.out.reports.push(Report::Expired {
                at,
                type_url,
                names,
            });
        }
    }
}
