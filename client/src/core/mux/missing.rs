//! Names that do not exist (C14): a requested name unanswered when its not-found timer fires,
//! or one the server removed while it was wanted, is reported missing to the subscriptions
//! that want it. `on_timer` is the mux's clock input: it fires these timers and TTL expiry.

use std::time::{Instant, SystemTime};

use super::Mux;
use crate::core::event::{Event, Report};

impl Mux {
    /// When the next not-found or expiry timer fires, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        let timers = [self.not_found.next_deadline(), self.expiry.next_deadline()];
        timers.into_iter().flatten().min()
    }

    /// Not-found timers that expired by `now` are reported missing (C14); TTL'd resources
    /// whose TTL lapsed are removed (C17).
    pub fn on_timer(&mut self, now: Instant, at: SystemTime) {
        self.expire(now, at);
        let expired = self.not_found.expired(now);
        let mut by_type: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (type_url, name) in expired {
            by_type.entry(type_url).or_default().push(name);
        }
        for (type_url, names) in by_type {
            self.report_missing(&type_url, names, at);
        }
        self.check_synced();
    }

    pub(super) fn report_missing(&mut self, type_url: &str, names: Vec<String>, at: SystemTime) {
        if names.is_empty() {
            return;
        }
        tracing::info!(type_url, ?names, "resources not found");
        let subscribers: Vec<_> = self
            .watches
            .subscribers(type_url)
            .map(|(id, interest, _)| (id, interest.clone()))
            .collect();
        for (id, interest) in subscribers {
            let mine: Vec<String> = names
                .iter()
                .filter(|n| interest.wants(n))
                .cloned()
                .collect();
            if !mine.is_empty() {
                let event = Event::Missing {
                    type_url: type_url.to_string(),
                    names: mine,
                };
                self.out.deliveries.push((id, event));
            }
        }
        let report = Report::NotFound {
            at,
            type_url: type_url.to_string(),
            names,
        };
        self.out.reports.push(report);
    }
}
