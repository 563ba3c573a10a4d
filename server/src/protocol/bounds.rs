//! What one stream's subscriptions may hold. A SotW request replaces a type's names, so one
//! type holds at most what one request carries; but a stream can name ever more types, and a
//! Delta stream adds names with every request. Without a bound one client could grow the
//! server's memory without end, one request under the size limit at a time.
//!
//! The bound is generous: the names of every type together may take what
//! [`REQUESTS_WORTH`] requests of `--max-request-bytes` carry, over at most
//! [`MAX_TYPES_PER_STREAM`] types (the Envoy API has about a dozen resource types). A stream
//! over it ends with `RESOURCE_EXHAUSTED`; other streams are not affected.

use std::collections::HashMap;

use crate::protocol::subscription::TypeStatus;

/// Distinct type URLs one stream may subscribe to.
pub(crate) const MAX_TYPES_PER_STREAM: usize = 256;
/// How many full requests' worth of names one stream may hold, all types together.
pub(crate) const REQUESTS_WORTH: usize = 4;

/// A stream's subscription size, updated from the status its machine reports.
#[derive(Debug)]
pub(crate) struct SubscriptionBounds {
    max_bytes: usize,
    /// Name bytes per type URL.
    per_type: HashMap<String, usize>,
    total: usize,
}

impl SubscriptionBounds {
    /// For a server whose requests are at most `max_request_bytes`.
    pub(crate) fn new(max_request_bytes: usize) -> Self {
        Self {
            max_bytes: max_request_bytes.saturating_mul(REQUESTS_WORTH),
            per_type: HashMap::new(),
            total: 0,
        }
    }

    /// Accounts the types whose state changed; the reason the stream must end, once it holds
    /// more than the bound.
    pub(crate) fn check(&mut self, changed: &[TypeStatus]) -> Result<(), String> {
        for status in changed {
            let bytes: usize = status.names.iter().map(String::len).sum();
            let before = self.per_type.insert(status.type_url.clone(), bytes);
            self.total = self.total - before.unwrap_or(0) + bytes;
        }
        if self.per_type.len() > MAX_TYPES_PER_STREAM {
            return Err(format!(
                "this stream subscribes to {} types, over the limit of {MAX_TYPES_PER_STREAM}",
                self.per_type.len()
            ));
        }
        if self.total > self.max_bytes {
            return Err(format!(
                "this stream's subscriptions name {} bytes of resource names, over the limit \
                 of {} ({REQUESTS_WORTH} x --max-request-bytes)",
                self.total, self.max_bytes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::names::SharedNames;

    /// `count` distinct names of ten bytes each.
    fn ten_byte_names(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("name-{i:05}")).collect()
    }

    fn status(type_url: &str, names: Vec<String>) -> TypeStatus {
        TypeStatus {
            type_url: type_url.into(),
            wildcard: false,
            names: names.into_iter().collect::<SharedNames>(),
            last_sent: None,
            last_acked: None,
            last_nack: None,
            held_hash: None,
            last_fault: None,
            heartbeats: None,
            replayed: false,
        }
    }

    #[test]
    fn names_of_every_type_count_and_a_replaced_list_counts_once() {
        let mut bounds = SubscriptionBounds::new(10);
        assert!(
            bounds.check(&[status("a", ten_byte_names(3))]).is_ok(),
            "30 of 40"
        );
        assert!(
            bounds.check(&[status("a", ten_byte_names(4))]).is_ok(),
            "replaced: 40"
        );
        let over = bounds.check(&[status("b", vec!["x".into()])]).unwrap_err();
        assert!(over.contains("41 bytes of resource names"), "{over}");
        assert!(
            bounds.check(&[status("b", Vec::new())]).is_ok(),
            "unsubscribed again"
        );
    }

    #[test]
    fn too_many_types_end_the_stream() {
        let mut bounds = SubscriptionBounds::new(1 << 20);
        for i in 0..MAX_TYPES_PER_STREAM {
            assert!(
                bounds
                    .check(&[status(&format!("t{i}"), Vec::new())])
                    .is_ok()
            );
        }
        let over = bounds.check(&[status("one-more", Vec::new())]).unwrap_err();
        assert!(over.contains("257 types"), "{over}");
    }
}
