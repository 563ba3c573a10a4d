use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use xdsloop_proto::discovery::{DeltaDiscoveryRequest, DiscoveryRequest};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::*;
use crate::config::SourceKind;
use crate::core::event::{ReceivedResource, Verdict};
use crate::core::request::nack_detail;
use crate::core::stream::StreamEnd;
use xdsloop_transcript::terms::Lang;

fn at() -> SystemTime {
    humantime::parse_rfc3339("2026-03-02T09:30:00.012Z").unwrap()
}

fn sotw_sent(step: Step, version: &str, nonce: &str, names: &[&str]) -> Report {
    Report::Sent(Box::new(SentReport {
        stream: 1,
        step,
        request: Outgoing::Sotw(DiscoveryRequest {
            version_info: version.into(),
            response_nonce: nonce.into(),
            resource_names: names.iter().map(|n| n.to_string()).collect(),
            type_url: CLUSTER.into(),
            ..Default::default()
        }),
    }))
}

fn pushed(version: &str, nonce: &str, names: &[&str]) -> Report {
    Report::Received(Box::new(ReceivedReport {
        stream: 1,
        mode: Variant::Sotw,
        type_url: CLUSTER.into(),
        version: version.into(),
        nonce: nonce.into(),
        resources: names
            .iter()
            .map(|n| ReceivedResource {
                name: n.to_string(),
                version: None,
                body: None,
                heartbeat: false,
            })
            .collect(),
        removed: Vec::new(),
        undecodable: 0,
        bytes: 100,
    }))
}

fn update(version: &str, nonce: &str, verdict: Verdict, added: &[&str]) -> Report {
    Report::Update(UpdateReport {
        at: at(),
        mode: Variant::Sotw,
        source: SourceKind::Ads,
        type_url: CLUSTER.into(),
        version: version.into(),
        nonce: nonce.into(),
        verdict,
        diff: Diff {
            added: added.iter().map(|n| n.to_string()).collect(),
            ..Diff::default()
        },
    })
}

fn narrate(explainer: &mut Explainer, reports: &[Report]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|r| explainer.line(r, at()))
        .collect()
}

#[test]
fn subscribe_push_and_ack_each_get_a_line_with_the_envoy_call() {
    let mut explainer = Explainer::new(Variant::Sotw);
    let lines = narrate(
        &mut explainer,
        &[
            sotw_sent(Step::Subscribe, "", "", &[]),
            pushed("v1", "1-1", &["api", "web"]),
            update("v1", "1-1", Verdict::Ack, &["api", "web"]),
            sotw_sent(Step::Ack, "v1", "1-1", &[]),
        ],
    );
    assert_eq!(
        lines,
        [
            "09:30:00.012 s1  cds  → subscribe                   v\"\" n\"\" [] (wildcard) \
             — Envoy: queueDiscoveryRequest → sendDiscoveryRequest",
            "09:30:00.012 s1  cds  ← push                        v\"v1\" n1-1 [api, web] \
             — Envoy: onDiscoveryResponse",
            "09:30:00.012 s1  cds  → apply + ACK                 v\"v1\" n1-1; applied: added \
             [api, web] — Envoy: onConfigUpdate → sendDiscoveryRequest (version = the new one)",
        ]
    );
}

#[test]
fn a_nack_says_the_error_the_version_rejected_and_the_version_kept() {
    let mut explainer = Explainer::new(Variant::Sotw);
    narrate(
        &mut explainer,
        &[
            update("v1", "1-1", Verdict::Ack, &["web"]),
            sotw_sent(Step::Ack, "v1", "1-1", &[]),
        ],
    );
    let message = "resource \"canary\": rejected by --reject cds:canary";
    let mut nack = sotw_sent(Step::Nack, "v1", "1-2", &[]);
    if let Report::Sent(sent) = &mut nack
        && let Outgoing::Sotw(r) = &mut sent.request
    {
        r.error_detail = Some(nack_detail(message));
    }
    let rejected = update("v2", "1-2", Verdict::Nack(message.into()), &[]);
    let lines = narrate(&mut explainer, &[rejected, nack]);
    assert_eq!(
        lines,
        [
            "09:30:00.012 s1  cds  → reject + NACK               v\"v1\" n1-2 error 3 \
             \"resource \\\"canary\\\": rejected by --reject cds:canary\"; rejected v\"v2\", \
             kept v\"v1\" — Envoy: onConfigUpdateFailed(UpdateRejected) → sendDiscoveryRequest \
             with error_detail"
        ]
    );
}

#[test]
fn a_delta_resubscription_declares_the_versions_it_holds() {
    let held = HashMap::from([
        ("web".to_string(), "h2".to_string()),
        ("api".to_string(), "h1".to_string()),
    ]);
    let sent = Report::Sent(Box::new(SentReport {
        stream: 2,
        step: Step::Resubscribe,
        request: Outgoing::Delta(DeltaDiscoveryRequest {
            type_url: ENDPOINT.into(),
            resource_names_subscribe: vec!["api".into(), "web".into()],
            initial_resource_versions: held,
            ..Default::default()
        }),
    }));
    let line = Explainer::new(Variant::Delta).line(&sent, at()).unwrap();
    assert_eq!(
        line,
        "09:30:00.012 s2  eds  → resubscribe after reconnect n\"\" +[api, web] initial \
         [api@h1, web@h2] — Envoy: onStreamEstablished → sendDiscoveryRequest"
    );
}

#[test]
fn a_closed_stream_is_a_step_and_what_follows_is_connection_news() {
    let mut explainer = Explainer::new(Variant::Sotw);
    let stream = StreamInfo {
        id: 1,
        ordinal: 1,
        key: StreamKey::Aggregated,
    };
    let reason = "server closed the stream".to_string();
    let lines = narrate(
        &mut explainer,
        &[
            Report::StreamClosed {
                stream: stream.clone(),
                end: StreamEnd::from(reason.as_str()),
            },
            Report::Connection(ConnectionReport::StreamClosed {
                reason: reason.clone(),
            }),
            Report::Connection(ConnectionReport::BackingOff {
                delay: Duration::from_millis(500),
                attempt: 1,
            }),
            Report::StreamOpened(StreamInfo {
                id: 2,
                ordinal: 2,
                ..stream
            }),
        ],
    );
    assert_eq!(
        lines,
        [
            "09:30:00.012 s1  ads  · stream closed               server closed the stream — \
             Envoy: onRemoteClose → onEstablishmentFailure → \
             onConfigUpdateFailed(ConnectionFailure), retry with backoff",
            "09:30:00.012          · retrying in 0.5s (attempt 1)",
            "09:30:00.012 s2  ads  · stream established          ads-sotw #2 — Envoy: \
             establishNewStream → onStreamEstablished (clears nonces, queues every type)",
        ],
        "the connection news repeating the close is left out"
    );
}

#[test]
fn a_delta_nack_names_system_versions() {
    let mut explainer = Explainer::new(Variant::Delta);
    let delta = |nonce: &str, error: Option<&str>| {
        Report::Sent(Box::new(SentReport {
            stream: 1,
            step: if error.is_some() {
                Step::Nack
            } else {
                Step::Ack
            },
            request: Outgoing::Delta(DeltaDiscoveryRequest {
                type_url: CLUSTER.into(),
                response_nonce: nonce.into(),
                error_detail: error.map(nack_detail),
                ..Default::default()
            }),
        }))
    };
    let lines = narrate(
        &mut explainer,
        &[
            update("s1", "1-1", Verdict::Ack, &["web"]),
            delta("1-1", None),
            update("s2", "1-2", Verdict::Nack("bad".into()), &[]),
            delta("1-2", Some("bad")),
        ],
    );
    assert!(
        lines[0].contains(r#"n1-1; applied sv"s1": added [web] — Envoy: onConfigUpdate"#),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains(r#"n1-2 error 3 "bad"; rejected sv"s2", kept sv"s1" — Envoy:"#),
        "{}",
        lines[1]
    );
    // A DeltaDiscoveryRequest carries no version_info: the Envoy call must not say it does.
    assert!(
        lines[0].ends_with("sendDiscoveryRequest (response_nonce = the response's nonce)"),
        "{}",
        lines[0]
    );
    assert!(!lines[0].contains("version = "), "{}", lines[0]);
    let mut zh = Explainer::in_lang(Variant::Delta, Lang::Zh);
    let lines = narrate(
        &mut zh,
        &[
            update("s1", "1-1", Verdict::Ack, &["web"]),
            delta("1-1", None),
            update("s2", "1-2", Verdict::Nack("bad".into()), &[]),
            delta("1-2", Some("bad")),
        ],
    );
    let (ack, nack) = (&lines[1], &lines[3]);
    assert!(
        ack.ends_with(
            "onConfigUpdate 成功 → sendDiscoveryRequest（response_nonce = 下发的 nonce）"
        ),
        "{ack}"
    );
    assert!(
        nack.ends_with("sendDiscoveryRequest（带 error_detail，response_nonce = 下发的 nonce）"),
        "{nack}"
    );
    for line in [ack, nack] {
        let envoy = line.split("Envoy:").nth(1).unwrap();
        assert!(
            !envoy.contains("版本") && !envoy.contains("version"),
            "{line}"
        );
    }
}

#[test]
fn in_chinese_applying_has_its_own_line_between_the_push_and_the_ack() {
    let mut explainer = Explainer::in_lang(Variant::Sotw, Lang::Zh);
    let lines = narrate(
        &mut explainer,
        &[
            sotw_sent(Step::Subscribe, "", "", &[]),
            pushed("v1", "1-1", &["api", "web"]),
            update("v1", "1-1", Verdict::Ack, &["api", "web"]),
            sotw_sent(Step::Ack, "v1", "1-1", &[]),
        ],
    );
    assert_eq!(
        lines,
        [
            "09:30:00.012 s1  cds  → 订阅                        v\"\" n\"\" [] (通配) \
             — Envoy: queueDiscoveryRequest → sendDiscoveryRequest",
            "09:30:00.012 s1  cds  ← 下发                        v\"v1\" n1-1 [api, web] \
             — Envoy: onDiscoveryResponse",
            "09:30:00.012 s1  cds  · 应用                        v\"v1\" n1-1：新增 [api, web] \
             — Envoy: onConfigUpdate（解码为 DecodedResource，应用到运行时对象）",
            "09:30:00.012 s1  cds  → 确认 (ACK)                  v\"v1\" n1-1 — Envoy: \
             onConfigUpdate 成功 → sendDiscoveryRequest（version = 新版本，nonce = 下发的 nonce）",
        ],
        "CJK characters take two columns: the details line up with the English ones"
    );
}

#[test]
fn in_chinese_a_failed_apply_then_a_nack_keeping_the_old_config() {
    let mut explainer = Explainer::in_lang(Variant::Sotw, Lang::Zh);
    narrate(
        &mut explainer,
        &[
            pushed("v1", "1-1", &["web"]),
            update("v1", "1-1", Verdict::Ack, &["web"]),
            sotw_sent(Step::Ack, "v1", "1-1", &[]),
        ],
    );
    let mut nack = sotw_sent(Step::Nack, "v1", "1-2", &[]);
    if let Report::Sent(sent) = &mut nack
        && let Outgoing::Sotw(r) = &mut sent.request
    {
        r.error_detail = Some(nack_detail("bad"));
    }
    let rejected = update("v2", "1-2", Verdict::Nack("bad".into()), &[]);
    let lines = narrate(&mut explainer, &[rejected, nack]);
    assert_eq!(
        lines,
        [
            "09:30:00.012 s1  cds  · 应用                        v\"v2\" n1-2 失败：bad \
             — Envoy: onConfigUpdate 返回错误（第 4 步失败 → 回 NACK）",
            "09:30:00.012 s1  cds  → 拒绝 (NACK, 保留旧配置)     v\"v1\" n1-2 error 3 \"bad\"；\
             拒绝 v\"v2\"，保留 v\"v1\" — Envoy: onConfigUpdateFailed(UpdateRejected) → \
             sendDiscoveryRequest（带 error_detail，version 仍是旧版本）",
        ]
    );
}

#[test]
fn in_chinese_a_reconnect_is_duanxian_then_chonglian() {
    let mut explainer = Explainer::in_lang(Variant::Sotw, Lang::Zh);
    let stream = StreamInfo {
        id: 1,
        ordinal: 1,
        key: StreamKey::Aggregated,
    };
    let reason = "server closed the stream".to_string();
    let lines = narrate(
        &mut explainer,
        &[
            Report::StreamOpened(stream.clone()),
            Report::StreamClosed {
                stream: stream.clone(),
                end: StreamEnd::from(reason.as_str()),
            },
            Report::Connection(ConnectionReport::StreamClosed { reason }),
            Report::Connection(ConnectionReport::BackingOff {
                delay: Duration::from_millis(500),
                attempt: 1,
            }),
            Report::StreamOpened(StreamInfo {
                id: 2,
                ordinal: 2,
                ..stream
            }),
        ],
    );
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert!(lines[0].contains(" ads  · 建流 "), "{}", lines[0]);
    assert!(lines[1].contains(" ads  · 断线 "), "{}", lines[1]);
    assert!(lines[1].contains("— Envoy: onRemoteClose"), "{}", lines[1]);
    assert_eq!(
        lines[2],
        "09:30:00.012          · 断线 → 重连：0.5s 后重试（第 1 次）"
    );
    assert!(
        lines[3].contains(" s2  ads  · 重连 · 建流 "),
        "{}",
        lines[3]
    );
    assert!(lines[3].contains("ads-sotw #2"), "{}", lines[3]);
}
