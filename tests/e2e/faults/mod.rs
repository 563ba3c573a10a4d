//! One test per fault kind (`docs/scenarios.md`): the testkit's server over the demo fixtures
//! with a scenario put in force by `set_scenario`, and what the real `xdsloop-client` does
//! under it, over loopback gRPC.

mod content;
mod docs;
mod flap;
mod grpc_recipes;
mod ledger;
mod refused;
mod rest;
mod stream;
mod timing;
mod withheld;

use xdsloop_client::{ClientConfig, Report, Source};
use xdsloop_server::{
    scenario::{Scenario, Scenarios},
    status::StreamStatus,
    testkit::poll_until,
};

use crate::client_support::*;

/// The demo fixtures served with `yaml` in force.
pub(crate) async fn served_with(yaml: &str) -> FixtureServer {
    let served = FixtureServer::demo().await;
    let scenario = Scenario::from_yaml(yaml).unwrap_or_else(|e| panic!("{e}"));
    served.set_scenario(scenario).unwrap();
    served
}

/// The scenario seam of `served`.
pub(crate) fn scenarios(served: &FixtureServer) -> &Scenarios {
    &served.running().expect("a fixture server").scenarios
}

/// How often rule `i` fired.
pub(crate) fn fired(served: &FixtureServer, i: usize) -> u64 {
    scenarios(served).current().counters[i].fired()
}

/// A client of `source` with fast backoff, and its reports.
pub(crate) async fn client_of(
    served: &FixtureServer,
    source: Source,
    tweak: impl FnOnce(&mut ClientConfig),
) -> (
    xdsloop_client::Client,
    tokio::sync::broadcast::Receiver<Report>,
) {
    let mut config = config(served.addr(), source);
    tweak(&mut config);
    demo_client(config).await
}

/// Polls the server's open and closed streams until `probe` finds something.
pub(crate) async fn server_shows<T>(
    served: &FixtureServer,
    mut probe: impl FnMut(&[StreamStatus]) -> Option<T>,
) -> T {
    let registry = served.registry();
    let shown = poll_until("the server to show it", WAIT, async || {
        let mut streams = registry.streams();
        streams.extend(registry.recently_closed().into_iter().map(|c| c.stream));
        probe(&streams)
    });
    shown.await.unwrap_or_else(|e| panic!("{e}"))
}
