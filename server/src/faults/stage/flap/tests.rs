//! `flap` with the real machines, the stream's age given explicitly.

use crate::protocol::machine::MachineHooks;
use crate::protocol::now::tests::now;
use std::time::Duration;

use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryResponse},
    type_url::{CLUSTER as CDS, ENDPOINT as EDS},
};

use super::super::{FaultStage, Plan, StreamCtx, WireStep};
use crate::{
    faults::scenario::{Scenario, Scenarios},
    protocol::{delta::DeltaStream, kind::StreamKind, subscription::Verdict, wire::FaultMark},
    protocol::{response::DeltaResponse, response::SotwResponse, sotw::SotwStream},
    test_support::{names, node, snapshot, sotw},
};

const WEB_EVERY_2S: &str = "version: 1\nrules:\n- id: blink\n  match: {type: cds}\n  do: {flap: {names: [web], period: 2s}}\n";

fn ctx(secs: u64) -> StreamCtx<'static> {
    StreamCtx {
        stream: 1,
        node: Some("node-1"),
        age: Duration::from_secs(secs),
        now: crate::protocol::now::tests::now(),
    }
}

fn stage(yaml: &str, kind: StreamKind) -> (FaultStage, Scenarios) {
    let scenarios = Scenarios::new();
    scenarios.set(Scenario::from_yaml(yaml).unwrap()).unwrap();
    let mut stage = FaultStage::new();
    stage.load(scenarios.current(), kind, Some("node-1"));
    (stage, scenarios)
}

/// What the plan does with `out`: each response with the rule that marked it.
fn planned<R: crate::protocol::facts::TapResponse + crate::protocol::wire::WireResponse>(
    stage: &mut FaultStage,
    ctx: &StreamCtx<'_>,
    out: Vec<R>,
) -> Vec<(R, Option<FaultMark>)> {
    match stage.plan(ctx, out) {
        Plan::AsIs(out) => out.into_iter().map(|r| (r, None)).collect(),
        Plan::Steps(steps) => steps
            .into_iter()
            .map(|step| match step {
                WireStep::Send { response, mark, .. } => (response, mark),
                _ => panic!("a flap turn is only sends"),
            })
            .collect(),
    }
}

fn clusters(response: &DiscoveryResponse) -> Vec<String> {
    let codec = |any: &xdsloop_proto::discovery::Any| String::from_utf8_lossy(&any.value).into();
    response.resources.iter().map(codec).collect()
}

/// A SotW stream holding (and having ACKed) the clusters `api` and `web`.
fn sotw_stream() -> (SotwStream, DiscoveryResponse) {
    let start = snapshot(1, &[(CDS, &[("api", "1"), ("web", "1")])]);
    let mut stream = SotwStream::new(1, start);
    let first = stream
        .on_request_decoded(sotw(CDS, &[], "", ""), now())
        .remove(0);
    stream.on_request_decoded(sotw(CDS, &[], &first.version_info, &first.nonce), now());
    (stream, first)
}

/// The turn at `secs`: the one SotW response it owes, decoded, with its mark.
fn sotw_turn(
    stage: &mut FaultStage,
    stream: &mut SotwStream,
    secs: u64,
) -> Option<(DiscoveryResponse, Option<FaultMark>)> {
    let ctx = ctx(secs);
    let out: Vec<SotwResponse> = stage.on_flap(&ctx, stream);
    let mut sent = planned(stage, &ctx, out);
    assert!(sent.len() <= 1, "one response per turn");
    sent.pop().map(|(r, mark)| (r.to_message(), mark))
}

fn ack(stream: &mut SotwStream, response: &DiscoveryResponse) {
    let request = sotw(CDS, &[], &response.version_info, &response.nonce);
    stream.on_request_decoded(request, now());
    assert_eq!(stream.exchange().verdict, Verdict::Ack);
}

#[test]
fn flap_sotw_cds_is_gone_and_back_every_period_each_under_its_own_version() {
    let (mut stage, scenarios) = stage(WEB_EVERY_2S, StreamKind::ADS_SOTW);
    let (mut stream, first) = sotw_stream();
    assert_eq!(clusters(&first).len(), 2);
    assert_eq!(stage.deadline(), Some(Duration::ZERO), "to be scheduled");
    assert!(sotw_turn(&mut stage, &mut stream, 0).is_none());
    assert_eq!(stage.deadline(), Some(Duration::from_secs(2)));
    assert!(sotw_turn(&mut stage, &mut stream, 1).is_none(), "not yet");
    let (gone, mark) = sotw_turn(&mut stage, &mut stream, 2).expect("the removal");
    assert_eq!(clusters(&gone), ["api@1"], "LDS/CDS: missing = deleted");
    assert_eq!(mark.unwrap().rule.as_ref(), "blink");
    assert_ne!(
        gone.version_info, first.version_info,
        "a version of its own"
    );
    assert_ne!(gone.nonce, first.nonce);
    ack(&mut stream, &gone);
    assert_eq!(scenarios.current().counters[0].fired(), 1);
    let (back, mark) = sotw_turn(&mut stage, &mut stream, 4).expect("the return");
    assert_eq!(clusters(&back), ["api@1", "web@1"]);
    assert_eq!(back.version_info, first.version_info, "the snapshot's own");
    assert_eq!(mark.unwrap().action, "flap", "marked");
    assert_eq!(
        scenarios.current().counters[0].fired(),
        1,
        "a return is no firing"
    );
    ack(&mut stream, &back);
    let (again, _) = sotw_turn(&mut stage, &mut stream, 6).expect("gone again");
    assert_eq!(
        again.version_info, gone.version_info,
        "one version, one content"
    );
    assert_eq!(scenarios.current().counters[0].fired(), 2);
    let ledger = stream.ledger(CDS).unwrap();
    assert_eq!(ledger.last_sent.as_ref().unwrap().nonce, again.nonce);
}

#[test]
fn flap_times_then_the_resource_stays() {
    let yaml = WEB_EVERY_2S.replace("  do:", "  times: 1\n  do:");
    let (mut stage, scenarios) = stage(&yaml, StreamKind::ADS_SOTW);
    let (mut stream, _) = sotw_stream();
    sotw_turn(&mut stage, &mut stream, 0);
    let (gone, _) = sotw_turn(&mut stage, &mut stream, 2).unwrap();
    ack(&mut stream, &gone);
    let (back, _) = sotw_turn(&mut stage, &mut stream, 4).expect("back even when spent");
    assert_eq!(clusters(&back).len(), 2);
    assert_eq!(stage.deadline(), None, "spent: no more turns");
    assert!(sotw_turn(&mut stage, &mut stream, 6).is_none());
    assert_eq!(scenarios.current().counters[0].fired(), 1);
}

#[test]
fn flap_is_no_firing_where_the_type_is_not_subscribed() {
    let (mut stage, scenarios) = stage(WEB_EVERY_2S, StreamKind::ADS_SOTW);
    let start = snapshot(1, &[(CDS, &[("api", "1"), ("web", "1")])]);
    let mut stream = SotwStream::new(1, start);
    stream.on_request_decoded(sotw(EDS, &["api"], "", ""), now());
    sotw_turn(&mut stage, &mut stream, 0);
    assert!(sotw_turn(&mut stage, &mut stream, 2).is_none());
    assert_eq!(scenarios.current().counters[0].fired(), 0, "told nobody");
    let first = stream
        .on_request_decoded(sotw(CDS, &[], "", ""), now())
        .remove(0);
    assert_eq!(clusters(&first).len(), 2, "not hidden meanwhile");
    ack(&mut stream, &first);
    assert!(
        sotw_turn(&mut stage, &mut stream, 4).is_some(),
        "the next turn removes"
    );
    assert_eq!(scenarios.current().counters[0].fired(), 1);
}

#[test]
fn flap_removed_with_its_scenario_shows_the_resource_again_at_once() {
    let (mut stage, scenarios) = stage(WEB_EVERY_2S, StreamKind::ADS_SOTW);
    let (mut stream, first) = sotw_stream();
    sotw_turn(&mut stage, &mut stream, 0);
    let (gone, _) = sotw_turn(&mut stage, &mut stream, 2).unwrap();
    ack(&mut stream, &gone);
    scenarios.clear();
    stage.load(scenarios.current(), StreamKind::ADS_SOTW, Some("node-1"));
    let (back, mark) = sotw_turn(&mut stage, &mut stream, 3).expect("at once");
    assert_eq!(back.version_info, first.version_info);
    assert!(mark.is_none(), "no rule at work");
    assert_eq!(stage.deadline(), None);
}

fn delta(subscribe: &[&str], nonce: &str) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        node: node("node-1"),
        type_url: CDS.to_string(),
        resource_names_subscribe: names(subscribe),
        response_nonce: nonce.to_string(),
        ..Default::default()
    }
}

fn delta_turn(
    stage: &mut FaultStage,
    stream: &mut DeltaStream,
    secs: u64,
) -> Option<(DeltaDiscoveryResponse, Option<FaultMark>)> {
    let ctx = ctx(secs);
    let out: Vec<DeltaResponse> = stage.on_flap(&ctx, stream);
    let mut sent = planned(stage, &ctx, out);
    sent.pop().map(|(r, mark)| (r.to_message(), mark))
}

#[test]
fn flap_delta_removes_then_sends_the_resource_again() {
    let yaml = WEB_EVERY_2S.replace("type: cds", "type: cds, variant: delta");
    let (mut stage, scenarios) = stage(&yaml, StreamKind::ADS_DELTA);
    let start = snapshot(1, &[(CDS, &[("api", "1"), ("web", "1")])]);
    let mut stream = DeltaStream::new(1, start);
    let first = stream
        .on_request_decoded(delta(&["*"], ""), now())
        .remove(0);
    stream.on_request_decoded(delta(&[], &first.nonce), now());
    delta_turn(&mut stage, &mut stream, 0);
    let (gone, mark) = delta_turn(&mut stage, &mut stream, 2).expect("the removal");
    assert_eq!(gone.removed_resources, ["web"]);
    assert!(gone.resources.is_empty());
    assert_eq!(mark.unwrap().rule.as_ref(), "blink");
    assert_ne!(gone.system_version_info, first.system_version_info);
    stream.on_request_decoded(delta(&[], &gone.nonce), now());
    assert_eq!(stream.exchange().verdict, Verdict::Ack);
    let (back, _) = delta_turn(&mut stage, &mut stream, 4).expect("the return");
    let web = &back.resources[0];
    let before = first.resources.iter().find(|r| r.name == "web").unwrap();
    assert_eq!(
        (web.name.as_str(), &web.version),
        ("web", &before.version),
        "the resource again, at its version"
    );
    assert!(back.removed_resources.is_empty());
    assert_eq!(scenarios.current().counters[0].fired(), 1);
}

#[test]
fn flap_of_a_name_the_delta_stream_did_not_ask_for_is_no_firing() {
    let (mut stage, scenarios) = stage(WEB_EVERY_2S, StreamKind::ADS_DELTA);
    let start = snapshot(1, &[(CDS, &[("api", "1"), ("web", "1")])]);
    let mut stream = DeltaStream::new(1, start);
    let first = stream
        .on_request_decoded(delta(&["api"], ""), now())
        .remove(0);
    stream.on_request_decoded(delta(&[], &first.nonce), now());
    delta_turn(&mut stage, &mut stream, 0);
    assert!(delta_turn(&mut stage, &mut stream, 2).is_none());
    assert_eq!(scenarios.current().counters[0].fired(), 0, "given back");
    let more = stream
        .on_request_decoded(delta(&["web"], &first.nonce), now())
        .remove(0);
    assert_eq!(more.resources[0].name, "web", "not hidden meanwhile");
}
