//! `xdsloop-client check` against real servers: the whole suite (with `--fixtures`) passes
//! against xdsloop-server, over TLS and mTLS too; each fault of the naive double FAILs exactly
//! the checks whose sentences it breaks, the whole set asserted; and no check FAILs against
//! the double making any choice the protocol allows, each check PASSing against one of them.

mod faults;
mod legal;
mod reach;
mod suite;

use std::{net::SocketAddr, path::Path, time::Duration};

use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::Semaphore;
use xdsloop_client::check::{self, CheckConfig, CheckReport, CheckResult, Outcome};
use xdsloop_proto::type_url;

use crate::harness::{cluster, endpoints, route};

/// The report's FAIL lines, for a failure message.
pub(crate) fn fails(report: &CheckReport) -> Vec<String> {
    let failed = report
        .results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail(_)));
    failed.flat_map(CheckResult::lines).collect()
}

/// The ids of the checks that FAILed.
pub(crate) fn failed_ids(report: &CheckReport) -> Vec<&'static str> {
    let failed = report
        .results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail(_)));
    failed.map(|r| r.check.id).collect()
}

/// A listener whose routes come from RDS `route` over ADS.
pub(crate) fn rds_listener(name: &str, route: &str, port: u32) -> Value {
    json!({
        "@type": type_url::LISTENER, "name": name,
        "address": {"socket_address": {"address": "0.0.0.0", "port_value": port}},
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": name,
                "rds": {"route_config_name": route, "config_source": {"ads": {}}},
                "http_filters": [{"name": "envoy.filters.http.router", "typed_config":
                    {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}]}],
    })
}

/// The files every check server serves: of each type enough names for every check (three
/// listeners and clusters, so that two named ones differ from the wildcard's set; two routes
/// and endpoints), the listeners pointing at the routes, the clusters at the endpoints.
pub(crate) fn base_files() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "clusters.json",
            vec![cluster("web"), cluster("api"), cluster("db")],
        ),
        (
            "endpoints.json",
            vec![endpoints("web", 8080), endpoints("api", 8081)],
        ),
        (
            "listeners.json",
            vec![
                rds_listener("ingress", "local", 10000),
                rds_listener("admin", "admin", 10001),
                rds_listener("metrics", "local", 10002),
            ],
        ),
        (
            "routes.json",
            vec![route("local", "web"), route("admin", "api")],
        ),
    ]
}

pub(crate) fn base_dir() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, resources) in base_files() {
        let text = serde_json::to_string_pretty(&resources).unwrap();
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// The suite's settings for tests: shorter waits than a user's (loopback, a server in the same
/// process or next to it), the quiet windows long enough that a broken server's wrong
/// response lands inside them on a loaded machine.
pub(crate) fn config(addr: SocketAddr, fixtures: Option<&Path>, only: &[&str]) -> CheckConfig {
    let mut config = CheckConfig::new(addr.to_string());
    config.fixtures = fixtures.map(Path::to_path_buf);
    config.only = only.iter().map(|s| s.to_string()).collect();
    config.timeout = Duration::from_secs(3);
    config.quiet = Duration::from_millis(500);
    config.push_timeout = Duration::from_secs(5);
    config
}

/// How many whole-suite runs against doubles go at once: each mostly waits on loopback.
static RUNS: Semaphore = Semaphore::const_new(8);

/// Runs the suite to the end (bounded all the same).
pub(crate) async fn run(config: &CheckConfig) -> CheckReport {
    let _turn = RUNS.acquire().await.expect("never closed");
    let run = check::run(config, std::future::pending(), |_| {});
    let report = tokio::time::timeout(Duration::from_secs(600), run).await;
    report.expect("the suite finishes").expect("the suite runs")
}

/// The result of check `id` in `report`.
pub(crate) fn result<'r>(report: &'r CheckReport, id: &str) -> &'r CheckResult {
    let found = report.results.iter().find(|r| r.check.id == id);
    found.unwrap_or_else(|| panic!("{id} did not run: {report:?}"))
}
