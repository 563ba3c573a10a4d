use super::*;
use crate::{line::Side, sample};

const HEADER: &str = r#"{"schema":"xdsloop.transcript.v1","kind":"header","side":"server","tool":"xdsloop-server 0.1.0","started":"2025-01-02T12:00:00Z","resources":false}"#;
const OPEN: &str =
    r#"{"t":"2025-01-02T12:00:01Z","stream":3,"seq":1,"kind":"open","transport":"ads-sotw"}"#;
const REQUEST: &str = r#"{"t":"2025-01-02T12:00:01Z","stream":3,"seq":2,"node":"edge-1","kind":"request","dir":"in","type":"cds","step":"subscribe","verdict":"initial","version":"","names":[],"nonce":"","has_node":true}"#;

fn error(text: &str) -> String {
    read("t.jsonl", text.as_bytes()).unwrap_err().to_string()
}

#[test]
fn a_good_file_keeps_its_line_numbers() {
    let text = format!("{HEADER}\n{OPEN}\n\n{REQUEST}\n");
    let transcript = read("t.jsonl", text.as_bytes()).unwrap();
    assert_eq!(transcript.header.side, Side::Server);
    let lines: Vec<usize> = transcript.events.iter().map(|n| n.line).collect();
    assert_eq!(lines, [2, 4], "blank lines are skipped but counted");
    assert_eq!(transcript.location(4), "t.jsonl:4");
    assert_eq!(
        transcript.stream_nodes().get(&3),
        Some(&"edge-1"),
        "the open line has no node yet; the request names it"
    );
}

#[test]
fn written_lines_read_back() {
    let mut writer = crate::LineWriter::new(Vec::new(), &sample::header(Side::Server)).unwrap();
    let now = std::time::Instant::now();
    for event in sample::one_of_each() {
        writer.write(&event, now).unwrap();
    }
    let out = writer.finish().unwrap();
    let transcript = read("t.jsonl", out.as_slice()).unwrap();
    let events: Vec<Event> = transcript.events.into_iter().map(|n| n.event).collect();
    assert_eq!(events, sample::one_of_each());
}

#[test]
fn empty_and_foreign_files_are_refused_at_line_one() {
    assert_eq!(
        error(""),
        "t.jsonl:1: empty file: a transcript starts with a header line naming its schema \
         (xdsloop.transcript.v1)"
    );
    assert_eq!(
        error("hello\n"),
        "t.jsonl:1:1: not a transcript: the first line should be its header, a JSON object \
         (expected value)"
    );
    assert_eq!(
        error(&format!("{OPEN}\n")),
        "t.jsonl:1: not a transcript: the first line has no \"schema\" (expected \
         \"xdsloop.transcript.v1\")"
    );
}

#[test]
fn unknown_schema_is_refused() {
    let v2 = r#"{"schema":"xdsloop.transcript.v2","kind":"header","side":"sideways"}"#;
    assert_eq!(
        error(&format!("{v2}\n{OPEN}\n")),
        "t.jsonl:1: unknown schema \"xdsloop.transcript.v2\": this xdsloop reads \
         \"xdsloop.transcript.v1\""
    );
    let bad_header = HEADER.replace("\"server\"", "\"sideways\"");
    let message = error(&bad_header);
    assert!(
        message.starts_with("t.jsonl:1:") && message.contains("header: unknown variant `sideways`"),
        "{message}"
    );
}

/// A deliberately broken file: each bad line is named with its number and what is wrong.
#[test]
fn bad_lines_are_named_with_file_line_and_column() {
    let cases = [
        (
            r#"{"t":"2025-01-02T12:00:01Z","stream":3,"kind":"opne"}"#,
            "t.jsonl:3:",
            "unknown variant `opne`, expected one of `open`, `request`, `response`",
        ),
        (
            r#"{"t":"2025-01-02T12:00:01Z","stream":3,"kind":"open"}"#,
            "t.jsonl:3:",
            "missing field `transport`",
        ),
        (
            r#"{"t":"yesterday","stream":3,"kind":"open","transport":"ads-sotw"}"#,
            "t.jsonl:3:",
            "time \"yesterday\"",
        ),
        (
            &REQUEST.replace("\"dir\":\"in\"", "\"dir\":\"inward\""),
            "t.jsonl:3:",
            "unknown variant `inward`, expected `in` or `out`",
        ),
        (
            &REQUEST.replace(r#""names":[],"#, ""),
            "t.jsonl:3:",
            "request without its names",
        ),
        (
            r#"{"t":"2025-01-02T12:00:01Z","stream":3,"kind":"op"#,
            "t.jsonl:3:",
            "EOF while parsing a string (the line is cut short: did the recorder stop mid-write?)",
        ),
        (HEADER, "t.jsonl:3: ", "a second header line"),
    ];
    for (line, location, message) in cases {
        let text = format!("{HEADER}\n{OPEN}\n{line}\n{REQUEST}\n");
        let error = error(&text);
        assert!(error.starts_with(location), "{error}");
        assert!(error.contains(message), "{error}");
    }
}

#[test]
fn missing_file_is_named() {
    let error = read_file(Path::new("/nonexistent/t.jsonl"))
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("/nonexistent/t.jsonl: "), "{error}");
}

#[test]
fn invalid_utf8_is_a_line_error() {
    let mut bytes = format!("{HEADER}\n").into_bytes();
    bytes.extend_from_slice(b"{\"t\":\"\xff\"}\n");
    let error = read("t.jsonl", bytes.as_slice()).unwrap_err().to_string();
    assert_eq!(error, "t.jsonl:2: not UTF-8 text");
}
