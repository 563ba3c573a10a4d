//! What the server writes to stderr when it is not a terminal (a file, a pipe, a CI log):
//! no colour escapes; and with `--log-format json`, one JSON object per line.

use serde_json::Value;

use crate::support::{Server, fixtures};

fn assert_no_escapes(lines: &[String]) {
    assert!(!lines.is_empty(), "the server logs something");
    for line in lines {
        assert!(!line.contains("\x1b["), "colour escape in {line:?}");
    }
}

/// Every line is a JSON object with the fields every log line has.
fn json_lines(lines: &[String]) -> Vec<Value> {
    assert!(!lines.is_empty(), "the server logs something");
    let parse = |line: &String| -> Value {
        let value: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line:?}"));
        for field in ["timestamp", "level", "target", "message"] {
            assert!(value[field].is_string(), "no {field} in {line}");
        }
        value
    };
    lines.iter().map(parse).collect()
}

#[test]
fn logs_to_a_pipe_carry_no_colour() {
    let dir = fixtures("v1");
    let server = Server::spawn(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let addr = server.listening();
    let stderr = server.stop_and_stderr();
    assert_no_escapes(&stderr);
    let listening = format!("xDS listening on {addr} (admin: http://{addr}/status)");
    assert!(stderr.iter().any(|l| l.contains(&listening)), "{stderr:#?}");
}

#[test]
fn log_format_json_writes_one_object_per_line() {
    let dir = fixtures("v1");
    let args = ["--listen", "127.0.0.1:0", "--log-format", "json"];
    let server = Server::spawn(dir.path(), &args, &[("RUST_LOG", "debug")]);
    let addr = server.listening();
    let logs = json_lines(&server.stop_and_stderr());
    let listening = logs
        .iter()
        .find(|l| l["target"] == "xdsloop_server::app")
        .expect("the listening line");
    assert_eq!(listening["level"], "INFO");
    assert_eq!(
        listening["addr"],
        addr.as_str(),
        "event fields at the top level"
    );
    let loaded = logs
        .iter()
        .find(|l| l["message"] == "fixtures loaded")
        .expect("the load line");
    assert_eq!(loaded["generation"], 1);
}

#[test]
fn log_format_json_reports_a_start_up_error_as_json() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = fixtures("v1");
    let args = ["--listen", &addr, "--log-format", "json"];
    let server = Server::spawn(dir.path(), &args, &[]);
    let (code, stderr) = server.exit();
    assert_eq!(code, Some(2));
    let logs = json_lines(&stderr);
    let last = logs.last().unwrap();
    assert_eq!(last["level"], "ERROR");
    // Key for key in the order of the log lines (`xdsloop_log` holds the client to it too).
    let raw = stderr.last().unwrap();
    assert!(raw.starts_with(r#"{"timestamp":""#), "{raw}");
    assert!(raw.ends_with(r#","target":"xdsloop_server"}"#), "{raw}");
    let message = last["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("cannot listen on {addr}")),
        "{message}"
    );
}

#[test]
fn a_deleted_fixture_directory_is_reported_by_the_server_alone() {
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("fx");
    std::fs::create_dir(&dir).unwrap();
    let source = fixtures("v1");
    std::fs::copy(
        source.path().join("clusters.json"),
        dir.join("clusters.json"),
    )
    .unwrap();
    let server = Server::spawn(&dir, &["--listen", "127.0.0.1:0"], &[]);
    server.listening();
    std::fs::remove_dir_all(&dir).unwrap();
    let mut stderr = Vec::new();
    while let Some(line) = server.log_line() {
        let reported = line.contains("fixtures rejected; still serving the last good snapshot");
        stderr.push(line);
        if reported {
            break;
        }
    }
    stderr.extend(server.stop_and_stderr());
    assert!(
        stderr
            .iter()
            .any(|l| l.contains("cannot read fixture directory")),
        "the server says the directory is gone: {stderr:#?}"
    );
    let foreign: Vec<&String> = stderr.iter().filter(|l| l.contains("notify::")).collect();
    assert!(
        foreign.is_empty(),
        "the watcher library's own lines: {foreign:#?}"
    );
}
