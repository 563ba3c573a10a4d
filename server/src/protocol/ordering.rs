//! ADS make-before-break ordering of the responses one snapshot change causes (S11).
//!
//! Responses that add or update resources go first, in `type_url::order` (clusters, endpoints,
//! listeners, routes, then the rest): a client learns of a cluster before its endpoints and
//! of a listener before its routes, and a route that starts pointing at a new cluster finds
//! it already there. Responses that only remove resources go last and in the reverse order,
//! so routes stop pointing at a cluster before the cluster disappears (the xDS protocol's
//! "eventual consistency considerations": stale clusters are removed after everything else).

use xdsloop_proto::type_url;

/// One response waiting to be ordered.
#[derive(Debug)]
pub(crate) struct Planned<T> {
    pub type_url: String,
    /// Nothing in the response is new or changed: it only takes resources away.
    pub removal_only: bool,
    pub response: T,
}

/// Orders one update's responses make-before-break.
pub(crate) fn make_before_break<T>(mut planned: Vec<Planned<T>>) -> Vec<T> {
    planned.sort_by_key(|p| {
        let order = type_url::order(&p.type_url);
        if p.removal_only {
            (1, usize::MAX - order)
        } else {
            (0, order)
        }
    });
    planned.into_iter().map(|p| p.response).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE, SECRET, VIRTUAL_HOST};

    fn plan(url: &str, removal_only: bool) -> Planned<&str> {
        Planned {
            type_url: url.to_string(),
            removal_only,
            response: xdsloop_proto::type_url::short_name(url),
        }
    }

    #[test]
    fn s11_updates_in_order_then_removals_in_reverse() {
        let planned = vec![
            plan(ROUTE, false),
            plan(SECRET, false),
            plan(LISTENER, false),
            plan(ENDPOINT, true),
            plan(CLUSTER, true),
            plan(ENDPOINT, false),
        ];
        // Unrealistic to have EDS twice, but it shows both phases.
        assert_eq!(
            make_before_break(planned),
            ["eds", "lds", "rds", "sds", "eds", "cds"]
        );
        let updates = vec![plan(ENDPOINT, false), plan(CLUSTER, false)];
        assert_eq!(make_before_break(updates), ["cds", "eds"]);
    }

    #[test]
    fn virtual_hosts_come_after_the_route_configurations_that_use_them() {
        // eventual-consistency.6: "VHDS updates (if any) related to the newly added
        // RouteConfigurations must arrive after RDS updates."
        let planned = vec![
            plan(VIRTUAL_HOST, false),
            plan(ROUTE, false),
            plan(LISTENER, false),
        ];
        assert_eq!(make_before_break(planned), ["lds", "rds", "vhds"]);
    }
}
