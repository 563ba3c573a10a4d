//! Following dependencies (CDS→EDS, LDS→RDS), the not-found timer, serving held resources, and
//! sync.

use std::time::{Duration, SystemTime};

use xdsloop_proto::discovery::DeltaDiscoveryResponse;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use super::*;

#[test]
fn c12_one_cds_update_yields_one_eds_request_after_the_ack() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    mux.take_output();
    let clusters = vec![eds_cluster("web"), eds_cluster("api")];
    respond(&mut mux, now, CLUSTER, "v1", "n1", clusters);
    let out = mux.take_output();
    let requests = sotw_requests(&out);
    assert_eq!(requests.len(), 2);
    assert_eq!(
        (
            requests[0].type_url.as_str(),
            requests[0].response_nonce.as_str()
        ),
        (CLUSTER, "n1")
    );
    assert_eq!(requests[1].type_url, ENDPOINT);
    assert_eq!(requests[1].resource_names, vec!["api", "web"]);
    let more = vec![eds_cluster("web"), eds_cluster("api"), eds_cluster("new")];
    respond(&mut mux, now, CLUSTER, "v2", "n2", more);
    let out = mux.take_output();
    let eds: Vec<_> = sotw_requests(&out)
        .into_iter()
        .filter(|r| r.type_url == ENDPOINT)
        .collect();
    assert_eq!(eds.len(), 1);
    assert_eq!(eds[0].resource_names, vec!["api", "new", "web"]);
}

#[test]
fn c12_removed_cluster_drops_its_endpoints() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("web")]);
    respond(&mut mux, now, ENDPOINT, "e1", "n2", vec![endpoints("web")]);
    mux.take_output();
    respond(&mut mux, now, CLUSTER, "v2", "n3", vec![]);
    let out = mux.take_output();
    let eds = sotw_requests(&out)
        .into_iter()
        .find(|r| r.type_url == ENDPOINT)
        .unwrap();
    assert!(eds.resource_names.is_empty());
    assert!(!mux.store().holds(ENDPOINT, "web"));
}

#[test]
fn c14_not_found_timer_starts_when_the_request_is_sent() {
    let mut mux = mux(Variant::Sotw);
    let t = t0();
    mux.add_watch(1, ENDPOINT, Interest::names(["ghost"]), t);
    assert_eq!(mux.next_deadline(), None, "not sent yet: no timer");
    let later = t + Duration::from_secs(100);
    mux.on_stream_start(later);
    assert_eq!(mux.next_deadline(), Some(later + Duration::from_secs(15)));
    mux.take_output();
    mux.on_timer(later + Duration::from_secs(15), SystemTime::now());
    let out = mux.take_output();
    assert!(out.deliveries.iter().any(|(id, e)| *id == 1
        && *e
            == Event::Missing {
                type_url: ENDPOINT.into(),
                names: vec!["ghost".into()]
            }));
    assert!(
        out.reports
            .iter()
            .any(|r| matches!(r, Report::NotFound { .. }))
    );
}

#[test]
fn c14_delta_removal_reports_missing_at_once() {
    let mut mux = mux(Variant::Delta);
    let now = t0();
    mux.add_watch(1, ENDPOINT, Interest::names(["ghost"]), now);
    mux.on_stream_start(now);
    mux.take_output();
    let response = DeltaDiscoveryResponse {
        type_url: ENDPOINT.into(),
        nonce: "n1".into(),
        removed_resources: vec!["ghost".into()],
        ..Default::default()
    };
    mux.on_delta_response(response, now, SystemTime::now());
    let out = mux.take_output();
    assert!(
        out.deliveries
            .iter()
            .any(|(_, e)| matches!(e, Event::Missing { names, .. } if names == &["ghost"]))
    );
    assert_eq!(mux.next_deadline(), None);
}

#[test]
fn c15_new_watch_on_held_resource_is_served_without_a_request() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, ENDPOINT, Interest::names(["a"]), now);
    mux.on_stream_start(now);
    respond(&mut mux, now, ENDPOINT, "v1", "n1", vec![endpoints("a")]);
    mux.take_output();
    mux.add_watch(2, ENDPOINT, Interest::names(["a"]), now);
    let out = mux.take_output();
    assert!(out.requests.is_empty());
    let (id, Event::Sotw { resources, .. }) = &out.deliveries[0] else {
        panic!()
    };
    assert_eq!((*id, resources[0].name.as_str()), (2, "a"));
}

#[test]
fn synced_is_reported_once_everything_wanted_has_arrived() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("web")]);
    let out = mux.take_output();
    assert!(
        !out.reports.contains(&Report::Synced),
        "endpoints still pending"
    );
    respond(&mut mux, now, ENDPOINT, "e1", "n2", vec![endpoints("web")]);
    assert!(mux.take_output().reports.contains(&Report::Synced));
}

#[test]
fn synced_is_reported_again_once_a_later_watch_and_its_routes_have_arrived() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    let synced = |mux: &mut Mux| mux.take_output().reports.contains(&Report::Synced);
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("web")]);
    respond(&mut mux, now, ENDPOINT, "e1", "n2", vec![endpoints("web")]);
    assert!(synced(&mut mux), "everything watched so far has arrived");
    mux.add_watch(2, LISTENER, Interest::Wildcard, now);
    respond(
        &mut mux,
        now,
        LISTENER,
        "l1",
        "n3",
        vec![rds_listener("in", "r")],
    );
    // Dependency following registers the route watch while handling the listener response.
    assert!(!synced(&mut mux), "the listener's routes are still pending");
    respond(&mut mux, now, ROUTE, "r1", "n4", vec![routes("r")]);
    assert!(synced(&mut mux));
}

#[test]
fn c19_xdstp_names_match_and_dependencies_follow_them_normalised() {
    let listener = |q: &str| format!("xdstp://a/envoy.config.listener.v3.Listener/l?{q}");
    let route = |q: &str| format!("xdstp://a/envoy.config.route.v3.RouteConfiguration/r?{q}");
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, LISTENER, Interest::names([listener("z=1&a=2")]), now);
    mux.on_stream_start(now);
    let out = mux.take_output();
    assert_eq!(sotw_requests(&out)[0].resource_names, [listener("a=2&z=1")]);
    // A server that keeps names as written: the listener and its route reference unsorted.
    let lds = rds_listener(&listener("z=1&a=2"), &route("y=1&b=2"));
    respond(&mut mux, now, LISTENER, "v1", "1", vec![lds]);
    assert!(mux.store().holds(LISTENER, &listener("a=2&z=1")));
    let out = mux.take_output();
    let rds: Vec<_> = sotw_requests(&out)
        .into_iter()
        .filter(|r| r.type_url == ROUTE)
        .collect();
    assert_eq!(rds[0].resource_names, [route("b=2&y=1")]);
    respond(
        &mut mux,
        now,
        ROUTE,
        "v1",
        "2",
        vec![routes(&route("y=1&b=2"))],
    );
    assert!(
        mux.store().holds(ROUTE, &route("b=2&y=1")),
        "{:?}",
        mux.store()
    );
    let acks = mux.take_output();
    assert!(
        acks.requests.iter().all(|r| r.error().is_none()),
        "nothing NACKed"
    );
}

/// Envoy stops a subscription's init-fetch timer when an update is rejected: the server did
/// answer, the client refused what it got. A rejected response is no reason to call the
/// names it asked for "not found", whether or not the rejected resources could be read.
#[test]
fn c14_a_rejected_update_stops_the_not_found_timer() {
    for corrupt in [false, true] {
        let mut mux = mux(Variant::Sotw);
        let t = t0();
        mux.add_watch(1, ENDPOINT, Interest::names(["web", "api"]), t);
        mux.on_stream_start(t);
        mux.take_output();
        let mut bad = endpoints("web");
        bad.type_url = Cluster::type_url();
        if corrupt {
            bad.value = vec![0x0f];
        }
        respond(
            &mut mux,
            t,
            ENDPOINT,
            "v1",
            "n1",
            vec![bad, endpoints("api")],
        );
        let out = mux.take_output();
        assert!(
            out.reports.iter().any(
                |r| matches!(r, Report::Update(u) if matches!(u.verdict, crate::core::event::Verdict::Nack(_)))
            ),
            "the update is rejected: {:?}",
            out.reports
        );
        assert_eq!(mux.next_deadline(), None, "no not-found timer runs");
        mux.on_timer(t + Duration::from_secs(60), SystemTime::now());
        let out = mux.take_output();
        assert!(
            !out.reports
                .iter()
                .any(|r| matches!(r, Report::NotFound { .. })),
            "received and NACKed is not not-found: {:?}",
            out.reports
        );
    }
}
