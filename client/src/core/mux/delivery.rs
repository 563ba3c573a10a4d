//! Delivery: handing subscriptions what concerns them, in the variant's shape. SotW and Delta
//! updates after a response or an expiry, and the held resources a new watch gets at once
//! (C15). Kept apart from the store so that what a subscription is
//! told is decided in one place, whether the change came from the server or the clock.

use super::Mux;
use crate::config::Variant;
use crate::core::event::Event;
use crate::core::store::{Diff, Store};
use crate::core::watch_map::{WatchId, WatchMap};

impl Mux {
    /// Hands `events` to their subscriptions, except those in `asked` (they saw the update
    /// when they decided it); every one of them counts as primed.
    pub(super) fn deliver(&mut self, events: Vec<(WatchId, Event)>, asked: &[WatchId]) {
        for (id, event) in events {
            self.watches.set_primed(id);
            if !asked.contains(&id) {
                self.out.deliveries.push((id, event));
            }
        }
    }

    /// C15: a new watch whose resources are all held gets them now.
    pub(super) fn deliver_held(&mut self, id: u64, type_url: &str) {
        if self.watches.is_internal(id) {
            return;
        }
        let (Some(store), Some(interest)) =
            (self.store.of_type(type_url), self.watches.interest(id))
        else {
            return;
        };
        let resources: Vec<_> = store
            .resources
            .values()
            .filter(|r| interest.wants(&r.name))
            .cloned()
            .collect();
        let type_url = type_url.to_string();
        let event = match self.config.variant {
            Variant::Sotw => Event::Sotw {
                type_url,
                version: store.version.clone(),
                resources,
            },
            Variant::Delta => Event::Delta {
                type_url,
                system_version: store.version.clone(),
                added: resources,
                removed: Vec::new(),
            },
        };
        self.out.deliveries.push((id, event));
        self.watches.set_primed(id);
    }
}

/// What each subscription is told of `diff`, in the variant's shape.
pub(super) fn events(
    variant: Variant,
    store: &Store,
    watches: &WatchMap,
    type_url: &str,
    diff: &Diff,
) -> Vec<(WatchId, Event)> {
    match variant {
        Variant::Sotw => sotw_events(store, watches, type_url, diff),
        Variant::Delta => delta_events(store, watches, type_url, diff),
    }
}

/// SotW: each subscription whose resources changed (or that has had nothing yet) gets every
/// resource of `store` it wants.
fn sotw_events(
    store: &Store,
    watches: &WatchMap,
    type_url: &str,
    diff: &Diff,
) -> Vec<(WatchId, Event)> {
    let Some(store) = store.of_type(type_url) else {
        return Vec::new();
    };
    let mut events = Vec::new();
    for (id, interest, was_primed) in watches.subscribers(type_url) {
        if was_primed && !diff.touches(|n| interest.wants(n)) {
            continue;
        }
        let resources = store.resources.values().filter(|r| interest.wants(&r.name));
        let event = Event::Sotw {
            type_url: type_url.to_string(),
            version: store.version.clone(),
            resources: resources.cloned().collect(),
        };
        events.push((id, event));
    }
    events
}

/// Delta: each subscription gets what changed among the names it wants.
fn delta_events(
    store: &Store,
    watches: &WatchMap,
    type_url: &str,
    diff: &Diff,
) -> Vec<(WatchId, Event)> {
    let Some(store) = store.of_type(type_url) else {
        return Vec::new();
    };
    let mut events = Vec::new();
    for (id, interest, was_primed) in watches.subscribers(type_url) {
        let changed = diff
            .added
            .iter()
            .chain(&diff.updated)
            .filter(|n| interest.wants(n));
        let added: Vec<_> = changed
            .filter_map(|n| store.resources.get(n))
            .cloned()
            .collect();
        let removed: Vec<String> = diff
            .removed
            .iter()
            .filter(|n| interest.wants(n))
            .cloned()
            .collect();
        if was_primed && added.is_empty() && removed.is_empty() {
            continue;
        }
        let event = Event::Delta {
            type_url: type_url.to_string(),
            system_version: store.version.clone(),
            added,
            removed,
        };
        events.push((id, event));
    }
    events
}
