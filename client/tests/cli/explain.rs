//! `--explain` on real sessions: the narration of the first subscription, of a `--reject`
//! NACK, and of the resubscription after the server restarts, each step with its Envoy call;
//! and `--lang zh`, the same loop in the words of the course lesson xdsloop grew from.

use crate::support::{Cli, Demo, serve_demo, serve_demo_on};

/// The narration line of `step` for `kind` (`cds`, or `ads` for a stream event).
fn is_step(line: &str, kind: &str, step: &str) -> bool {
    let columns: Vec<&str> = line.split_whitespace().collect();
    columns.get(2) == Some(&kind) && line.contains(&format!(" {step} "))
}

fn position(lines: &[String], kind: &str, step: &str) -> usize {
    lines
        .iter()
        .position(|l| is_step(l, kind, step))
        .unwrap_or_else(|| panic!("no {kind} {step} line in:\n{}", lines.join("\n")))
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_narrates_the_first_subscription_push_and_ack_with_envoy_calls() {
    let served = serve_demo().await;
    let cds = served.served_version("cds");
    let mut cli = Cli::spawn(served.addr(), &["--explain"]);
    let lines = cli.lines_until(|l| is_step(l, "rds", "apply + ACK")).await;
    let at = |kind, step| position(&lines, kind, step);
    let established = &lines[at("ads", "stream established")];
    assert!(
        established.contains(" ads-sotw #1 — Envoy: establishNewStream → onStreamEstablished"),
        "{established}"
    );
    let subscribe = &lines[at("cds", "subscribe")];
    assert!(
        subscribe.contains("→ subscribe")
            && subscribe.contains(
                r#"v"" n"" [] (wildcard) — Envoy: queueDiscoveryRequest → sendDiscoveryRequest"#
            ),
        "{subscribe}"
    );
    let push = &lines[at("cds", "push")];
    assert!(
        push.contains("← push")
            && push.contains(&format!(
                r#"v"{cds}" n1-1 [api, web] — Envoy: onDiscoveryResponse"#
            )),
        "{push}"
    );
    let ack = &lines[at("cds", "apply + ACK")];
    assert!(
        ack.contains(&format!(r#"v"{cds}" n1-1; applied: added [api, web] — Envoy: onConfigUpdate → sendDiscoveryRequest"#)),
        "{ack}"
    );
    let eds = &lines[at("eds", "subscribe")];
    assert!(eds.contains(r#"v"" n"" [api, web] —"#), "{eds}");
    assert!(
        at("ads", "stream established") < at("cds", "subscribe")
            && at("cds", "subscribe") < at("cds", "push")
            && at("cds", "push") < at("cds", "apply + ACK")
            && at("cds", "apply + ACK") < at("eds", "subscribe"),
        "the loop's order, and EDS follows the clusters:\n{}",
        lines.join("\n")
    );
    assert!(
        lines[0].ends_with(&format!("· connecting to {} (attempt 1)", served.addr())),
        "connection news is part of the story: {}",
        lines[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_lang_zh_labels_the_loop_with_the_lessons_five_steps_in_its_order() {
    let served = serve_demo().await;
    let cds = served.served_version("cds");
    let mut cli = Cli::spawn(served.addr(), &["--explain", "--lang", "zh"]);
    let lines = cli.lines_until(|l| is_step(l, "rds", "确认 (ACK)")).await;
    let at = |kind, step| position(&lines, kind, step);
    let steps = [
        ("ads", "建流", "establishNewStream"),
        ("cds", "订阅", "sendDiscoveryRequest"),
        ("cds", "下发", "onDiscoveryResponse"),
        ("cds", "应用", "onConfigUpdate"),
        ("cds", "确认 (ACK)", "sendDiscoveryRequest"),
    ];
    for pair in steps.windows(2) {
        let ((k1, s1, _), (k2, s2, _)) = (pair[0], pair[1]);
        assert!(
            at(k1, s1) < at(k2, s2),
            "{s1} before {s2}:\n{}",
            lines.join("\n")
        );
    }
    for (kind, step, call) in steps {
        let line = &lines[at(kind, step)];
        let envoy = line.split(" — Envoy: ").nth(1).unwrap_or_default();
        assert!(envoy.contains(call), "{step} names {call}: {line}");
    }
    let applied = &lines[at("cds", "应用")];
    assert!(
        applied.contains(&format!(r#"v"{cds}" n1-1：新增 [api, web] — Envoy"#)),
        "{applied}"
    );
    assert!(
        lines[0].ends_with(&format!("· 连接 {}（第 1 次）", served.addr())),
        "{}",
        lines[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_narrates_a_reject_nack_and_the_old_version_kept() {
    let served = serve_demo().await;
    let before = served.served_version("cds");
    let mut cli = Cli::spawn(
        served.addr(),
        &["--explain", "--types", "cds", "--reject", "cds:canary"],
    );
    cli.lines_until(|l| is_step(l, "cds", "apply + ACK")).await;
    let clusters = served.dir.path().join("clusters.yaml");
    let mut text = std::fs::read_to_string(&clusters).unwrap();
    text += "- {\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster, name: canary, connect_timeout: 1s}\n";
    std::fs::write(&clusters, text).unwrap();
    let lines = cli
        .lines_until(|l| is_step(l, "cds", "reject + NACK"))
        .await;
    let push = &lines[position(&lines, "cds", "push")];
    assert!(push.contains("[api, canary, web]"), "{push}");
    let rejected = served.served_version("cds");
    assert_ne!(rejected, before);
    let nack = lines.last().unwrap();
    let expected = format!(
        r#"v"{before}" n1-2 error 3 "resource \"canary\": rejected by --reject cds:canary"; rejected v"{rejected}", kept v"{before}" — Envoy: onConfigUpdateFailed(UpdateRejected) → sendDiscoveryRequest with error_detail"#
    );
    assert!(
        nack.ends_with(&expected),
        "{nack}\nexpected the end: {expected}"
    );
}

async fn resubscribes_after_a_restart(delta: bool) {
    let served = serve_demo().await;
    let addr = served.addr();
    let versions = served.snapshot();
    let args: &[&str] = if delta {
        &["--explain", "--delta"]
    } else {
        &["--explain"]
    };
    let mut cli = Cli::spawn(addr, args);
    let cds = served.served_version("cds");
    cli.lines_until(|l| is_step(l, "rds", "apply + ACK")).await;
    let Demo { dir, server } = served;
    server.shutdown().await.unwrap();
    let closed = cli
        .lines_until(|l| is_step(l, "ads", "stream closed"))
        .await;
    assert!(
        closed.last().unwrap().contains(
            "— Envoy: onRemoteClose → onEstablishmentFailure → onConfigUpdateFailed(ConnectionFailure), retry with backoff"
        ),
        "{closed:?}"
    );
    let retry = cli.line().await.unwrap();
    assert!(retry.contains("· retrying in "), "{retry}");
    let _again = serve_demo_on(dir, addr).await;
    let lines = cli
        .lines_until(|l| is_step(l, "rds", "resubscribe after reconnect"))
        .await;
    let established = &lines[position(&lines, "ads", "stream established")];
    assert!(
        established.contains("s2  ads") && established.contains(" #2 — "),
        "{established}"
    );
    let resubscribe = &lines[position(&lines, "cds", "resubscribe after reconnect")];
    assert!(
        resubscribe.ends_with("— Envoy: onStreamEstablished → sendDiscoveryRequest"),
        "{resubscribe}"
    );
    if delta {
        let held = versions
            .get("cli-test", xdsloop_proto::type_url::CLUSTER)
            .unwrap();
        let initial: Vec<String> = held
            .resources
            .values()
            .map(|r| format!("{}@{}", r.name, r.version))
            .collect();
        let declared = format!(r#"n"" +[] (wildcard) initial [{}]"#, initial.join(", "));
        assert!(
            resubscribe.contains(&declared),
            "{resubscribe}\nexpected {declared}"
        );
    } else {
        let declared = format!(r#"v"{cds}" n"" [] (wildcard)"#);
        assert!(
            resubscribe.contains(&declared),
            "{resubscribe}\nexpected {declared}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_narrates_the_sotw_resubscribe_with_versions_after_a_server_restart() {
    resubscribes_after_a_restart(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_narrates_the_delta_resubscribe_with_initial_resource_versions_after_a_restart() {
    resubscribes_after_a_restart(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_narrates_per_type_streams_each_under_its_own_number() {
    let served = serve_demo().await;
    let mut cli = Cli::spawn(served.addr(), &["--explain", "--source", "delta-grpc"]);
    // The four streams run side by side: wait for every type's ACK, in whatever order.
    let acks = std::cell::Cell::new(0);
    let lines = cli
        .lines_until(|l| {
            acks.set(acks.get() + usize::from(l.contains(" → apply + ACK ")));
            acks.get() == 4
        })
        .await;
    let mut streams = Vec::new();
    for (kind, service) in [
        ("cds", "clusters"),
        ("lds", "listeners"),
        ("eds", "endpoints"),
        ("rds", "routes"),
    ] {
        let opened = &lines[position(&lines, kind, "stream established")];
        assert!(
            opened.contains(&format!(" {service}-delta #1 — ")),
            "{opened}"
        );
        let stream = opened.split_whitespace().nth(1).unwrap().to_string();
        for step in ["subscribe", "push", "apply + ACK"] {
            let line = &lines[position(&lines, kind, step)];
            assert!(
                line.contains(&format!(" {stream} ")),
                "{kind} {step} on {stream}: {line}"
            );
        }
        streams.push(stream);
    }
    streams.sort();
    streams.dedup();
    assert_eq!(streams.len(), 4, "a stream per type: {streams:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_refuses_sources_without_a_stream_and_json_output() {
    let served = serve_demo().await;
    for (args, said) in [
        (
            &["--explain", "--source", "rest"][..],
            "the rest source has none",
        ),
        (
            &["--record", "x.jsonl", "--source", "rest"][..],
            "--record follows the loop",
        ),
        (
            &["--explain", "--output", "json"][..],
            "record a transcript with --record FILE",
        ),
    ] {
        let mut cli = Cli::spawn(served.addr(), args);
        let (_, status) = cli.finish().await;
        assert!(!status.success(), "{args:?}");
        let stderr = cli.all_stderr().await.join("\n");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
}
