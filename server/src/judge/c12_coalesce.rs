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
//!
//! A request is judged only on what the client could have known when it sent it. A push may
//! cross the client's request on the wire: the client ACKed CDS `1-3` and asked for the
//! endpoints it names while CDS `1-4` was on its way, so the server sees the EDS request
//! after a CDS response it has no answer to. Responses arrive in the order they were sent,
//! so the highest nonce the client has echoed on the stream (this request's included) says
//! which responses it had: only a parent response at or below it, and unanswered, counts.

use xdsloop_proto::type_url;

use super::Violation;
use crate::protocol::subscription::Change;

/// Widening dependent requests allowed per parent response.
pub(crate) const COALESCE_REQUESTS: u32 = 2;

/// The two parent → dependent pairs: clusters name their endpoints, listeners their routes.
const PAIRS: [(&str, &str); 2] = [
    (type_url::CLUSTER, type_url::ENDPOINT),
    (type_url::LISTENER, type_url::ROUTE),
];

/// Per pair: widening dependent requests since the parent's latest response.
#[derive(Debug, Default)]
pub(crate) struct Coalesce {
    pairs: [Pair; 2],
}

#[derive(Debug, Default, Clone, Copy)]
struct Pair {
    /// A parent response was sent: counting has begun.
    started: bool,
    widened: u32,
    reported: bool,
    /// The `n` of the parent's latest response (`<stream>-<n>`) while it is not answered.
    awaiting: Option<u64>,
    reported_early: bool,
}

impl Coalesce {
    /// A response of `url` went out with the nonce `<stream>-<n>` (`n`: `None` for a nonce
    /// of another form); `faulted`: a scenario rule changed it.
    pub(crate) fn on_response(&mut self, url: &str, n: Option<u64>, faulted: bool) {
        if let Some(i) = PAIRS.iter().position(|(parent, _)| *parent == url) {
            self.pairs[i] = Pair {
                started: true,
                awaiting: n.filter(|_| !faulted),
                ..Pair::default()
            };
        }
    }

    /// A request of `url` changed the interest as `change` says; `answers_latest`: it
    /// carries the nonce of the latest response of its type; `first`: the type's first
    /// request on the stream; `known`: the highest `n` of a nonce the client has echoed on
    /// the stream so far, this request's included (it had every response up to that one).
    pub(crate) fn on_request(
        &mut self,
        url: &str,
        change: Change,
        answers_latest: bool,
        first: bool,
        known: u64,
    ) -> Option<Violation> {
        if let Some(i) = PAIRS.iter().position(|(parent, _)| *parent == url) {
            if answers_latest {
                self.pairs[i].awaiting = None;
            }
            return None;
        }
        let i = PAIRS.iter().position(|(_, child)| *child == url)?;
        let pair = &mut self.pairs[i];
        if !pair.started || change != Change::Widened {
            return None;
        }
        pair.widened += 1;
        let seen_unanswered = pair.awaiting.is_some_and(|n| n <= known);
        if seen_unanswered && !first && !pair.reported_early {
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
        c.on_response(type_url::CLUSTER, Some(1), false);
        assert_eq!(
            c.on_request(type_url::CLUSTER, Change::None, true, false, 1),
            None
        );
    }

    /// A widening request from a client that had every response sent so far.
    fn widened(c: &mut Coalesce, url: &str) -> Option<Violation> {
        c.on_request(url, Change::Widened, false, false, u64::MAX)
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
            c.on_request(eds, Change::None, true, false, 1),
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
        c.on_response(type_url::LISTENER, Some(1), false);
        c.on_request(type_url::LISTENER, Change::None, true, false, 1);
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
        c.on_response(type_url::CLUSTER, Some(1), false);
        c.on_request(type_url::CLUSTER, Change::Widened, false, false, 0);
        let first = c.on_request(eds, Change::Widened, false, true, u64::MAX);
        assert_eq!(
            first, None,
            "a first request may come at once (resubscription)"
        );
        let v = widened(&mut c, eds).unwrap();
        assert_eq!(v.check, "C12.before-ack");
        assert_eq!(
            c.on_request(eds, Change::Narrowed, false, false, u64::MAX),
            None,
            "only asking for more counts"
        );
        assert!(
            v.message
                .starts_with("new eds names were asked for before the latest cds")
        );
        c.on_response(type_url::CLUSTER, Some(2), true);
        assert_eq!(
            widened(&mut c, eds),
            None,
            "a faulted push is not waited for"
        );
        c.on_response(type_url::CLUSTER, Some(3), false);
        assert_eq!(
            c.on_request(eds, Change::Widened, false, false, 2),
            None,
            "a push the client had not had when it asked (it echoed 2 at most) is not judged"
        );
        c.on_response(type_url::CLUSTER, Some(4), false);
        let v = c.on_request(eds, Change::Widened, false, false, 5).unwrap();
        assert_eq!(v.check, "C12.before-ack", "it had 4 (it echoed 5): judged");
    }
}
