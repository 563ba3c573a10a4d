//! docs/scenarios.md and examples/scenarios/ cannot drift from the code: every scenario they
//! show loads, every transcript excerpt is what `transcript print` prints of the recording it
//! names, and every client excerpt is in the client output recorded with it.

use std::path::{Path, PathBuf};

use clap::Parser;
use xdsloop_server::scenario::Scenario;
use xdsloop_transcript::cli::{self, Args};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn docs() -> String {
    std::fs::read_to_string(root().join("docs/scenarios.md")).unwrap()
}

/// The bodies of the fenced blocks of `lang`.
fn blocks<'a>(text: &'a str, lang: &str) -> Vec<&'a str> {
    let fence = format!("```{lang}\n");
    text.split(fence.as_str())
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect()
}

#[test]
fn every_example_scenario_loads() {
    let dir = root().join("examples/scenarios");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            Scenario::from_yaml(&text).unwrap_or_else(|e| panic!("{}:{e}", path.display()));
            loaded += 1;
        }
    }
    assert_eq!(loaded, 8);
}

#[test]
fn the_schema_example_in_the_docs_loads() {
    let docs = docs();
    let files: Vec<&str> = blocks(&docs, "yaml")
        .into_iter()
        .filter(|b| b.starts_with("version: 1"))
        .collect();
    assert_eq!(files.len(), 1);
    let scenario = Scenario::from_yaml(files[0]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.rules[0].id, "corrupt-web");
}

#[test]
fn transcript_excerpts_in_the_docs_are_printed_from_the_recordings() {
    let docs = docs();
    let mut checked = 0;
    for block in blocks(&docs, "console") {
        let (command, expected) = block.split_once('\n').unwrap();
        let words: Vec<String> = command
            .strip_prefix("$ xdsloop-server ")
            .unwrap_or_else(|| panic!("not a transcript command: {command}"))
            .split(' ')
            .map(str::to_string)
            .collect();
        let mut args = Args::try_parse_from(&words).unwrap_or_else(|e| panic!("{command}: {e}"));
        match &mut args.command {
            cli::Command::Print(p) => p.file = root().join(&p.file),
            cli::Command::Diff(_) => panic!("{command}: only print is shown"),
        }
        let mut out = Vec::new();
        cli::run(&args, &mut out).unwrap_or_else(|e| panic!("{command}: {e}"));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected,
            "docs/scenarios.md: `{command}`"
        );
        checked += 1;
    }
    assert_eq!(checked, 22, "every transcript excerpt was checked");
}

#[test]
fn client_excerpts_in_the_docs_are_from_the_recorded_runs() {
    let docs = docs();
    let dir = root().join("examples/scenarios/recorded");
    let recorded: String = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".client.txt"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut checked = 0;
    for block in blocks(&docs, "text") {
        for line in block.lines() {
            if line.starts_with("xdsloop-client:")
                || line.starts_with("2026-") && !line.contains(" WARN ")
            {
                assert!(recorded.contains(line), "not from a recorded run: {line}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "{checked} client lines checked");
}
