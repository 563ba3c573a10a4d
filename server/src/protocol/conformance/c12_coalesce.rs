//! C12: dependent requests are coalesced. Applying a CDS (LDS) update yields one EDS (RDS)
//! request with all the new names, not one request per new cluster (listener).
//!
//! Judged on ADS streams only: on per-type services the parent and the dependent types are two
//! HTTP/2 streams with no order between them. Counted from the first parent response on: a
//! client may subscribe dependent names on its own before. gRPC sends up to two (the first
//! request goes out at once, the rest wait in one buffered request while it is in flight), so
//! more than [`COALESCE_REQUESTS`] widening dependent requests between two parent responses is
//! a violation.

use xdsloop_proto::type_url;

use super::Violation;
use crate::protocol::subscription::Change;

/// Widening dependent requests allowed per parent response.
pub const COALESCE_REQUESTS: u32 = 2;

/// The two parent → dependent pairs: clusters name their endpoints, listeners their routes.
const PAIRS: [(&str, &str); 2] = [
    (type_url::CLUSTER, type_url::ENDPOINT),
    (type_url::LISTENER, type_url::ROUTE),
];

/// Per pair: widening dependent requests since the parent's latest response.
#[derive(Debug, Default)]
pub struct Coalesce {
    pairs: [Pair; 2],
}

#[derive(Debug, Default, Clone, Copy)]
struct Pair {
    /// A parent response was sent: counting has begun.
    started: bool,
    widened: u32,
    reported: bool,
}

impl Coalesce {
    /// A response of `url` went out.
    pub fn on_response(&mut self, url: &str) {
        if let Some(i) = PAIRS.iter().position(|(parent, _)| *parent == url) {
            self.pairs[i] = Pair {
                started: true,
                ..Pair::default()
            };
        }
    }

    /// A request of `url` changed the interest as `change` says.
    pub fn on_request(&mut self, url: &str, change: Change) -> Option<Violation> {
        let i = PAIRS.iter().position(|(_, child)| *child == url)?;
        let pair = &mut self.pairs[i];
        if !pair.started || change != Change::Widened {
            return None;
        }
        pair.widened += 1;
        if pair.widened <= COALESCE_REQUESTS || pair.reported {
            return None;
        }
        pair.reported = true;
        let parent = type_url::short_name(PAIRS[i].0);
        let child = type_url::short_name(url);
        Some(Violation::new(
            "C12.coalesce",
            Some(url),
            format!(
                "{} {child} requests added names after one {parent} response (at most \
                 {COALESCE_REQUESTS}): a {parent} update should yield one {child} request with \
                 all the new names",
                pair.widened
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c12_more_than_two_widening_eds_requests_per_cds_response() {
        let mut c = Coalesce::default();
        let eds = type_url::ENDPOINT;
        assert_eq!(
            c.on_request(eds, Change::Widened),
            None,
            "before any CDS response"
        );
        assert_eq!(c.on_request(eds, Change::Widened), None);
        assert_eq!(c.on_request(eds, Change::Widened), None);
        c.on_response(type_url::CLUSTER);
        assert_eq!(c.on_request(eds, Change::Widened), None);
        assert_eq!(
            c.on_request(eds, Change::None),
            None,
            "an ACK is no new request"
        );
        assert_eq!(
            c.on_request(eds, Change::Widened),
            None,
            "gRPC's buffered second"
        );
        let v = c.on_request(eds, Change::Widened).unwrap();
        assert_eq!((v.rule, v.check), ("C12", "C12.coalesce"));
        assert!(
            v.message
                .starts_with("3 eds requests added names after one cds response")
        );
        assert_eq!(
            c.on_request(eds, Change::Widened),
            None,
            "once per parent response"
        );
        c.on_response(type_url::CLUSTER);
        assert_eq!(c.on_request(eds, Change::Widened), None);
    }

    #[test]
    fn c12_listeners_and_routes_are_counted_apart_from_clusters() {
        let mut c = Coalesce::default();
        c.on_response(type_url::LISTENER);
        for _ in 0..COALESCE_REQUESTS {
            assert_eq!(c.on_request(type_url::ROUTE, Change::Widened), None);
        }
        assert_eq!(c.on_request(type_url::ENDPOINT, Change::Widened), None);
        assert!(c.on_request(type_url::ROUTE, Change::Widened).is_some());
    }
}
