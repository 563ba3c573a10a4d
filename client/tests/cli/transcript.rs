//! `xdsloop-client transcript`: the same subcommand as the server's, dispatched before the
//! client's own flags are parsed.

use std::{path::PathBuf, process::Command};

fn example(name: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    root.join("examples/transcripts")
        .join(name)
        .display()
        .to_string()
}

fn transcript(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsloop-client"))
        .arg("transcript")
        .args(args)
        .output()
        .expect("the client binary runs");
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (out.status.code(), text(out.stdout), text(out.stderr))
}

#[test]
fn transcript_diff_exit_status_tells_same_from_different() {
    let golden = example("edge-1.jsonl");
    let (code, stdout, _) = transcript(&["diff", &golden, &example("edge-1-rerun.jsonl")]);
    assert_eq!(code, Some(0), "{stdout}");
    let (code, stdout, _) = transcript(&["diff", &golden, &example("edge-1-nack.jsonl")]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("@@ edge-1#1 eds @@"), "{stdout}");
}

#[test]
fn transcript_errors_name_the_subcommand_and_exit_2() {
    let missing = example("missing.jsonl");
    let (code, _, stderr) = transcript(&["print", &missing]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with(&format!("xdsloop-client transcript: {missing}: ")),
        "{stderr}"
    );
    let (code, _, stderr) = transcript(&["diff", &missing]);
    assert_eq!(code, Some(2), "a usage error");
    assert!(
        stderr.contains("Usage: xdsloop-client transcript diff"),
        "{stderr}"
    );
}
