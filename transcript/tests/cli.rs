//! The `transcript` subcommand as a binary runs it: flags parsed by clap, real files in a
//! temp dir, the exit status each outcome maps to.

use std::path::{Path, PathBuf};

use clap::Parser;
use xdsloop_transcript::cli::{self, Args, EXIT_DIFFERENT, EXIT_UNREADABLE};

const HEADER: &str = r#"{"schema":"xdsloop.transcript.v1","kind":"header","side":"server","tool":"xdsloop-server 0.1.0","started":"2025-01-02T12:00:00Z","resources":false}"#;

/// One SotW stream: open, subscribe, push, then the client's answer; ids, times and nonces
/// from the run (`id`), the answer from `answer`.
fn recording(id: u64, answer: &str) -> String {
    let t = |s: u64| format!("2025-01-02T12:00:{:02}.{id:06}Z", s);
    let answer = match answer {
        "ack" => format!(
            r#""step":"ack","verdict":"ack","version":"v1","names":[],"nonce":"{id}-1","has_node":false"#
        ),
        _ => format!(
            r#""step":"nack","verdict":"nack","version":"","names":[],"nonce":"{id}-1","has_node":false,"error_detail":{{"code":3,"message":"cluster web: bad"}}"#
        ),
    };
    [
        HEADER.to_string(),
        format!(r#"{{"t":"{}","stream":{id},"seq":1,"kind":"open","transport":"ads-sotw","peer":"127.0.0.1:{}"}}"#, t(1), 40000 + id),
        format!(r#"{{"t":"{}","stream":{id},"seq":2,"node":"edge-1","kind":"request","dir":"in","type":"cds","step":"subscribe","verdict":"initial","version":"","names":[],"nonce":"","has_node":true}}"#, t(2)),
        format!(r#"{{"t":"{}","stream":{id},"seq":3,"node":"edge-1","kind":"response","dir":"out","type":"cds","step":"push","version":"v1","nonce":"{id}-1","resources":[{{"name":"web","version":"a1"}}],"bytes":{}}}"#, t(3), 100 + id),
        format!(r#"{{"t":"{}","stream":{id},"seq":4,"node":"edge-1","kind":"request","dir":"in","type":"cds",{answer}}}"#, t(4)),
    ]
    .join("\n")
        + "\n"
}

fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The exit status and stdout of `transcript ARGS...`.
fn transcript(args: &[&str]) -> (u8, String) {
    let args = match Args::try_parse_from(std::iter::once("transcript").chain(args.iter().copied()))
    {
        Ok(args) => args,
        Err(e) => return (e.exit_code() as u8, e.to_string()),
    };
    let mut out = Vec::new();
    match cli::run(&args, &mut out) {
        Ok(outcome) => (outcome.exit_code(), String::from_utf8(out).unwrap()),
        Err(e) => (EXIT_UNREADABLE, e.to_string()),
    }
}

#[test]
fn diff_exits_0_when_only_ids_times_ports_and_nonces_differ() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.jsonl", &recording(3, "ack"));
    let b = file(dir.path(), "b.jsonl", &recording(17, "ack"));
    let (status, out) = transcript(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(status, 0, "{out}");
    assert_eq!(
        out,
        "same: 4 lines in 2 sequences, compared per node, stream and type\n"
    );
}

#[test]
fn diff_exits_1_and_lists_the_difference_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.jsonl", &recording(3, "ack"));
    let b = file(dir.path(), "b.jsonl", &recording(3, "nack"));
    let (status, out) = transcript(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(status, EXIT_DIFFERENT, "{out}");
    let (a, b) = (a.display(), b.display());
    assert!(
        out.contains(&format!("- {a}:5  cds ← ACK         v\"v1\" n1 []\n")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "+ {b}:5  cds ← NACK        v\"\" n1 [] error 3 \"cluster web: bad\"\n"
        )),
        "{out}"
    );
}

#[test]
fn diff_exits_1_on_an_incomplete_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.jsonl", &recording(3, "ack"));
    let gap = r#"{"t":"2025-01-02T12:00:09Z","kind":"gap","lost":7}"#;
    let b = file(dir.path(), "b.jsonl", &(recording(3, "ack") + gap + "\n"));
    let (status, out) = transcript(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(status, EXIT_DIFFERENT);
    assert_eq!(
        out,
        format!(
            "{}:6: incomplete transcript: 7 events were lost while recording\n",
            b.display()
        )
    );
}

#[test]
fn diff_exits_2_on_an_unreadable_file_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.jsonl", &recording(3, "ack"));
    let broken = recording(3, "ack").replace(r#""kind":"open""#, r#""kind":"opened""#);
    let b = file(dir.path(), "b.jsonl", &broken);
    let (status, out) = transcript(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(status, EXIT_UNREADABLE);
    assert!(out.starts_with(&format!("{}:2:", b.display())), "{out}");
    assert!(out.contains("unknown variant `opened`"), "{out}");
    let missing = dir.path().join("missing.jsonl");
    let (status, out) = transcript(&["diff", a.to_str().unwrap(), missing.to_str().unwrap()]);
    assert_eq!(status, EXIT_UNREADABLE);
    assert!(out.starts_with(&missing.display().to_string()), "{out}");
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.jsonl", &recording(3, "ack"));
    let a = a.to_str().unwrap();
    let (status, out) = transcript(&["diff", a, a, "--ignore", "nonse"]);
    assert_eq!(status, EXIT_UNREADABLE);
    assert!(
        out.starts_with("--ignore \"nonse\": no line has that field"),
        "{out}"
    );
    let (status, out) = transcript(&["print", a, "--type", "cdz"]);
    assert_eq!(status, 2);
    assert!(out.contains("unknown type \"cdz\""), "{out}");
    let (status, _) = transcript(&["diff", a, a, "--ignore", "nonce"]);
    assert_eq!(status, 0);
}

#[test]
fn print_filters_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.jsonl", &recording(3, "nack"));
    let (status, out) = transcript(&[
        "print",
        a.to_str().unwrap(),
        "--kind",
        "request",
        "--node",
        "edge-*",
    ]);
    assert_eq!(status, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "# server transcript by xdsloop-server 0.1.0, started 2025-01-02T12:00:00.000Z, resource bodies not recorded",
            r#"12:00:02.000 s3 edge-1 cds ← SUBSCRIBE   v"" n"" []"#,
            r#"12:00:04.000 s3 edge-1 cds ← NACK        v"" n3-1 [] error 3 "cluster web: bad""#,
        ]
    );
}

#[test]
fn print_of_a_file_cut_mid_line_prints_the_complete_lines_then_fails() {
    let dir = tempfile::tempdir().unwrap();
    let whole = recording(3, "ack");
    // A crash mid-write: the last line stops half-way, without its newline.
    let cut = &whole[..whole.len() - 40];
    let a = file(dir.path(), "a.jsonl", cut);
    let args = Args::try_parse_from(["transcript", "print", a.to_str().unwrap()]).unwrap();
    let mut out = Vec::new();
    let error = cli::run(&args, &mut out).expect_err("a cut line is an error");
    let out = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[3].contains("cds → PUSH"), "{out}");
    let error = error.to_string();
    assert!(error.starts_with(&format!("{}:5:", a.display())), "{error}");
    assert!(error.contains("the line is cut short"), "{error}");
}

#[test]
fn print_takes_the_stream_as_its_column_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = file(dir.path(), "a.jsonl", &recording(3, "ack"));
    let a = a.to_str().unwrap();
    let (status, by_column) = transcript(&["print", a, "--stream", "s3"]);
    assert_eq!(status, 0, "{by_column}");
    assert_eq!(by_column.lines().count(), 5, "{by_column}");
    let (status, by_number) = transcript(&["print", a, "--stream", "3"]);
    assert_eq!(status, 0);
    assert_eq!(by_column, by_number);
    let (status, none) = transcript(&["print", a, "--stream", "s4"]);
    assert_eq!((status, none.lines().count()), (0, 1), "{none}");
    let (status, out) = transcript(&["print", a, "--stream", "x3"]);
    assert_eq!(status, 2);
    assert!(out.contains("s3 or 3"), "{out}");
}
