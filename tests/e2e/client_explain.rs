//! `xdsloop-client --explain --lang zh`: the loop against the real server, told in the words
//! and order of the Chinese course lesson (建流 → 订阅 → 下发 → 应用 → 确认, or 拒绝 (NACK,
//! 保留旧配置); 断线 → 重连 with every type resubscribed). Each step label gets a test of its
//! own, with the Envoy call the line must name; English stays the default.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use tokio::sync::broadcast;
use xdsloop_client::ReceivedReports;
use xdsloop_client::cli::explain::Explainer;
use xdsloop_client::{Client, Report, Source};
use xdsloop_proto::type_url::CLUSTER;
use xdsloop_transcript::{Lang, Step};

use crate::client_nack::refuse_web_cluster_while;
use crate::client_support::*;

/// Narration lines, as `--explain` prints them, until `done` holds for the lines so far.
async fn narrate_until(
    explainer: &mut Explainer,
    reports: &mut broadcast::Receiver<Report>,
    lines: &mut Vec<String>,
    done: impl Fn(&[String]) -> bool,
) {
    let wait = async {
        while !done(lines) {
            let report = reports.recv().await.expect("reports flow");
            lines.extend(explainer.line(&report, SystemTime::now()));
        }
    };
    if tokio::time::timeout(WAIT, wait).await.is_err() {
        panic!("the narration never got there:\n{}", lines.join("\n"));
    }
}

/// The demo client on the real server, narrated in `lang` until every type is ACKed.
async fn synced(source: Source, lang: Lang) -> (FixtureServer, Client, Narration) {
    synced_with(source, lang, None).await
}

struct Narration {
    explainer: Explainer,
    reports: broadcast::Receiver<Report>,
    lines: Vec<String>,
}

impl Narration {
    async fn until(&mut self, done: impl Fn(&[String]) -> bool) {
        narrate_until(
            &mut self.explainer,
            &mut self.reports,
            &mut self.lines,
            done,
        )
        .await;
    }

    /// The lines from `from` on.
    fn since(&self, from: usize) -> &[String] {
        &self.lines[from..]
    }
}

async fn synced_with(
    source: Source,
    lang: Lang,
    refuse: Option<&Arc<AtomicBool>>,
) -> (FixtureServer, Client, Narration) {
    let served = FixtureServer::demo().await;
    let mut config = config(served.addr(), source.clone());
    config.received_reports = ReceivedReports::Names;
    config.validator = refuse.map(refuse_web_cluster_while);
    let (client, reports) = demo_client(config).await;
    let mut narration = Narration {
        explainer: Explainer::in_lang(source.variant(), lang),
        reports,
        lines: Vec::new(),
    };
    let ack = lang.title(Step::Ack);
    narration
        .until(|lines| {
            ["cds", "eds", "lds", "rds"]
                .iter()
                .all(|t| lines.iter().any(|l| l.contains(&format!(" {t}  → {ack}"))))
        })
        .await;
    (served, client, narration)
}

/// The first line holding every one of `parts`, or a panic showing the narration.
fn line_with<'a>(lines: &'a [String], parts: &[&str]) -> &'a str {
    lines
        .iter()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in:\n{}", lines.join("\n")))
}

fn position(lines: &[String], parts: &[&str]) -> usize {
    let found = line_with(lines, parts);
    lines.iter().position(|l| l == found).unwrap()
}

#[tokio::test]
async fn explain_zh_labels_the_new_stream_jianliu_with_establish_new_stream() {
    let (served, client, narration) = synced(Source::Ads, Lang::Zh).await;
    let line = line_with(&narration.lines, &[" ads  · 建流 "]);
    assert!(line.contains("ads-sotw #1"), "{line}");
    assert!(
        line.ends_with(
            "— Envoy: establishNewStream → onStreamEstablished（清空 nonce，为每个类型排队请求）"
        ),
        "{line}"
    );
    client.stop().await;
    drop(served);
}

#[tokio::test]
async fn explain_zh_labels_each_first_request_dingyue_with_send_discovery_request() {
    let (served, client, narration) = synced(Source::Ads, Lang::Zh).await;
    let cds = line_with(&narration.lines, &[" cds  → 订阅 "]);
    assert!(
        cds.contains(r#"v"" n"" [] (通配)"#),
        "wildcard in the lesson's word: {cds}"
    );
    assert!(
        cds.ends_with("— Envoy: queueDiscoveryRequest → sendDiscoveryRequest"),
        "{cds}"
    );
    let eds = line_with(&narration.lines, &[" eds  → 订阅 "]);
    assert!(eds.contains("[api, web]"), "endpoints by name: {eds}");
    client.stop().await;
    drop(served);
}

#[tokio::test]
async fn explain_zh_labels_a_response_xiafa_with_on_discovery_response() {
    let (served, client, narration) = synced(Source::Ads, Lang::Zh).await;
    let version = served
        .snapshot()
        .get("client-e2e", CLUSTER)
        .unwrap()
        .version
        .clone();
    let push = line_with(&narration.lines, &[" cds  ← 下发 "]);
    assert!(
        push.contains(&format!("v{version:?}")) && push.contains("[api, web]"),
        "{push}"
    );
    assert!(push.ends_with("— Envoy: onDiscoveryResponse"), "{push}");
    client.stop().await;
    drop(served);
}

#[tokio::test]
async fn explain_zh_gives_applying_yingyong_its_own_line_with_on_config_update() {
    let (served, client, narration) = synced(Source::Ads, Lang::Zh).await;
    let lines = &narration.lines;
    let apply = line_with(lines, &[" cds  · 应用 "]);
    assert!(
        apply.contains("：新增 [api, web]"),
        "what was applied: {apply}"
    );
    assert!(apply.contains("— Envoy: onConfigUpdate"), "{apply}");
    // The lesson's order: push, apply, then acknowledge.
    let push = position(lines, &[" cds  ← 下发 "]);
    let applied = position(lines, &[" cds  · 应用 "]);
    let ack = position(lines, &[" cds  → 确认 (ACK) "]);
    assert!(push < applied && applied < ack, "{}", lines.join("\n"));
    client.stop().await;
    drop(served);
}

#[tokio::test]
async fn explain_zh_labels_the_ack_queren_with_send_discovery_request_and_the_new_version() {
    let (served, client, narration) = synced(Source::Ads, Lang::Zh).await;
    let version = served
        .snapshot()
        .get("client-e2e", CLUSTER)
        .unwrap()
        .version
        .clone();
    let ack = line_with(&narration.lines, &[" cds  → 确认 (ACK) "]);
    assert!(
        ack.contains(&format!("v{version:?} n")),
        "the new version: {ack}"
    );
    assert!(
        ack.contains("sendDiscoveryRequest（version = 新版本"),
        "{ack}"
    );
    assert!(!ack.contains("error"), "no error_detail on an ACK: {ack}");
    client.stop().await;
    drop(served);
}

#[tokio::test]
async fn explain_zh_labels_a_nack_jujue_keeping_the_old_config() {
    let refuse = Arc::new(AtomicBool::new(false));
    let (served, client, mut narration) = synced_with(Source::Ads, Lang::Zh, Some(&refuse)).await;
    let old = served
        .snapshot()
        .get("client-e2e", CLUSTER)
        .unwrap()
        .version
        .clone();
    let from = narration.lines.len();
    refuse.store(true, Ordering::SeqCst);
    let edited = served
        .edit_text("clusters.yaml", |text| {
            text.replacen("connect_timeout: 0.25s", "connect_timeout: 0.5s", 1)
        })
        .await;
    let new = edited.get("client-e2e", CLUSTER).unwrap().version.clone();
    narration
        .until(|lines| lines[from..].iter().any(|l| l.contains("→ 拒绝")))
        .await;
    let lines = narration.since(from);
    let failed = line_with(lines, &[" cds  · 应用 ", "失败：", "web refused by test"]);
    assert!(
        failed.contains("— Envoy: onConfigUpdate 返回错误"),
        "{failed}"
    );
    let nack = line_with(lines, &[" cds  → 拒绝 (NACK, 保留旧配置) "]);
    assert!(
        nack.contains(&format!("v{old:?}")) && nack.contains("error 3"),
        "the old version and error_detail: {nack}"
    );
    assert!(
        nack.contains(&format!("；拒绝 v{new:?}，保留 v{old:?}")),
        "what was rejected and what is kept: {nack}"
    );
    assert!(
        nack.contains(
            "— Envoy: onConfigUpdateFailed(UpdateRejected) → sendDiscoveryRequest（带 error_detail"
        ),
        "{nack}"
    );
    client.stop().await;
    drop(served);
}

/// Stops the server, starts it again on the same port, and returns the lines from the drop to
/// the last type's resubscription.
async fn reconnected(source: Source) -> (Vec<String>, Client, FixtureServer) {
    let (served, client, mut narration) = synced(source, Lang::Zh).await;
    let from = narration.lines.len();
    let (dir, addr) = served.stop().await;
    narration
        .until(|lines| lines[from..].iter().any(|l| l.contains("断线 → 重连")))
        .await;
    let served = FixtureServer::on(dir, addr, |server| server).await;
    narration
        .until(|lines| {
            ["cds", "eds", "lds", "rds"].iter().all(|t| {
                lines[from..]
                    .iter()
                    .any(|l| l.contains(&format!(" {t}  → 重连 · 重新订阅 ")))
            })
        })
        .await;
    (narration.since(from).to_vec(), client, served)
}

#[tokio::test]
async fn explain_zh_tells_a_reconnect_as_duanxian_then_chonglian_resubscribing_every_type() {
    let (lines, client, served) = reconnected(Source::Ads).await;
    let closed = line_with(&lines, &[" ads  · 断线 "]);
    assert!(closed.contains("— Envoy: onRemoteClose"), "{closed}");
    line_with(&lines, &["· 断线 → 重连：", "s 后重试（第 1 次）"]);
    let opened = line_with(&lines, &[" ads  · 重连 · 建流 "]);
    assert!(opened.contains("ads-sotw #2"), "{opened}");
    for kind in ["cds", "eds", "lds", "rds"] {
        let again = line_with(&lines, &[&format!(" {kind}  → 重连 · 重新订阅 ")]);
        assert!(
            again.ends_with("— Envoy: onStreamEstablished 重新订阅所有类型 → sendDiscoveryRequest"),
            "{again}"
        );
        assert!(
            !again.contains(r#"v"" "#),
            "SotW resends the version it holds: {again}"
        );
    }
    client.stop().await;
    drop(served);
}

#[tokio::test]
async fn explain_zh_delta_resubscription_declares_the_versions_held() {
    let (lines, client, served) = reconnected(Source::AdsDelta).await;
    let cds = line_with(&lines, &[" cds  → 重连 · 重新订阅 "]);
    assert!(
        cds.contains(" initial [api@") && cds.contains(", web@"),
        "{cds}"
    );
    client.stop().await;
    drop(served);
}

#[tokio::test]
async fn explain_stays_english_by_default() {
    let (served, client, narration) = synced(Source::Ads, Lang::En).await;
    let ack = line_with(&narration.lines, &[" cds  → apply + ACK "]);
    assert!(
        ack.contains("; applied: added [api, web] — Envoy: onConfigUpdate"),
        "{ack}"
    );
    assert!(
        !narration
            .lines
            .iter()
            .any(|l| l.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))),
        "no Chinese in the English narration:\n{}",
        narration.lines.join("\n")
    );
    client.stop().await;
    drop(served);
}
