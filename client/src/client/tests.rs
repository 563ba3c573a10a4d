//! Watches subscribed together are synced together, whatever order the server answers in.
//! The session here is the test itself: it takes the client's commands and hands the mux
//! responses when it chooses, so the racy order is replayed exactly.

use std::time::{Instant, SystemTime};

use xdsloop_proto::discovery::{Any, DiscoveryResponse, Node};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};
use xdsloop_proto::{Codec, Format};

use super::*;
use crate::config::Variant;
use crate::transport::hub::StoreOut;

/// A client with no session task: its commands wait in `Hub::commands` for the test.
pub(super) fn client_and_hub() -> (Client, Hub) {
    let mut config = MuxConfig::new(Variant::Sotw, Node::default());
    config.follow_deps = true;
    let (commands_tx, commands) = mpsc::channel(COMMAND_QUEUE);
    let (reports, _) = broadcast::channel(REPORT_QUEUE);
    let (store_tx, store) = watch::channel(Arc::new(Store::default()));
    let (stop, stopping) = watch::channel(false);
    let client = Client::handle(
        vec![commands_tx],
        BTreeMap::new(),
        reports.clone(),
        store,
        Arc::new(stop),
        Vec::new(),
    );
    let hub = Hub {
        mux: Mux::new(config),
        commands,
        subscribers: HashMap::new(),
        reports,
        store: StoreOut::split(store_tx, 1).remove(0),
        stopping,
        callback_timeout: crate::config::DEFAULT_CALLBACK_TIMEOUT,
    };
    (client, hub)
}

/// The demo fixtures' resources of one type: what `xdsloop-server` serves the CLI tests.
fn demo(type_url: &str) -> Vec<Any> {
    let files = [
        include_str!("../../../fixtures/demo/clusters.yaml"),
        include_str!("../../../fixtures/demo/endpoints.yaml"),
        include_str!("../../../fixtures/demo/listeners.yaml"),
        include_str!("../../../fixtures/demo/routes.yaml"),
    ];
    let codec = Codec::envoy();
    files
        .iter()
        .flat_map(|text| codec.decode_fixture(text, Format::Yaml).unwrap())
        .flat_map(|doc| doc.resources)
        .filter(|r| r.type_url == type_url)
        .map(|r| r.to_any())
        .collect()
}

/// Hands the mux the demo's response for `type_url`; true if it then reported "synced".
fn answer(hub: &mut Hub, type_url: &str, nonce: &str) -> bool {
    let response = DiscoveryResponse {
        version_info: "v1".into(),
        resources: demo(type_url),
        type_url: type_url.into(),
        nonce: nonce.into(),
        ..Default::default()
    };
    hub.mux
        .on_sotw_response(response, Instant::now(), SystemTime::now());
    hub.mux.take_output().reports.contains(&Report::Synced)
}

#[tokio::test]
async fn synced_covers_every_watch_subscribed_together() {
    let (client, mut hub) = client_and_hub();
    let plan = [CLUSTER, LISTENER].map(|t| (t.to_string(), Interest::Wildcard));
    let _subscriptions = client.subscribe_all(plan).await.unwrap();
    // The session takes one command and opens the stream; the server answers CDS and then EDS
    // before the session looks at its commands again (the order in which `--dump` printed no
    // listener or routes).
    let first = hub.commands.try_recv().unwrap();
    hub.handle(first);
    hub.mux.on_stream_start(Instant::now());
    assert!(!answer(&mut hub, CLUSTER, "1"), "endpoints pending");
    assert!(
        !answer(&mut hub, ENDPOINT, "2"),
        "synced with the listeners of the same plan not yet watched"
    );
    while let Ok(command) = hub.commands.try_recv() {
        hub.handle(command);
    }
    assert!(!answer(&mut hub, LISTENER, "3"), "routes pending");
    assert!(answer(&mut hub, ROUTE, "4"));
    // What `--dump` prints at that moment.
    let held: Vec<(&str, Vec<&str>)> = hub
        .mux
        .store()
        .types()
        .map(|(url, held)| (url, held.resources.keys().map(String::as_str).collect()))
        .collect();
    let expected = vec![
        (CLUSTER, vec!["api", "web"]),
        (ENDPOINT, vec!["api", "web"]),
        (LISTENER, vec!["ingress"]),
        (ROUTE, vec!["local_route"]),
    ];
    assert_eq!(held, expected);
}

#[tokio::test]
async fn a_client_is_a_handle_the_last_clone_dropped_stops_it() {
    let (client, hub) = client_and_hub();
    let stopping = hub.stopping.clone();
    let other = client.clone();
    drop(client);
    assert!(!*stopping.borrow(), "a clone still holds it");
    assert!(format!("{other:?}").contains("handles: 1"), "{other:?}");
    drop(other);
    assert!(
        *stopping.borrow(),
        "the last handle dropped stops the sessions"
    );
}
