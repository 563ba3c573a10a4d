//! Delivery: handing subscriptions what concerns them, in the variant's shape: updates after a
//! response or an expiry, and the held resources a new watch gets at once (C15). Kept apart
//! from the store so that what a subscription is told is rendered in one place, whether the
//! change came from the server or the clock.

use super::Mux;
use crate::config::Variant;
use crate::core::event::Event;
use crate::core::store::{Diff, Store, TypeStore};
use crate::core::watch_map::{Interest, WatchId};

impl Mux {
    /// What each subscription is told of `diff` (applied to `store`).
    pub(super) fn events(
        &self,
        store: &Store,
        type_url: &str,
        diff: &Diff,
    ) -> Vec<(WatchId, Event)> {
        let Some(held) = store.of_type(type_url) else {
            return Vec::new();
        };
        let variant = self.config.variant;
        let subscribers = self.watches.subscribers(type_url);
        let told = |(id, interest, primed)| {
            let event = event(variant, held, type_url, (interest, primed), diff)?;
            Some((id, event))
        };
        subscribers.filter_map(told).collect()
    }

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

    /// C15: a new watch whose resources are all held gets them now, as if they had just
    /// arrived.
    pub(super) fn deliver_held(&mut self, id: u64, type_url: &str) {
        if self.watches.is_internal(id) {
            return;
        }
        let (Some(held), Some(interest)) =
            (self.store.of_type(type_url), self.watches.interest(id))
        else {
            return;
        };
        let added = held.resources.keys().cloned().collect();
        let all = Diff {
            added,
            ..Diff::default()
        };
        let told = event(self.config.variant, held, type_url, (interest, false), &all);
        self.out.deliveries.extend(told.map(|event| (id, event)));
        self.watches.set_primed(id);
    }
}

/// What a subscription (its interest, and whether it has been told anything yet) hears of
/// `diff` to the type's `held` resources, in the variant's shape; `None`: nothing.
fn event(
    variant: Variant,
    held: &TypeStore,
    type_url: &str,
    subscriber: (&Interest, bool),
    diff: &Diff,
) -> Option<Event> {
    match variant {
        Variant::Sotw => sotw_event(held, type_url, subscriber, diff),
        Variant::Delta => delta_event(held, type_url, subscriber, diff),
    }
}

/// SotW: a subscription whose resources changed (or that has had nothing yet) gets every
/// resource of the type it wants.
fn sotw_event(
    held: &TypeStore,
    type_url: &str,
    (interest, primed): (&Interest, bool),
    diff: &Diff,
) -> Option<Event> {
    if primed && !diff.touches(|n| interest.wants(n)) {
        return None;
    }
    let resources = held.resources.values().filter(|r| interest.wants(&r.name));
    Some(Event::Sotw {
        type_url: type_url.to_string(),
        version: held.version.clone(),
        resources: resources.cloned().collect(),
    })
}

/// Delta: a subscription gets what changed among the names it wants.
fn delta_event(
    held: &TypeStore,
    type_url: &str,
    (interest, primed): (&Interest, bool),
    diff: &Diff,
) -> Option<Event> {
    let changed = diff.added.iter().chain(&diff.updated);
    let changed = changed.filter(|n| interest.wants(n));
    let added: Vec<_> = changed
        .filter_map(|n| held.resources.get(n))
        .cloned()
        .collect();
    let removed = diff.removed.iter().filter(|n| interest.wants(n));
    let removed: Vec<String> = removed.cloned().collect();
    if primed && added.is_empty() && removed.is_empty() {
        return None;
    }
    Some(Event::Delta {
        type_url: type_url.to_string(),
        system_version: held.version.clone(),
        added,
        removed,
    })
}
