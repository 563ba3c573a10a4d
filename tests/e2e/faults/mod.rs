//! One test per fault kind (`docs/scenarios.md`): the real server (`app::start`) with a
//! scenario installed through its [`Scenarios`] seam, and what the real `xdsloop-client` does
//! under it, over loopback gRPC.

mod content;
mod docs;
mod flap;
mod grpc_recipes;
mod ledger;
mod rest;
mod stream;
mod timing;
mod withheld;

use xdsloop_client::{ClientConfig, Report, Source};
use xdsloop_server::{
    scenario::{Scenario, Scenarios},
    status::StreamStatus,
};

use crate::client_support::*;

/// The demo fixtures served with `yaml` in force.
pub async fn served_with(yaml: &str) -> Served {
    let served = Served::demo().await;
    let scenario = Scenario::from_yaml(yaml).unwrap_or_else(|e| panic!("{e}"));
    served.running.scenarios.set(scenario).unwrap();
    served
}

/// The scenario seam of `served`.
pub fn scenarios(served: &Served) -> &Scenarios {
    &served.running.scenarios
}

/// How often rule `i` fired.
pub fn fired(served: &Served, i: usize) -> u64 {
    scenarios(served).current().counters[i].fired()
}

/// A client of `source` with fast backoff, and its reports.
pub async fn client_of(
    served: &Served,
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
pub async fn server_shows<T>(
    served: &Served,
    mut probe: impl FnMut(&[StreamStatus]) -> Option<T>,
) -> T {
    let registry = &served.running.registry;
    let poll = async {
        loop {
            let mut streams = registry.streams();
            streams.extend(registry.recently_closed().into_iter().map(|c| c.stream));
            if let Some(found) = probe(&streams) {
                return found;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT, poll)
        .await
        .expect("the server shows it")
}
