//! What the mux reports about itself over CSDS (C18).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use xdsloop_proto::csds::{ClientResourceStatus as Status, GenericXdsConfig};
use xdsloop_proto::type_url::ENDPOINT;

use super::*;

fn statuses(configs: &[GenericXdsConfig]) -> Vec<(&str, Status, &str)> {
    configs
        .iter()
        .map(|c| {
            let status = Status::try_from(c.client_status).unwrap();
            (c.name.as_str(), status, c.version_info.as_str())
        })
        .collect()
}

#[test]
fn c18_client_status_reports_acked_nacked_requested_and_not_found() {
    let mut config = MuxConfig::new(Variant::Sotw, node());
    config.not_found_timeout = Duration::from_secs(10);
    config.validator = Some(Arc::new(|_, name, bytes| match (name, bytes.len()) {
        // The second version of "b" (a longer body) is refused.
        ("b", n) if n > 3 => Err("b is not allowed".into()),
        _ => Ok(()),
    }));
    let mut mux = Mux::new(config);
    let start = t0();
    let names = Interest::names(["a", "b", "ghost"]);
    mux.add_watch(1, ENDPOINT, names, start);
    mux.on_stream_start(start);
    respond(
        &mut mux,
        start,
        ENDPOINT,
        "v1",
        "1",
        vec![endpoints("a"), endpoints("b")],
    );
    let later = start + Duration::from_secs(5);
    mux.set_interest(1, Interest::names(["a", "b", "ghost", "late"]), later);
    mux.on_timer(start + Duration::from_secs(10), SystemTime::now());

    let ours = mux.client_config(true);
    assert_eq!(ours.node.as_ref().map(|n| n.id.as_str()), Some("n1"));
    assert_eq!(ours.client_scope, "ads");
    let rows = statuses(&ours.generic_xds_configs);
    assert_eq!(
        rows,
        [
            ("a", Status::Acked, "v1"),
            ("b", Status::Acked, "v1"),
            ("ghost", Status::DoesNotExist, ""),
            ("late", Status::Requested, ""),
        ]
    );
    let a = &ours.generic_xds_configs[0];
    assert_eq!(a.xds_config.as_ref().unwrap().value, endpoints("a").value);
    assert!(a.last_updated.is_some() && a.error_state.is_none());

    let mut b2 = endpoints("b");
    b2.value.extend([0x12, 0x00]);
    respond(&mut mux, later, ENDPOINT, "v2", "2", vec![b2]);
    let ours = mux.client_config(true);
    let b = &ours.generic_xds_configs[1];
    assert_eq!(
        statuses(std::slice::from_ref(b)),
        [("b", Status::Nacked, "v1")]
    );
    let failure = b.error_state.as_ref().unwrap();
    assert_eq!(failure.version_info, "v2");
    assert!(failure.details.contains("b is not allowed"), "{failure:?}");
    let kept = b.xds_config.as_ref().unwrap();
    assert_eq!(kept.value, endpoints("b").value, "the last good one stays");
    let a = &ours.generic_xds_configs[0];
    assert_eq!(
        Status::try_from(a.client_status),
        Ok(Status::Acked),
        "not in the NACKed response"
    );
    assert!(
        mux.client_config(false)
            .generic_xds_configs
            .iter()
            .all(|c| c.xds_config.is_none())
    );

    respond(&mut mux, later, ENDPOINT, "v3", "3", vec![endpoints("b")]);
    let after = mux.client_config(true);
    let row = statuses(&after.generic_xds_configs)[1];
    assert_eq!(
        row,
        ("b", Status::Acked, "v1"),
        "an accepted response clears the NACK"
    );
}
