//! Handing what was applied to the subscriptions that want it: SotW and Delta updates after a
//! response, and the held resources a new watch gets at once (C15).

use super::Mux;
use crate::config::Variant;
use crate::core::event::Event;
use crate::core::store::Diff;

impl Mux {
    /// SotW: each subscription whose resources changed (or that has had nothing yet) gets
    /// every held resource it wants.
    pub(super) fn deliver_sotw_update(&mut self, type_url: &str, diff: &Diff) {
        let Some(store) = self.store.of_type(type_url) else {
            return;
        };
        let subscribers: Vec<_> = self.watches.subscribers(type_url).collect();
        let mut primed = Vec::new();
        for (id, interest, was_primed) in subscribers {
            if was_primed && !diff.touches(|n| interest.wants(n)) {
                continue;
            }
            let resources = store.resources.values().filter(|r| interest.wants(&r.name));
            let event = Event::Sotw {
                type_url: type_url.to_string(),
                version: store.version.clone(),
                resources: resources.cloned().collect(),
            };
            self.out.deliveries.push((id, event));
            primed.push(id);
        }
        for id in primed {
            self.watches.set_primed(id);
        }
    }

    /// Delta: each subscription gets what changed among the names it wants.
    pub(super) fn deliver_delta_update(&mut self, type_url: &str, diff: &Diff) {
        let Some(store) = self.store.of_type(type_url) else {
            return;
        };
        let subscribers: Vec<_> = self.watches.subscribers(type_url).collect();
        let mut primed = Vec::new();
        for (id, interest, was_primed) in subscribers {
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
            self.out.deliveries.push((id, event));
            primed.push(id);
        }
        for id in primed {
            self.watches.set_primed(id);
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
        let event = match self.config.mode {
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
