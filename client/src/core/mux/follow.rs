//! Dependency following (C12): LDS names the RDS routes and CDS the EDS clusters it needs; the
//! mux subscribes them through an internal watch, and after the parent's ACK sends one
//! coalesced request for the dependent type. Separate because it is a policy on top of
//! watches and updates: with `follow_deps` off the mux works without it.

use std::time::Instant;

use super::Mux;
use crate::core::deps;
use crate::core::request::TypeState;
use crate::core::watch_map::Interest;

/// Internal watch ids count down from the top so they never meet subscriber ids.
const FIRST_INTERNAL_WATCH: u64 = u64::MAX;

impl Mux {
    /// Sends the parent's ACK or NACK, then the dependent type's coalesced request (C12).
    pub(super) fn finish_response(&mut self, type_url: &str, now: Instant) {
        let child = self.follow_dependencies(type_url, now);
        self.flush(now);
        if let Some(child) = child {
            self.resume(child, now);
        }
        self.check_synced();
    }

    /// Recomputes the dependent names of `type_url` with the child type paused; returns the
    /// paused child, which the caller resumes after the parent's reply went out.
    fn follow_dependencies(&mut self, type_url: &str, now: Instant) -> Option<&'static str> {
        if !self.config.follow_deps || self.nacked.contains_key(type_url) {
            return None;
        }
        let child = deps::child_of(type_url)?;
        if self.config.unfollowed.contains(child) {
            return None;
        }
        self.pause(child);
        let held = self.store.of_type(type_url);
        let bytes = held
            .into_iter()
            .flat_map(|t| t.resources.values())
            .map(|r| &r.bytes[..]);
        let names = deps::names_for(type_url, bytes);
        let interest = Interest::Names(names);
        match self.dep_watches.get(child).copied() {
            Some(id) => self.set_interest(id, interest, now),
            None => {
                let id = FIRST_INTERNAL_WATCH - self.dep_watches.len() as u64;
                self.dep_watches.insert(child.to_string(), id);
                let before = self.watches.wanted(child);
                self.watches.add(id, child, interest, true);
                self.types
                    .entry(child.to_string())
                    .or_insert_with(|| TypeState::new(child));
                self.interest_changed(child, before, now);
            }
        }
        Some(child)
    }
}
