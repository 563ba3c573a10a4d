//! Server-wide faults through the test kit: an `outage` closes the xDS port (a connect is
//! refused, every stream ends) for its period and then serves again; `when.requested` sets
//! one off at the first request for a resource and that request gets no answer. Both are
//! counted, shown in `/status` and on the kit's fault events (what `--record` marks).

use std::{net::SocketAddr, time::Duration};
use xdsloop_server::testkit::{Builder, poll_until};

use tokio::net::TcpStream;
use xdsloop_client::{Client, ClientConfig, Interest, Source};
use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::{
    app::Placement,
    scenario::{Action, Requested, Rule, Scenario, When},
    testkit::TestServer,
};

use crate::client_support::{demo_copy, drain, store_where};
use crate::harness::{http_get, http_send};
use crate::testkit::cluster;

const WAIT: Duration = Duration::from_secs(15);

async fn client(server: &TestServer, node: &str, interest: Interest) -> Client {
    let mut config = ClientConfig::new(server.addr().to_string(), node);
    config.source = Source::Ads;
    config.backoff.initial = Duration::from_millis(50);
    config.backoff.max = Duration::from_millis(200);
    let client = Client::start(config, std::future::pending()).unwrap();
    drain(client.subscribe(CLUSTER, interest).await.unwrap());
    client
}

/// Polls `probe` (the kit's state, no event to wait on) until it holds.
async fn until(what: &str, mut probe: impl FnMut() -> bool) {
    let held = poll_until(what, WAIT, async || probe()).await;
    held.unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn an_outage_put_by_the_admin_api_refuses_connections_for_its_period_then_serves_again() {
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .admin()
        .start()
        .await
        .unwrap();
    let addr = server.addr();
    let client = client(&server, "n1", Interest::Wildcard).await;
    let first = server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    let mark = server.mark();
    let yaml = "version: 1\nrules:\n  - id: down\n    do: { outage: { for: 1500ms } }\n";
    let put = http_send(addr, "PUT", "/scenario", Some(yaml)).await;
    assert_eq!(
        put.status, 200,
        "the answer leaves before the port closes: {}",
        put.body
    );

    until("the outage began", || server.outage().is_some()).await;
    let outage = server.outage().unwrap();
    assert_eq!(
        (outage.rule.as_str(), outage.trigger.as_str()),
        ("down", "installed")
    );
    // The outage is marked as it begins, a moment before the listener goes: connect until
    // refused (the listener is closed, not answering with a stream error).
    let refused = poll_until(
        "a connect during the outage to be refused",
        WAIT,
        async || match TcpStream::connect(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    refused.await.unwrap_or_else(|e| panic!("{e}"));
    until("the client's stream ended", || {
        let closed = server.registry().recently_closed();
        closed.iter().any(|c| c.stream.id == first.stream)
    })
    .await;

    until("the outage is over", || server.last_outage().is_some()).await;
    let over = server.last_outage().unwrap();
    let lasted = over
        .ended_at
        .unwrap()
        .duration_since(over.started_at)
        .unwrap();
    assert!(
        lasted >= Duration::from_millis(1500),
        "it lasted {lasted:?}"
    );
    assert!(TcpStream::connect(addr).await.is_ok(), "it listens again");
    let again = server
        .since(mark)
        .await_ack("n1", "cds", None, WAIT)
        .await
        .unwrap();
    assert_ne!(
        again.stream, first.stream,
        "the client came back on a new stream"
    );
    assert_eq!(server.fired("down"), Some(1));
    let marked = server.fault_events();
    assert!(
        marked.iter().any(|(stream, f)| *stream == 0
            && f.mark.action == "outage"
            && &*f.mark.rule == "down"),
        "a server-wide fault event: {marked:?}"
    );
    let status = http_get(addr, "/status").await.json();
    let shown = &status["scenario"]["outage"];
    assert_eq!(shown["active"], false, "{shown:#}");
    assert_eq!(shown["rule"], "down", "{shown:#}");
    assert_eq!(shown["trigger"], "installed", "{shown:#}");
    assert_eq!(shown["count"], 1, "{shown:#}");
    assert!(shown["ended_at"].is_string(), "{shown:#}");
    assert_eq!(status["scenario"]["rules"][0]["fired"], 1, "{status:#}");
    client.stop().await;
}

fn on_request_for(name: &str, period: Duration) -> Scenario {
    let rule = Rule {
        id: "on-web".into(),
        when: When {
            requested: Some(Requested {
                type_url: CLUSTER.into(),
                name: name.into(),
            }),
            ..When::default()
        },
        action: Action::Outage { duration: period },
        ..Rule::default()
    };
    Scenario { rules: vec![rule] }
}

#[tokio::test]
async fn a_requested_outage_fires_once_at_the_first_request_for_the_name_which_gets_no_answer() {
    let server = TestServer::builder()
        .resources([cluster("api", "a"), cluster("web", "b")])
        .scenario(on_request_for("web", Duration::from_secs(1)))
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Interest::names(["api"])).await;
    let first = server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    assert_eq!(server.fired("on-web"), Some(0), "api is not web");
    assert!(server.outage().is_none());

    drain(
        client
            .subscribe(CLUSTER, Interest::names(["web"]))
            .await
            .unwrap(),
    );
    until("the request for web set off the outage", || {
        server.outage().is_some()
    })
    .await;
    let outage = server.outage().unwrap();
    assert_eq!(
        outage.trigger,
        format!("requested: cds web by node n1 on stream {}", first.stream)
    );
    assert!(
        !client.store().borrow().holds(CLUSTER, "web"),
        "the request that set it off got no answer"
    );

    // Back after the outage, the client asks for web again: it fired once, and web is served.
    store_where(&client, |s| s.holds(CLUSTER, "web")).await;
    assert_eq!(server.fired("on-web"), Some(1));
    assert!(server.last_outage().is_some() && server.outage().is_none());
    client.stop().await;
}

/// A fixture server whose admin routes have a port of their own, so `/status` answers
/// through an outage.
fn with_own_admin(dir: &tempfile::TempDir) -> Builder {
    TestServer::builder()
        .fixtures(dir.path())
        .configure(|config| config.admin = Placement::Listener("127.0.0.1:0".parse().unwrap()))
}

fn admin_addr(server: &TestServer) -> SocketAddr {
    server
        .running()
        .unwrap()
        .admin_addr
        .expect("its own admin port")
}

/// Installs `yaml` through the admin API, which must take it.
async fn put_scenario(admin: SocketAddr, yaml: &str) {
    let answer = http_send(admin, "PUT", "/scenario", Some(yaml)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

fn timed_outage(id: &str, after: Duration, period: Duration) -> Rule {
    Rule {
        id: id.into(),
        when: When {
            after: Some(after),
            ..When::default()
        },
        action: Action::Outage { duration: period },
        ..Rule::default()
    }
}

#[tokio::test]
async fn an_outage_due_while_another_lasts_is_skipped_not_fired_and_status_names_the_one_in_progress()
 {
    let dir = demo_copy();
    let server = with_own_admin(&dir)
        .scenario(Scenario {
            rules: vec![
                timed_outage("first", Duration::from_millis(200), Duration::from_secs(2)),
                timed_outage("second", Duration::from_millis(700), Duration::from_secs(2)),
            ],
        })
        .start()
        .await
        .unwrap();
    until("the first outage is over", || {
        server.last_outage().is_some()
    })
    .await;
    assert_eq!(server.last_outage().unwrap().rule, "first");
    assert!(server.outage().is_none(), "the second never began");
    let status = http_get(admin_addr(&server), "/status").await.json();
    let rules = &status["scenario"]["rules"];
    assert_eq!(
        (&rules[0]["fired"], &rules[0]["skipped"]),
        (&1.into(), &0.into()),
        "{rules:#}"
    );
    assert_eq!(
        (&rules[1]["fired"], &rules[1]["skipped"]),
        (&0.into(), &1.into()),
        "the second was not started: {rules:#}"
    );
    assert!(rules[1]["last"].is_null(), "{rules:#}");
    assert_eq!(status["scenario"]["outage"]["count"], 1, "{status:#}");
    assert_eq!(status["counters"]["faults"], 1, "{status:#}");
}

#[tokio::test]
async fn an_outage_installed_again_during_its_own_is_skipped_and_the_outage_names_its_installation()
{
    let dir = demo_copy();
    let server = with_own_admin(&dir).start().await.unwrap();
    let admin = admin_addr(&server);
    let yaml = "version: 1\nrules:\n  - id: down\n    do: { outage: { for: 2s } }\n";
    put_scenario(admin, yaml).await;
    until("the outage began", || server.outage().is_some()).await;
    put_scenario(admin, yaml).await;
    until("the second installation's rule was skipped", || {
        server.scenario().counters[0].skipped_count() == 1
    })
    .await;
    let status = http_get(admin, "/status").await.json();
    let scenario = &status["scenario"];
    assert_eq!(scenario["generation"], 2, "{scenario:#}");
    assert_eq!(scenario["rules"][0]["fired"], 0, "{scenario:#}");
    assert!(scenario["rules"][0]["last"].is_null(), "{scenario:#}");
    let outage = &scenario["outage"];
    assert_eq!(outage["active"], true, "{outage:#}");
    assert_eq!(outage["rule"], "down", "{outage:#}");
    assert_eq!(
        outage["generation"], 1,
        "set off by the first installation: {outage:#}"
    );
}

#[tokio::test]
async fn a_requested_outage_waits_for_a_name_the_stream_was_not_sent_not_the_ack_of_one_it_was() {
    for interest in [Interest::names(["web"]), Interest::Wildcard] {
        let server = TestServer::builder()
            .resources([cluster("web", "a")])
            .start()
            .await
            .unwrap();
        let client = client(&server, "n1", interest.clone()).await;
        server.await_ack("n1", "cds", None, WAIT).await.unwrap();
        server
            .set_scenario(on_request_for("web", Duration::from_secs(1)))
            .unwrap();
        let mark = server.mark();
        server.set_resources(None, [cluster("web", "b")]).unwrap();
        // The client's ACK of the new web names web (or is the wildcard's), but web is what
        // the stream already sent: nothing for the rule.
        server
            .since(mark)
            .await_ack("n1", "cds", None, WAIT)
            .await
            .unwrap();
        assert_eq!(
            server.fired("on-web"),
            Some(0),
            "{interest:?}: an ACK set it off"
        );
        assert!(server.outage().is_none(), "{interest:?}");
        client.stop().await;
    }
}

#[tokio::test]
async fn an_outage_that_cannot_bind_its_port_again_says_so_and_healthz_is_503_until_it_can() {
    let dir = demo_copy();
    let server = with_own_admin(&dir).start().await.unwrap();
    let (admin, addr) = (admin_addr(&server), server.addr());
    assert_eq!(http_get(admin, "/healthz").await.status, 200);
    let yaml = "version: 1\nrules:\n  - id: down\n    do: { outage: { for: 500ms } }\n";
    put_scenario(admin, yaml).await;
    until("the outage began", || server.outage().is_some()).await;
    // Another process takes the port while the listener is closed.
    let squatter = poll_until("the xDS port to be free", WAIT, async || {
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| e.to_string())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let health = http_get(admin, "/healthz").await;
    assert_eq!(
        health.status, 503,
        "xDS is not served during the outage: {}",
        health.body
    );
    assert!(health.body.contains("outage"), "{}", health.body);

    let failing = poll_until("the rebind to fail", WAIT, async || {
        let status = http_get(admin, "/status").await.json();
        let outage = status["scenario"]["outage"].clone();
        match outage["rebind_error"].as_str() {
            Some(_) => Ok(outage),
            None => Err(format!("{outage:#}")),
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(failing["active"], true, "{failing:#}");
    let error = failing["rebind_error"].as_str().unwrap();
    assert!(error.to_lowercase().contains("in use"), "{error}");
    let health = http_get(admin, "/healthz").await;
    assert_eq!(health.status, 503, "{}", health.body);
    assert!(
        health.body.contains("cannot be bound again"),
        "{}",
        health.body
    );

    drop(squatter);
    until("the outage is over", || server.last_outage().is_some()).await;
    assert_eq!(http_get(admin, "/healthz").await.status, 200);
    let status = http_get(admin, "/status").await.json();
    assert!(
        status["scenario"]["outage"]["rebind_error"].is_null(),
        "{status:#}"
    );
}
