//! Watches: what each subscription wants of a type, merged into the type's one wire interest
//! (Envoy's `WatchMap`). A change of interest reaches the wire only when it changes the merged
//! interest; a watch whose resources are all held is served from the store without a request
//! (C15). Kept apart from the response path because interest is the client's side of the
//! conversation: it moves on the application's calls, not on what the server sends.

use std::time::Instant;

use super::Mux;
use crate::core::event::Report;
use crate::core::request::TypeState;
use crate::core::watch_map::{Interest, Wanted, WatchId};

impl Mux {
    /// The merged interest of a type (what the wire subscription covers).
    pub fn wanted(&self, type_url: &str) -> Wanted {
        self.watches.wanted(type_url)
    }

    /// Starts a watch. If everything it wants is already held, it gets the held value at once
    /// and no request goes out (C15).
    pub fn add_watch(&mut self, id: WatchId, type_url: &str, interest: Interest, now: Instant) {
        let interest = interest.normalized();
        let before = self.watches.wanted(type_url);
        self.watches.add(id, type_url, interest.clone(), false);
        self.types
            .entry(type_url.to_string())
            .or_insert_with(|| TypeState::new(type_url));
        if self.can_serve_from_store(type_url, &before, &interest) {
            self.deliver_held(id, type_url);
        }
        self.interest_changed(type_url, before, now);
    }

    /// Starts a watch whose subscription decides each update before it is applied (Envoy's
    /// `SubscriptionCallbacks`): an update it would be told of comes out as a [`Proposal`]
    /// and waits for [`Mux::decide`].
    pub fn add_deciding_watch(
        &mut self,
        id: WatchId,
        type_url: &str,
        interest: Interest,
        now: Instant,
    ) {
        self.deciding.insert(id);
        self.add_watch(id, type_url, interest, now);
    }

    /// Changes what a watch wants; only names new to (or gone from) the whole type reach the wire.
    pub fn set_interest(&mut self, id: WatchId, interest: Interest, now: Instant) {
        let interest = interest.normalized();
        let Some(type_url) = self.watches.type_of(id).map(str::to_string) else {
            return;
        };
        let before = self.watches.wanted(&type_url);
        let serve = self.can_serve_from_store(&type_url, &before, &interest);
        self.watches.set_interest(id, interest);
        if serve {
            self.deliver_held(id, &type_url);
        }
        self.interest_changed(&type_url, before, now);
    }

    /// Ends a watch (Envoy's watch removal); names nobody wants any more leave the wire interest.
    pub fn remove_watch(&mut self, id: WatchId, now: Instant) {
        let Some(type_url) = self.watches.type_of(id).map(str::to_string) else {
            return;
        };
        let before = self.watches.wanted(&type_url);
        self.watches.remove(id);
        self.deciding.remove(&id);
        self.interest_changed(&type_url, before, now);
    }

    pub(super) fn interest_changed(&mut self, type_url: &str, before: Wanted, now: Instant) {
        let after = self.watches.wanted(type_url);
        if before == after {
            return;
        }
        if let Some(state) = self.types.get_mut(type_url) {
            state.mark_dirty();
        }
        if !after.wildcard {
            let held = self.store.held_versions(type_url);
            let dropped: Vec<String> = held.into_keys().filter(|n| !after.wants(n)).collect();
            // Nobody wants them any more: forget them like Envoy drops unwatched resources.
            for name in self.store.forget(type_url, &dropped) {
                self.expiry.forget(type_url, &name);
                self.out.store_changed = true;
            }
        }
        for name in before.names.difference(&after.names) {
            self.not_found.forget(type_url, name);
        }
        self.flush(now);
        self.check_synced();
    }

    fn can_serve_from_store(&self, type_url: &str, before: &Wanted, interest: &Interest) -> bool {
        let Some(store) = self.store.of_type(type_url) else {
            return false;
        };
        match interest {
            Interest::Wildcard => before.wildcard,
            Interest::Names(names) => {
                !names.is_empty() && names.iter().all(|n| store.resources.contains_key(n))
            }
        }
    }

    /// Emits [`Report::Synced`] when every wanted type has answered and every wanted name is
    /// held, known missing, or NACKed.
    pub(super) fn check_synced(&mut self) {
        let synced = !self.types.is_empty()
            && self.types.keys().all(|t| {
                let wanted = self.watches.wanted(t);
                wanted.is_empty()
                    || (self.answered.contains(t)
                        && (self.nacked.contains_key(t)
                            || wanted.names.iter().all(|n| {
                                self.store.holds(t, n) || self.not_found.is_missing(t, n)
                            })))
            });
        if synced && !self.synced {
            self.out.reports.push(Report::Synced);
        }
        self.synced = synced;
    }
}
