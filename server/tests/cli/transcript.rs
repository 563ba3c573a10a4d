//! `xdsloop-server transcript`: the recordings in examples/transcripts compared and printed by
//! the binary, with the exit status a CI job reads.

use std::{path::PathBuf, process::Command};

use crate::support::BIN;

fn example(name: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    root.join("examples/transcripts")
        .join(name)
        .display()
        .to_string()
}

fn transcript(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN)
        .arg("transcript")
        .args(args)
        .output()
        .expect("the server binary runs");
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (out.status.code(), text(out.stdout), text(out.stderr))
}

#[test]
fn transcript_diff_exits_0_same_1_different_2_unreadable() {
    let golden = example("edge-1.jsonl");
    let (code, stdout, _) = transcript(&["diff", &golden, &example("edge-1-rerun.jsonl")]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.starts_with("same: 13 lines"), "{stdout}");

    let nack = example("edge-1-nack.jsonl");
    let (code, stdout, _) = transcript(&["diff", &golden, &nack]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("+ {nack}:13  eds ← NACK ")),
        "{stdout}"
    );

    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.jsonl");
    let text = std::fs::read_to_string(&golden)
        .unwrap()
        .replace("\"seq\":3,", "\"seq\":\"3\",");
    std::fs::write(&broken, text).unwrap();
    let broken = broken.display().to_string();
    let (code, stdout, stderr) = transcript(&["diff", &golden, &broken]);
    assert_eq!(code, Some(2));
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.starts_with(&format!("xdsloop-server transcript: {broken}:4:")),
        "{stderr}"
    );
    assert!(
        stderr.contains("invalid type: string \"3\", expected u32"),
        "{stderr}"
    );
}

#[test]
fn transcript_errors_follow_the_log_format() {
    let missing = example("missing.jsonl");
    let (code, _, stderr) = transcript(&["print", &missing, "--log-format", "json"]);
    assert_eq!(code, Some(2));
    let line: serde_json::Value = serde_json::from_str(stderr.trim()).unwrap();
    assert_eq!(line["level"], "ERROR");
    assert!(
        line["message"].as_str().unwrap().starts_with(&missing),
        "{line}"
    );
}

#[test]
fn transcript_print_filters_by_type() {
    let (code, stdout, _) = transcript(&["print", &example("edge-1.jsonl"), "--type", "rds"]);
    assert_eq!(code, Some(0));
    let steps: Vec<&str> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(5).unwrap())
        .collect();
    assert_eq!(steps, ["SUBSCRIBE", "PUSH", "ACK"], "{stdout}");
}
