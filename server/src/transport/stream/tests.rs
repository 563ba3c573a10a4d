use std::time::Duration;

use tokio_stream::wrappers::ReceiverStream;
use xdsloop_proto::{discovery::DiscoveryResponse, type_url::CLUSTER};

use super::*;
use crate::{
    admin::registry::{Registry, StreamKind},
    faults::scenario::{Action, Match, Rule, Scenario, Scenarios, When},
    protocol::facts::Capture,
    protocol::request::SotwRequest,
    protocol::sotw::SotwStream,
    protocol::ttl,
    test_support::{snapshot, sotw},
};

type Requests = mpsc::Sender<Result<SotwRequest, Status>>;
type Responses = mpsc::Receiver<Result<crate::protocol::response::SotwResponse, Status>>;

struct Harness {
    source: watch::Sender<Arc<Snapshot>>,
    scenarios: Scenarios,
    requests: Requests,
    responses: Responses,
    registry: Registry,
    task: tokio::task::JoinHandle<()>,
    _stop: watch::Sender<bool>,
}

fn clusters(version: u32) -> Arc<Snapshot> {
    let v = version.to_string();
    snapshot(u64::from(version), &[(CLUSTER, &[("c1", v.as_str())])])
}

fn start() -> Harness {
    start_with(Registry::new())
}

fn start_with(registry: Registry) -> Harness {
    start_from(registry, clusters(0))
}

fn start_from(registry: Registry, snapshot: Arc<Snapshot>) -> Harness {
    start_limited(registry, snapshot, usize::MAX)
}

/// A stream whose gRPC encoding limit is `limit` bytes.
fn start_limited(registry: Registry, snapshot: Arc<Snapshot>, limit: usize) -> Harness {
    let tap = Tap::open(&registry, StreamKind::ADS_SOTW, None, None);
    let (source, mut snapshots) = watch::channel(snapshot);
    let machine = SotwStream::new(tap.stream(), snapshots.borrow_and_update().clone());
    let (requests, inbound) = mpsc::channel(4);
    let (outbound, responses) = mpsc::channel(OUTBOUND_CAPACITY);
    let (stop, shutdown) = watch::channel(false);
    let scenarios = Scenarios::new();
    let feeds = Feeds {
        snapshots,
        shutdown,
        max_message_bytes: limit,
        scenarios: scenarios.subscribe(),
        max_request_bytes: usize::MAX,
    };
    let inbound = ReceiverStream::new(inbound);
    let kit = StreamKit {
        kind: StreamKind::ADS_SOTW,
        tap,
        judge: Judge::off(),
        faults: FaultStage::new(),
        opened: std::time::Instant::now(),
        kill: Default::default(),
        max_message_bytes: limit,
        server: Default::default(),
    };
    let task = tokio::spawn(run(machine, inbound, feeds, outbound, kit));
    Harness {
        source,
        scenarios,
        requests,
        responses,
        registry,
        task,
        _stop: stop,
    }
}

async fn recv(responses: &mut Responses) -> DiscoveryResponse {
    let next = tokio::time::timeout(Duration::from_secs(5), responses.recv()).await;
    next.expect("a response in time")
        .expect("open")
        .expect("ok")
        .to_message()
}

#[tokio::test]
async fn latest_wins_a_slow_stream_gets_the_newest_snapshot_not_a_queue() {
    let mut h = start();
    h.requests
        .send(Ok(sotw(CLUSTER, &[], "", "").into()))
        .await
        .unwrap();
    recv(&mut h.responses).await;
    // The client reads nothing while 100 reloads happen.
    for version in 1..=100 {
        h.source.send_replace(clusters(version));
        tokio::task::yield_now().await;
    }
    let newest = clusters(100).base[CLUSTER].version.clone();
    let mut received = 0;
    loop {
        received += 1;
        if recv(&mut h.responses).await.version_info == newest {
            break;
        }
    }
    // The bounded channel, the one send in flight, then straight to the newest.
    assert!(
        received <= OUTBOUND_CAPACITY + 2,
        "{received} responses queued"
    );
}

#[tokio::test]
async fn a_vanished_client_ends_its_stream_and_leaves_the_registry() {
    let h = start();
    assert_eq!(h.registry.len(), 1);
    drop(h.responses);
    let ended = tokio::time::timeout(Duration::from_secs(5), h.task).await;
    ended.expect("the loop ends").unwrap();
    assert!(h.registry.is_empty());
}

#[tokio::test]
async fn with_timelines_off_and_nobody_listening_nothing_is_built_but_all_is_counted() {
    let registry = Registry::with_timeline_depth(0);
    let mut h = start_with(registry.clone());
    let tap = Tap::open(&registry, StreamKind::ADS_SOTW, None, None);
    assert_eq!(tap.capture(), None, "no ring, no listener: build nothing");
    drop(tap);
    h.requests
        .send(Ok(sotw(CLUSTER, &[], "", "").into()))
        .await
        .unwrap();
    let first = recv(&mut h.responses).await;
    let ack = sotw(CLUSTER, &[], &first.version_info, &first.nonce);
    h.requests.send(Ok(ack.into())).await.unwrap();
    // A stream publishes before it sends: once this is answered, the ACK was counted.
    let endpoints = sotw(xdsloop_proto::type_url::ENDPOINT, &["e"], "", "");
    h.requests.send(Ok(endpoints.into())).await.unwrap();
    recv(&mut h.responses).await;
    assert_eq!(registry.counters().acks, 1);
    drop(h.requests);
    let ended = tokio::time::timeout(Duration::from_secs(5), h.task).await;
    ended.expect("the loop ends").unwrap();
    assert_eq!(registry.counters().responses, 2, "all counted by the end");
    let closed = registry.recently_closed();
    assert!(closed.iter().all(|s| s.stream.recent.is_empty()));
    let listener = registry.bus().listen(Capture::Full);
    let tap = Tap::open(&registry, StreamKind::ADS_SOTW, None, None);
    assert_eq!(
        tap.capture(),
        Some(Capture::Full),
        "a listener wants everything"
    );
    drop((tap, listener));
}

/// One cluster with a TTL of `ttl`.
fn ttl_cluster(ttl: Duration) -> Arc<Snapshot> {
    let resource = xdsloop_proto::Resource {
        type_url: CLUSTER.into(),
        name: "c1".into(),
        bytes: bytes::Bytes::from_static(b"c1"),
        version: "1".into(),
        ttl: Some(ttl),
    };
    let resources = [("c1".to_string(), Arc::new(resource))].into();
    let types = crate::snapshot::TypeResources::new(resources, None);
    Arc::new(Snapshot {
        generation: 1,
        base: [(CLUSTER.to_string(), Arc::new(types))].into(),
        overlays: Default::default(),
    })
}

/// The next response event on the bus (the tap's view of the wire).
async fn next_response(
    listener: &mut crate::admin::registry::bus::Listener,
) -> crate::protocol::facts::ResponseFacts {
    loop {
        let received = tokio::time::timeout(Duration::from_secs(5), listener.recv()).await;
        if let crate::admin::registry::bus::Received::Event(event) = received.expect("an event")
            && let crate::tap::What::Response(facts) = &event.what
        {
            return (**facts).clone();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn s15_the_loop_sends_a_heartbeat_when_the_machine_says_and_the_tap_sees_it() {
    let registry = Registry::new();
    let mut listener = registry.bus().listen(Capture::Bodies);
    let mut h = start_from(registry.clone(), ttl_cluster(Duration::from_secs(6)));
    let mut first = sotw(CLUSTER, &[], "", "");
    let features = [ttl::RESOURCE_IN_SOTW, ttl::SUPPORTS_TTL].map(String::from);
    first.node.as_mut().unwrap().client_features = features.to_vec();
    h.requests.send(Ok(first.into())).await.unwrap();
    let pushed = recv(&mut h.responses).await;
    assert!(!next_response(&mut listener).await.heartbeat);
    let acked_at = tokio::time::Instant::now();
    let ack = sotw(CLUSTER, &[], &pushed.version_info, &pushed.nonce);
    h.requests.send(Ok(ack.into())).await.unwrap();
    let beat = recv(&mut h.responses).await;
    assert_eq!(beat.version_info, pushed.version_info);
    assert_ne!(beat.nonce, pushed.nonce);
    let waited = tokio::time::Instant::now() - acked_at;
    assert_eq!(
        waited,
        Duration::from_secs(2),
        "a third of the TTL after the ACK, on the paused clock"
    );
    let seen = next_response(&mut listener).await;
    assert!(seen.heartbeat, "the tap tells a heartbeat from a push");
    assert_eq!(seen.nonce.as_ref(), beat.nonce);
    let names: Vec<_> = seen
        .resources
        .items
        .iter()
        .map(|(n, _)| n.as_ref())
        .collect();
    assert_eq!(names, ["c1"], "the resources it keeps alive");
    assert!(seen.bodies.is_none(), "a heartbeat carries no resource");
    let sent_at = tokio::time::Instant::now();
    let again = recv(&mut h.responses).await;
    assert_ne!(again.nonce, beat.nonce);
    assert_eq!(
        tokio::time::Instant::now() - sent_at,
        Duration::from_secs(2),
        "the next heartbeat follows an unanswered one a third of the TTL later"
    );
}

#[tokio::test]
async fn a_scenario_installed_with_a_snapshot_change_applies_to_its_push() {
    // `select!` takes one of two ready changes at random (the snapshot's far more often):
    // several streams make a loop that loads the scenario after the push fail here.
    for attempt in 0..6 {
        let mut h = start();
        h.requests
            .send(Ok(sotw(CLUSTER, &[], "", "").into()))
            .await
            .unwrap();
        recv(&mut h.responses).await;
        let close = Rule {
            id: "maintenance".into(),
            selector: Match {
                type_url: Some(CLUSTER.into()),
                ..Default::default()
            },
            when: When {
                nth: Some(2),
                ..Default::default()
            },
            action: Action::Close {
                code: tonic::Code::Unavailable as i32,
                message: "maintenance".into(),
            },
            ..Default::default()
        };
        // Both change while the loop waits: it wakes with the two ready.
        h.scenarios.set(Scenario { rules: vec![close] }).unwrap();
        h.source.send_replace(clusters(1));
        let next = tokio::time::timeout(Duration::from_secs(5), h.responses.recv()).await;
        let ended = next.expect("an answer in time").expect("open");
        let status = ended.map(|r| r.to_message().version_info).unwrap_err();
        assert_eq!(
            (status.code(), status.message()),
            (tonic::Code::Unavailable, "maintenance"),
            "attempt {attempt}: the push is the 2nd CDS response, closed by the rule"
        );
    }
}

/// The unpadded response is under the limit, so the check before the fault stage passes it:
/// the padded one is what the client gets OUT_OF_RANGE for, and the log must say so.
#[tokio::test]
async fn a_response_padded_past_the_limit_is_logged() {
    let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || LogWriter(writer.clone()))
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut h = start_limited(Registry::new(), clusters(0), 64 * 1024);
    let rule = Rule {
        id: "big".into(),
        action: Action::Oversize { bytes: 1 << 20 },
        ..Rule::default()
    };
    h.scenarios.set(Scenario { rules: vec![rule] }).unwrap();
    h.requests
        .send(Ok(sotw(CLUSTER, &[], "", "").into()))
        .await
        .unwrap();
    recv(&mut h.responses).await;
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(
        text.contains("response larger than --max-message-bytes") && text.contains("limit=65536"),
        "{text}"
    );
}

#[derive(Clone)]
struct LogWriter(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
