//! `xdsloop-client check` against real servers: the whole suite (with `--fixtures`) passes
//! against xdsloop-server, over TLS and mTLS too; every check FAILs, with its evidence,
//! against a server broken for it (the naive double with one bug on, or xdsloop-server with
//! too small a message limit), after passing against the same double with the bug off; and
//! no check FAILs against the double making any choice the protocol allows.

mod legal;
mod naive;
mod naive_edits;
mod reach;
mod suite;

use std::{net::SocketAddr, path::Path, time::Duration};

use serde_json::Value;
use tempfile::TempDir;
use xdsloop_client::check::{self, CheckConfig, CheckReport, CheckResult, Outcome};

use crate::harness::{Bug, NaiveServer, cluster, endpoints, listener, route};

/// The report's FAIL lines, for a failure message.
pub fn fails(report: &CheckReport) -> Vec<String> {
    let failed = report
        .results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail(_)));
    failed.map(CheckResult::line).collect()
}

/// The files every check server serves: two EDS clusters with endpoints, a listener, a route.
pub fn base_files() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        ("clusters.json", vec![cluster("web"), cluster("api")]),
        (
            "endpoints.json",
            vec![endpoints("web", 8080), endpoints("api", 8081)],
        ),
        ("listeners.json", vec![listener("ingress", 10000)]),
        ("routes.json", vec![route("local", "web")]),
    ]
}

pub fn base_dir() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, resources) in base_files() {
        let text = serde_json::to_string_pretty(&resources).unwrap();
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// The suite's settings for tests: the defaults, with a shorter wait for pushes.
pub fn config(addr: SocketAddr, fixtures: Option<&Path>, only: &[&str]) -> CheckConfig {
    let mut config = CheckConfig::new(addr.to_string());
    config.fixtures = fixtures.map(Path::to_path_buf);
    config.only = only.iter().map(|s| s.to_string()).collect();
    config.timeout = Duration::from_secs(5);
    // The default: long enough that a broken server's wrong response lands inside it even on
    // a loaded machine (the FAIL runs depend on that), short enough for the whole suite.
    config.quiet = Duration::from_secs(1);
    config.push_timeout = Duration::from_secs(5);
    config
}

/// Runs the suite to the end (a whole run takes tens of seconds; bounded all the same).
pub async fn run(config: &CheckConfig) -> CheckReport {
    let run = check::run(config, std::future::pending(), |_| {});
    let report = tokio::time::timeout(Duration::from_secs(300), run).await;
    report.expect("the suite finishes").expect("the suite runs")
}

/// The result of check `id` in `report`.
pub fn result<'r>(report: &'r CheckReport, id: &str) -> &'r CheckResult {
    let found = report.results.iter().find(|r| r.check.id == id);
    found.unwrap_or_else(|| panic!("{id} did not run: {report:?}"))
}

/// Runs check `id` against the naive server twice: with the bug off it must PASS (the
/// double is fair), with `bug` on it must FAIL. Returns the FAIL evidence.
pub async fn naive_pair(bug: Bug, id: &str, edits: bool) -> String {
    for on in [false, true] {
        let dir = base_dir();
        let server = NaiveServer::start(dir.path(), if on { bug } else { Bug::None }).await;
        let fixtures = edits.then(|| dir.path());
        let report = run(&config(server.addr, fixtures, &[id])).await;
        let outcome = &result(&report, id).outcome;
        if let Some(restored) = &report.fixtures {
            assert!(restored.ok(), "{id}: directory not restored: {restored:?}");
        }
        match (on, outcome) {
            (false, Outcome::Pass(_)) => {}
            (true, Outcome::Fail(evidence)) => {
                let line = result(&report, id).line();
                assert!(line.contains(" — spec: "), "a FAIL quotes its rule: {line}");
                return evidence.clone();
            }
            _ => panic!(
                "{id} with bug {:?}: {outcome:?}",
                if on { bug } else { Bug::None }
            ),
        }
    }
    unreachable!("the second run returns or panics")
}
