//! C12: dependent requests are coalesced. Applying a CDS (LDS) update yields one EDS (RDS)
//! request with all the new names, not one request per new cluster (listener).
//!
//! Judged on ADS streams only: on per-type services the parent and the dependent types are two
//! HTTP/2 streams with no order between them. Counted from the first parent response on: a
//! client may subscribe dependent names on its own before. gRPC sends up to two (the first
//! request goes out at once, the rest wait in one buffered request while it is in flight), so
//! more than [`COALESCE_REQUESTS`] widening dependent requests between two parent responses is
//! a violation (`C12.coalesce`).
//!
//! `C12.before-ack`: a request adding dependent names while the parent's latest response is
//! still unanswered. gRPC and Envoy apply a CDS (LDS) update, ACK it, and only then ask for
//! the new EDS (RDS) names (the interop run's transcript shows gRPC doing so). Not judged for
//! the type's first request on the stream (a reconnecting client resubscribes every type at
//! once, before any response), nor while the parent's latest response was changed by a
//! scenario fault.

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
    /// The parent's latest response is not answered yet.
    awaiting: bool,
    reported_early: bool,
}

impl Coalesce {
    /// A response of `url` went out; `faulted`: a scenario rule changed it.
    pub fn on_response(&mut self, url: &str, faulted: bool) {
        if let Some(i) = PAIRS.iter().position(|(parent, _)| *parent == url) {
            self.pairs[i] = Pair {
                started: true,
                awaiting: !faulted,
                ..Pair::default()
            };
        }
    }

    /// A request of `url` changed the interest as `change` says; `answers_latest`: it
    /// carries the nonce of the latest response of its type; `first`: the type's first
    /// request on the stream.
    pub fn on_request(
        &mut self,
        url: &str,
        change: Change,
        answers_latest: bool,
        first: bool,
    ) -> Option<Violation> {
        if let Some(i) = PAIRS.iter().position(|(parent, _)| *parent == url) {
            self.pairs[i].awaiting &= !answers_latest;
            return None;
        }
        let i = PAIRS.iter().position(|(_, child)| *child == url)?;
        let pair = &mut self.pairs[i];
        if !pair.started || change != Change::Widened {
            return None;
        }
        pair.widened += 1;
        if pair.awaiting && !first && !pair.reported_early {
            pair.reported_early = true;
            let (parent, child) = (type_url::short_name(PAIRS[i].0), type_url::short_name(url));
            return Some(Violation::new(
                "C12.before-ack",
                Some(url),
                format!(
                    "new {child} names were asked for before the latest {parent} response was \
                     answered: apply the {parent} update, ACK it, then ask for its {child}"
                ),
            ));
        }
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

    fn cds_pushed_and_acked(c: &mut Coalesce) {
        c.on_response(type_url::CLUSTER, false);
        assert_eq!(
            c.on_request(type_url::CLUSTER, Change::None, true, false),
            None
        );
    }

    fn widened(c: &mut Coalesce, url: &str) -> Option<Violation> {
        c.on_request(url, Change::Widened, false, false)
    }

    #[test]
    fn c12_more_than_two_widening_eds_requests_per_cds_response() {
        let mut c = Coalesce::default();
        let eds = type_url::ENDPOINT;
        assert_eq!(widened(&mut c, eds), None, "before any CDS response");
        assert_eq!(widened(&mut c, eds), None);
        assert_eq!(widened(&mut c, eds), None);
        cds_pushed_and_acked(&mut c);
        assert_eq!(widened(&mut c, eds), None);
        assert_eq!(
            c.on_request(eds, Change::None, true, false),
            None,
            "an ACK asks for nothing"
        );
        assert_eq!(widened(&mut c, eds), None, "gRPC's buffered second");
        let v = widened(&mut c, eds).unwrap();
        assert_eq!((v.rule, v.check), ("C12", "C12.coalesce"));
        assert!(
            v.message
                .starts_with("3 eds requests added names after one cds response")
        );
        assert_eq!(widened(&mut c, eds), None, "once per parent response");
        cds_pushed_and_acked(&mut c);
        assert_eq!(widened(&mut c, eds), None);
    }

    #[test]
    fn c12_listeners_and_routes_are_counted_apart_from_clusters() {
        let mut c = Coalesce::default();
        c.on_response(type_url::LISTENER, false);
        c.on_request(type_url::LISTENER, Change::None, true, false);
        for _ in 0..COALESCE_REQUESTS {
            assert_eq!(widened(&mut c, type_url::ROUTE), None);
        }
        assert_eq!(widened(&mut c, type_url::ENDPOINT), None);
        assert!(widened(&mut c, type_url::ROUTE).is_some());
    }

    #[test]
    fn c12_before_ack_dependent_names_asked_before_the_parent_is_answered() {
        let mut c = Coalesce::default();
        let eds = type_url::ENDPOINT;
        c.on_response(type_url::CLUSTER, false);
        c.on_request(type_url::CLUSTER, Change::Widened, false, false);
        let first = c.on_request(eds, Change::Widened, false, true);
        assert_eq!(
            first, None,
            "a first request may come at once (resubscription)"
        );
        let v = widened(&mut c, eds).unwrap();
        assert_eq!(v.check, "C12.before-ack");
        assert_eq!(
            c.on_request(eds, Change::Narrowed, false, false),
            None,
            "only asking for more counts"
        );
        assert!(
            v.message
                .starts_with("new eds names were asked for before the latest cds")
        );
        c.on_response(type_url::CLUSTER, true);
        assert_eq!(
            widened(&mut c, eds),
            None,
            "a faulted push is not waited for"
        );
    }
}
