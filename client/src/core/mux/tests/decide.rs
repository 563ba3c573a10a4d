//! Callbacks that decide: an update a deciding watch would be told of waits for
//! `Mux::decide`, and only the verdict builds its ACK or NACK.

use xdsloop_proto::discovery::DeltaDiscoveryResponse;
use xdsloop_proto::discovery::WireResource as DeltaResource;
use xdsloop_proto::type_url::CLUSTER;

use super::*;
use crate::core::event::Failure;

fn plain_mux(mode: Variant) -> Mux {
    Mux::new(MuxConfig::new(mode, node()))
}

/// A deciding watch (1) and a plain one (2) of every cluster, on a live stream.
fn watched(mode: Variant) -> Mux {
    let mut mux = plain_mux(mode);
    let now = t0();
    mux.add_deciding_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.add_watch(2, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    mux.take_output();
    mux
}

fn held(mux: &Mux) -> (Option<String>, Vec<String>) {
    let store = mux.store().of_type(CLUSTER);
    let version = store.map(|t| t.version.clone());
    let names = store.map(|t| t.resources.keys().cloned().collect());
    (version, names.unwrap_or_default())
}

fn names(event: &Event) -> Vec<String> {
    match event {
        Event::Sotw { resources, .. } => resources.iter().map(|r| r.name.clone()).collect(),
        Event::Delta { added, .. } => added.iter().map(|r| r.name.clone()).collect(),
        other => panic!("not an update: {other:?}"),
    }
}

fn nack_message(request: &Outgoing) -> Option<&str> {
    request.error()
}

#[test]
fn a_sotw_update_waits_for_its_callbacks_before_anything_is_applied_or_answered() {
    let mut mux = watched(Variant::Sotw);
    let now = t0();
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("a")]);
    let out = mux.take_output();
    assert!(out.requests.is_empty(), "no ACK before the verdict");
    assert!(
        out.deliveries.is_empty(),
        "the plain watch hears nothing yet"
    );
    assert_eq!(held(&mux), (None, vec![]), "nothing applied yet");
    let [proposal] = &out.proposals[..] else {
        panic!("one proposal: {:?}", out.proposals);
    };
    assert_eq!(proposal.version, "v1");
    let asked: Vec<_> = proposal
        .asks
        .iter()
        .map(|(id, e)| (*id, names(e)))
        .collect();
    assert_eq!(
        asked,
        vec![(1, vec!["a".to_string()])],
        "only the deciding watch"
    );

    mux.decide(CLUSTER, "n1", Ok(()), now);
    let out = mux.take_output();
    assert_eq!(acks(&out), vec![(CLUSTER, "v1", "n1")]);
    assert_eq!(nack_message(&out.requests[0]), None);
    let told: Vec<WatchId> = out.deliveries.iter().map(|(id, _)| *id).collect();
    assert_eq!(told, vec![2], "the deciding watch saw it when it decided");
    assert_eq!(held(&mux), (Some("v1".into()), vec!["a".into()]));
}

#[test]
fn a_rejected_sotw_update_is_nacked_with_the_reason_and_the_last_good_config_stays() {
    let mut mux = watched(Variant::Sotw);
    let now = t0();
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("a")]);
    mux.decide(CLUSTER, "n1", Ok(()), now);
    mux.take_output();

    let update = vec![eds_cluster("a"), eds_cluster("bad")];
    respond(&mut mux, now, CLUSTER, "v2", "n2", update);
    assert_eq!(mux.take_output().proposals.len(), 1);
    let refused = Err(Rejection::new("cluster bad is refused"));
    mux.decide(CLUSTER, "n2", refused, now);
    let out = mux.take_output();
    assert_eq!(acks(&out), vec![(CLUSTER, "v1", "n2")], "NACK: old version");
    assert_eq!(
        nack_message(&out.requests[0]),
        Some("cluster bad is refused")
    );
    assert_eq!(held(&mux), (Some("v1".into()), vec!["a".into()]));
    for (id, event) in &out.deliveries {
        let failed = matches!(event, Event::Failed { reason: Failure::Rejected(m), .. } if m == "cluster bad is refused");
        assert!(failed, "watch {id} told of the rejection: {event:?}");
    }
    assert_eq!(out.deliveries.len(), 2, "both watches hear of it");

    respond(&mut mux, now, CLUSTER, "v3", "n3", vec![eds_cluster("c")]);
    mux.decide(CLUSTER, "n3", Ok(()), now);
    let out = mux.take_output();
    assert_eq!(
        acks(&out),
        vec![(CLUSTER, "v3", "n3")],
        "the next good push is ACKed"
    );
    assert_eq!(held(&mux), (Some("v3".into()), vec!["c".into()]));
}

fn delta(version: &str, nonce: &str, added: &[&str], removed: &[&str]) -> DeltaDiscoveryResponse {
    let resources = added
        .iter()
        .map(|name| DeltaResource {
            name: name.to_string(),
            version: format!("{name}-{version}"),
            resource: Some(eds_cluster(name)),
            ..Default::default()
        })
        .collect();
    DeltaDiscoveryResponse {
        system_version_info: version.into(),
        type_url: CLUSTER.into(),
        nonce: nonce.into(),
        resources,
        removed_resources: removed.iter().map(|n| n.to_string()).collect(),
        ..Default::default()
    }
}

fn delta_nonces(out: &Output) -> Vec<(&str, Option<&str>)> {
    out.requests
        .iter()
        .map(|r| match r {
            Outgoing::Delta(r) => (
                r.response_nonce.as_str(),
                r.error_detail.as_ref().map(|e| e.message.as_str()),
            ),
            Outgoing::Sotw(_) => panic!("expected Delta"),
        })
        .collect()
}

#[test]
fn a_delta_update_is_acked_or_nacked_as_its_callbacks_decide() {
    let mut mux = watched(Variant::Delta);
    let now = t0();
    let at = SystemTime::now();
    mux.on_delta_response(delta("s1", "n1", &["a"], &[]), now, at);
    let out = mux.take_output();
    assert!(out.requests.is_empty(), "no ACK before the verdict");
    let asked: Vec<_> = out.proposals[0]
        .asks
        .iter()
        .map(|(id, e)| (*id, names(e)))
        .collect();
    assert_eq!(asked, vec![(1, vec!["a".to_string()])]);
    mux.decide(CLUSTER, "n1", Ok(()), now);
    let out = mux.take_output();
    assert_eq!(delta_nonces(&out), vec![("n1", None)]);
    assert_eq!(held(&mux), (Some("s1".into()), vec!["a".into()]));

    mux.on_delta_response(delta("s2", "n2", &["bad"], &["a"]), now, at);
    let removal = &mux.take_output().proposals[0].asks[0].1;
    let Event::Delta { removed, .. } = removal else {
        panic!("a Delta update: {removal:?}");
    };
    assert_eq!(
        removed,
        &vec!["a".to_string()],
        "the callbacks see the removal too"
    );
    mux.decide(CLUSTER, "n2", Err(Rejection::new("no")), now);
    let out = mux.take_output();
    assert_eq!(delta_nonces(&out), vec![("n2", Some("no"))]);
    assert_eq!(
        held(&mux),
        (Some("s1".into()), vec!["a".into()]),
        "a is kept"
    );

    mux.on_delta_response(delta("s3", "n3", &["b"], &[]), now, at);
    mux.decide(CLUSTER, "n3", Ok(()), now);
    let out = mux.take_output();
    assert_eq!(delta_nonces(&out), vec![("n3", None)]);
    assert_eq!(
        held(&mux),
        (Some("s3".into()), vec!["a".into(), "b".into()])
    );
}

#[test]
fn without_a_deciding_watch_an_update_is_acked_at_once() {
    let mut mux = plain_mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(2, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    mux.take_output();
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("a")]);
    let out = mux.take_output();
    assert!(out.proposals.is_empty());
    assert_eq!(acks(&out), vec![(CLUSTER, "v1", "n1")]);
}

#[test]
fn a_verdict_after_its_stream_closed_is_ignored() {
    let mut mux = watched(Variant::Sotw);
    let now = t0();
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("a")]);
    mux.on_stream_end("reset");
    mux.on_stream_start(now);
    mux.take_output();
    mux.decide(CLUSTER, "n1", Ok(()), now);
    let out = mux.take_output();
    assert!(
        out.requests.is_empty(),
        "no ACK of a nonce from a dead stream: {:?}",
        out.requests
    );
    assert_eq!(held(&mux), (None, vec![]));
}

#[test]
fn a_response_before_the_last_verdict_gets_that_one_its_nack() {
    let mut mux = watched(Variant::Sotw);
    let now = t0();
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("a")]);
    respond(&mut mux, now, CLUSTER, "v2", "n2", vec![eds_cluster("b")]);
    let out = mux.take_output();
    assert_eq!(
        acks(&out),
        vec![(CLUSTER, "", "n1")],
        "v1 NACKed, unapplied"
    );
    assert!(
        nack_message(&out.requests[0])
            .unwrap()
            .contains("superseded")
    );
    mux.decide(CLUSTER, "n2", Ok(()), now);
    assert_eq!(acks(&mux.take_output()), vec![(CLUSTER, "v2", "n2")]);
}

/// The callbacks of the test below: they refuse v1 and accept v2.
fn verdict_on(proposal: &Proposal) -> Result<(), Rejection> {
    match proposal.version.as_str() {
        "v1" => Err(Rejection::new("v1 refused")),
        _ => Ok(()),
    }
}

#[test]
fn two_proposals_answered_in_order_only_the_second_verdict_decides_the_second_update() {
    let mut mux = watched(Variant::Sotw);
    let now = t0();
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("a")]);
    respond(&mut mux, now, CLUSTER, "v2", "n2", vec![eds_cluster("b")]);
    let mut out = mux.take_output();
    assert_eq!(acks(&out), vec![(CLUSTER, "", "n1")], "v1 superseded");
    // Answered in order, as the hub does.
    for proposal in std::mem::take(&mut out.proposals) {
        let verdict = verdict_on(&proposal);
        mux.decide(&proposal.type_url, &proposal.nonce, verdict, now);
    }
    let out = mux.take_output();
    assert_eq!(acks(&out), vec![(CLUSTER, "v2", "n2")]);
    assert_eq!(nack_message(&out.requests[0]), None, "v2 is accepted");
    assert_eq!(held(&mux), (Some("v2".into()), vec!["b".into()]));
}

#[test]
fn a_verdict_naming_another_nonce_leaves_the_held_update_waiting() {
    let mut mux = watched(Variant::Sotw);
    let now = t0();
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("a")]);
    respond(&mut mux, now, CLUSTER, "v2", "n2", vec![eds_cluster("b")]);
    mux.take_output();
    mux.decide(CLUSTER, "n1", Err(Rejection::new("late")), now);
    assert!(mux.take_output().requests.is_empty(), "n2 still waits");
    assert_eq!(held(&mux), (None, vec![]));
    mux.decide(CLUSTER, "n2", Ok(()), now);
    assert_eq!(acks(&mux.take_output()), vec![(CLUSTER, "v2", "n2")]);
}
