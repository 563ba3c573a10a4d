use std::time::Duration;

use prost::Message;
use xdsloop_proto::{
    discovery::{Any, DiscoveryResponse},
    type_url::{CLUSTER, ENDPOINT},
};

use super::*;
use crate::{
    faults::scenario::{Scenario, Scenarios},
    protocol::response::SotwResponse,
};

fn response(url: &str, version: &str, nonce: &str) -> SotwResponse {
    let any = Any {
        type_url: url.to_string(),
        value: b"\x0a\x03web".to_vec(),
    };
    SotwResponse {
        head: DiscoveryResponse {
            version_info: version.into(),
            nonce: nonce.into(),
            type_url: url.into(),
            resources: vec![any],
            ..Default::default()
        },
        ..Default::default()
    }
}

fn ctx(age: Duration) -> StreamCtx<'static> {
    StreamCtx {
        stream: 1,
        node: Some("edge-1"),
        age,
        now: crate::protocol::now::tests::now(),
    }
}

/// A stage following `yaml` on an ADS SotW stream of node `edge-1`, and the seam it came from.
fn stage(yaml: &str) -> (FaultStage, Scenarios) {
    let scenarios = Scenarios::new();
    scenarios.set(Scenario::from_yaml(yaml).unwrap()).unwrap();
    let mut stage = FaultStage::new();
    stage.load(scenarios.current(), StreamKind::ADS_SOTW, Some("edge-1"));
    (stage, scenarios)
}

fn steps(plan: Plan<SotwResponse>) -> Vec<WireStep<SotwResponse>> {
    match plan {
        Plan::Steps(steps) => steps,
        Plan::AsIs(out) => panic!("no rule fired on {} responses", out.len()),
    }
}

fn sent(step: &WireStep<SotwResponse>) -> (&SotwResponse, Option<&FaultMark>) {
    match step {
        WireStep::Send { response, mark, .. } => (response, mark.as_ref()),
        other => panic!("not a send: {other:?}"),
    }
}

#[test]
fn without_rules_a_batch_goes_out_as_it_is() {
    let mut stage = FaultStage::new();
    stage.load(Scenarios::new().current(), StreamKind::ADS_SOTW, None);
    assert!(stage.is_idle());
    match stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", "1-1")]) {
        Plan::AsIs(out) => assert_eq!(out.len(), 1),
        Plan::Steps(steps) => panic!("no rule, yet {} steps", steps.len()),
    }
}

#[test]
fn corrupt_on_the_nth_response_only() {
    let (mut stage, scenarios) =
        stage("version: 1\nrules:\n- match: {type: cds}\n  when: {nth: 2}\n  do: {corrupt: {}}\n");
    let first = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", "1-1")]));
    assert!(sent(&first[0]).1.is_none());
    let second = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v2", "1-2")]));
    let (out, mark) = sent(&second[0]);
    assert_eq!(mark.unwrap().action, "corrupt");
    let wire = DiscoveryResponse::decode(out.to_message().encode_to_vec().as_slice()).unwrap();
    assert_eq!(wire.resources[0].value, [0x0f], "undecodable bytes");
    assert_eq!(scenarios.current().counters[0].fired(), 1);
}

#[test]
fn stale_nonce_reuses_the_previous_nonce_and_skips_without_one() {
    let (mut stage, scenarios) =
        stage("version: 1\nrules:\n- match: {type: cds}\n  do: {stale_nonce: {}}\n");
    let first = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", "1-1")]));
    assert_eq!(sent(&first[0]).0.head.nonce, "1-1");
    assert_eq!(scenarios.current().counters[0].skipped_count(), 1);
    let second = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v2", "1-2")]));
    match &second[0] {
        WireStep::Send { response, fate, .. } => {
            assert_eq!(response.head.nonce, "1-1");
            let nonce = "1-1".to_string();
            assert_eq!(fate, &Some(("1-2".into(), WireFate::Sent { nonce })));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn drop_fires_times_then_responses_flow_again() {
    let (mut stage, _s) =
        stage("version: 1\nrules:\n- match: {type: cds}\n  times: 1\n  do: {drop: {}}\n");
    let first = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", "1-1")]));
    assert!(matches!(&first[0], WireStep::Drop { target, .. } if target.nonce == "1-1"));
    assert_eq!(first.len(), 1, "nothing sent");
    let second = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v2", "1-2")]));
    assert!(sent(&second[0]).1.is_none());
}

#[test]
fn close_ends_the_plan_before_the_rest_of_the_batch() {
    let (mut stage, _s) = stage(
        "version: 1\nrules:\n- match: {type: cds}\n  do: {close: {code: UNAVAILABLE, message: bye}}\n",
    );
    let batch = vec![
        response(CLUSTER, "v1", "1-1"),
        response(ENDPOINT, "v1", "1-2"),
    ];
    let plan = steps(stage.plan(&ctx(Duration::ZERO), batch));
    assert_eq!(plan.len(), 1);
    match &plan[0] {
        WireStep::End { end, target, .. } => {
            assert_eq!(
                end,
                &StreamEnd::Close {
                    code: 14,
                    message: "bye".into()
                }
            );
            assert_eq!(target.as_ref().unwrap().nonce, "1-1");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn delay_waits_then_sends_marked() {
    let (mut stage, _s) = stage("version: 1\nrules:\n- do: {delay: 2s}\n");
    let plan = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", "1-1")]));
    assert!(matches!(plan[0], WireStep::Wait { by, .. } if by == Duration::from_secs(2)));
    match &plan[1] {
        WireStep::Send { fate, .. } => {
            let by = Duration::from_secs(2);
            assert_eq!(fate, &Some(("1-1".into(), WireFate::Delayed { by })));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn reorder_sends_a_batch_dependents_first() {
    let (mut stage, _s) = stage("version: 1\nrules:\n- do: {reorder: {}}\n");
    let single = stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", "1-1")]);
    assert!(
        sent(&steps(single)[0]).1.is_none(),
        "one response is no batch"
    );
    let batch = vec![
        response(CLUSTER, "v2", "1-2"),
        response(ENDPOINT, "v2", "1-3"),
    ];
    let plan = steps(stage.plan(&ctx(Duration::ZERO), batch));
    let urls: Vec<&str> = plan
        .iter()
        .map(|s| sent(s).0.head.type_url.as_str())
        .collect();
    assert_eq!(urls, [ENDPOINT, CLUSTER]);
}

#[test]
fn a_timed_reset_fires_at_its_age_once() {
    let (mut stage, _s) =
        stage("version: 1\nrules:\n- when: {after: 5s}\n  do: {reset: {scope: stream}}\n");
    assert_eq!(stage.deadline(), Some(Duration::from_secs(5)));
    let early: Vec<WireStep<SotwResponse>> = stage.on_timer(&ctx(Duration::from_secs(1)));
    assert!(early.is_empty());
    let due: Vec<WireStep<SotwResponse>> = stage.on_timer(&ctx(Duration::from_secs(5)));
    assert!(matches!(
        &due[0],
        WireStep::End {
            end: StreamEnd::ResetStream,
            ..
        }
    ));
    assert_eq!(stage.deadline(), None, "fired once");
    let plan = stage.plan(
        &ctx(Duration::from_secs(6)),
        vec![response(CLUSTER, "v1", "1-1")],
    );
    assert!(
        sent(&steps(plan)[0]).1.is_none(),
        "a timed rule does not fire on responses"
    );
}

#[test]
fn oversize_pads_and_the_response_still_decodes() {
    let (mut stage, _s) = stage("version: 1\nrules:\n- do: {oversize: {bytes: 100KiB}}\n");
    let plan = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", "1-1")]));
    let out = sent(&plan[0]).0;
    assert!(out.encoded_len() >= 100 << 10, "{}", out.encoded_len());
    assert_eq!(
        out.to_message().resources.len(),
        1,
        "the padding is an unknown field"
    );
}

#[test]
fn a_node_glob_applies_once_the_node_is_known() {
    let scenarios = Scenarios::new();
    let yaml = "version: 1\nrules:\n- match: {node: \"edge-*\"}\n  do: {drop: {}}\n";
    scenarios.set(Scenario::from_yaml(yaml).unwrap()).unwrap();
    let mut stage = FaultStage::new();
    stage.load(scenarios.current(), StreamKind::ADS_SOTW, None);
    assert!(stage.is_idle());
    stage.identify(StreamKind::ADS_SOTW, "core-1");
    assert!(stage.is_idle());
    stage.identify(StreamKind::ADS_SOTW, "edge-7");
    assert!(!stage.is_idle());
}

#[test]
fn per_stream_limits_firings_on_each_stream_and_times_across_streams() {
    let yaml =
        "version: 1\nrules:\n- match: {type: cds}\n  per_stream: 1\n  times: 2\n  do: {drop: {}}\n";
    let (mut first, scenarios) = stage(yaml);
    let drop = |stage: &mut FaultStage, nonce: &str| {
        let plan = stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", nonce)]);
        matches!(steps(plan)[0], WireStep::Drop { .. })
    };
    assert!(drop(&mut first, "1-1"));
    assert!(!drop(&mut first, "1-2"), "once per stream");
    let mut second = FaultStage::new();
    second.load(scenarios.current(), StreamKind::ADS_SOTW, Some("edge-1"));
    assert!(drop(&mut second, "2-1"), "a second stream has its own");
    let mut third = FaultStage::new();
    third.load(scenarios.current(), StreamKind::ADS_SOTW, Some("edge-1"));
    assert!(!drop(&mut third, "3-1"), "times: 2 is server-wide");
    assert_eq!(scenarios.current().counters[0].fired(), 2);
}

#[test]
fn a_new_scenario_starts_the_per_stream_counts_again() {
    let yaml = "version: 1\nrules:\n- match: {type: cds}\n  per_stream: 1\n  do: {drop: {}}\n";
    let (mut stage, scenarios) = stage(yaml);
    let drop = |stage: &mut FaultStage, nonce: &str| {
        let plan = stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", nonce)]);
        matches!(steps(plan)[0], WireStep::Drop { .. })
    };
    assert!(drop(&mut stage, "1-1"));
    assert!(
        !drop(&mut stage, "1-2"),
        "the first scenario's rule is spent on this stream"
    );
    // The same text installed again is a new scenario: its rule 0 has not fired here.
    scenarios.set(Scenario::from_yaml(yaml).unwrap()).unwrap();
    stage.load(scenarios.current(), StreamKind::ADS_SOTW, Some("edge-1"));
    assert!(
        drop(&mut stage, "1-3"),
        "the new scenario's rule fires once on this stream"
    );
    assert!(!drop(&mut stage, "1-4"));
}

#[test]
fn version_picks_the_response_carrying_it() {
    let (mut stage, _s) = stage("version: 1\nrules:\n- when: {version: v2}\n  do: {corrupt: {}}\n");
    let v1 = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", "1-1")]));
    assert!(sent(&v1[0]).1.is_none());
    let v2 = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v2", "1-2")]));
    assert_eq!(sent(&v2[0]).1.unwrap().action, "corrupt");
}

#[test]
fn a_scenario_installed_on_an_open_stream_counts_its_whole_history() {
    let mut stage = FaultStage::new();
    stage.load(
        Scenarios::new().current(),
        StreamKind::ADS_SOTW,
        Some("edge-1"),
    );
    let before = stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v1", "1-1")]);
    assert!(matches!(before, Plan::AsIs(_)), "no rule yet");
    let scenarios = Scenarios::new();
    let yaml =
        "version: 1\nrules:\n- match: {type: cds}\n  when: {nth: 2}\n  do: {stale_nonce: {}}\n";
    scenarios.set(Scenario::from_yaml(yaml).unwrap()).unwrap();
    stage.load(scenarios.current(), StreamKind::ADS_SOTW, Some("edge-1"));
    let second = steps(stage.plan(&ctx(Duration::ZERO), vec![response(CLUSTER, "v2", "1-2")]));
    let (out, mark) = sent(&second[0]);
    assert_eq!(
        mark.map(|m| m.action),
        Some("stale_nonce"),
        "the stream's 2nd"
    );
    assert_eq!(out.head.nonce, "1-1", "the nonce sent before the rule came");
}
