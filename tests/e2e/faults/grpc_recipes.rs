//! The cookbook's recipes with gRPC (docs/scenarios.md): the scenario files they run
//! (examples/scenarios/grpc/, which the interop run loads) all load, and each file the page
//! shows is the file itself, as are the bootstraps it shows, and each client line it shows is
//! in a recorded run's output (gRPC C-core's or grpc-js-xds').

use std::path::{Path, PathBuf};

use xdsloop_server::scenario::{Action, Scenario};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn blocks<'a>(text: &'a str, lang: &str) -> Vec<&'a str> {
    let fence = format!("```{lang}\n");
    text.split(fence.as_str())
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect()
}

#[test]
fn every_grpc_recipe_scenario_loads() {
    let dir = root().join("examples/scenarios/grpc");
    let mut outages = 0;
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario =
            Scenario::from_yaml(&text).unwrap_or_else(|e| panic!("{}:{e}", path.display()));
        let outage = |a: &Action| matches!(a, Action::Outage { .. });
        outages += scenario.rules.iter().filter(|r| outage(&r.action)).count();
        loaded += 1;
    }
    assert_eq!((loaded, outages), (6, 2));
}

#[test]
fn the_cookbook_shows_the_recipe_files_and_bootstraps_as_they_are() {
    let docs = std::fs::read_to_string(root().join("docs/scenarios.md")).unwrap();
    let mut shown = 0;
    for block in blocks(&docs, "yaml") {
        let Some(name) = block
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# examples/scenarios/grpc/"))
        else {
            continue;
        };
        let file = std::fs::read_to_string(root().join("examples/scenarios/grpc").join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let body = block.split_once('\n').unwrap().1;
        assert_eq!(body, file, "docs/scenarios.md shows {name} as it is");
        shown += 1;
    }
    assert_eq!(shown, 6, "every recipe file is shown");
    let mut bootstraps = 0;
    for block in blocks(&docs, "json") {
        if !block.contains("\"xds_servers\"") {
            continue;
        }
        let examples = [
            "grpc-bootstrap.json",
            "grpc-bootstrap-fallback.json",
            "grpc-bootstrap-ignore-deletion.json",
            "grpc-bootstrap-fallback-a95.json",
        ];
        let same = examples
            .iter()
            .any(|e| std::fs::read_to_string(root().join("examples").join(e)).unwrap() == block);
        assert!(
            same,
            "a bootstrap the cookbook shows is one of examples/: {block}"
        );
        bootstraps += 1;
    }
    assert!(bootstraps >= 2, "{bootstraps} bootstraps shown");
}

#[test]
fn the_client_output_the_cookbook_shows_is_from_the_recorded_runs() {
    let docs = std::fs::read_to_string(root().join("docs/scenarios.md")).unwrap();
    let dirs = ["grpc", "grpc-js"].map(|d| root().join("examples/scenarios/recorded").join(d));
    let recorded: Vec<String> = dirs
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "out"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut checked = 0;
    for block in blocks(&docs, "output") {
        for line in block.lines() {
            let call = line
                .split(' ')
                .next()
                .is_some_and(|seq| seq.parse::<u64>().is_ok());
            if call || line.starts_with("I0000 ") {
                assert!(
                    recorded.iter().any(|r| r.lines().any(|l| l == line)),
                    "not from a recorded run: {line}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "{checked} client lines checked");
}
