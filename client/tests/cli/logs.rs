//! The binary's stderr in a pipe: no colour escapes; with `--log-format json`, one JSON object
//! per line, its own connection news included.

use serde_json::Value;

use crate::support::{Cli, serve_demo};

/// `--exit-after 4` against the demo fixtures with `RUST_LOG=debug`: a run that ends by
/// itself, with the client's own news and plenty of log events on stderr.
async fn run_to_the_end(extra: &[&str]) -> Vec<String> {
    let served = serve_demo().await;
    let mut args = vec!["--exit-after", "4"];
    args.extend(extra);
    let mut cli = Cli::spawn_with_env(served.addr(), &args, &[("RUST_LOG", "debug")]);
    let (_, status) = cli.finish().await;
    assert!(status.success(), "{status}");
    let stderr = cli.all_stderr().await;
    assert!(
        stderr.iter().any(|l| l.contains("connected to")),
        "{stderr:#?}"
    );
    stderr
}

#[tokio::test(flavor = "multi_thread")]
async fn client_logs_to_a_pipe_carry_no_colour() {
    let stderr = run_to_the_end(&[]).await;
    assert!(stderr.iter().any(|l| l.contains("DEBUG")), "{stderr:#?}");
    for line in &stderr {
        assert!(!line.contains("\x1b["), "colour escape in {line:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn client_log_format_json_writes_one_object_per_line() {
    let stderr = run_to_the_end(&["--log-format", "json"]).await;
    let lines: Vec<Value> = stderr
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect();
    for line in &lines {
        for field in ["timestamp", "level", "target", "message"] {
            assert!(line[field].is_string(), "no {field} in {line}");
        }
    }
    let news = lines
        .iter()
        .find(|l| {
            l["target"] == "xdsloop_client"
                && l["message"].as_str().unwrap().starts_with("connected to")
        })
        .expect("the client's own connection news, as JSON");
    assert_eq!(news["level"], "INFO");
    assert!(
        lines.iter().any(|l| l["level"] == "DEBUG"),
        "log events too: {stderr:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn client_log_format_json_reports_a_fatal_error_as_json() {
    let served = serve_demo().await;
    let args = ["--log-format", "json", "--types", "nonsense"];
    let mut cli = Cli::spawn(served.addr(), &args);
    let (_, status) = cli.finish().await;
    assert_eq!(status.code(), Some(1));
    let stderr = cli.all_stderr().await;
    let raw = stderr.last().expect("an error");
    let last: Value = serde_json::from_str(raw).unwrap();
    assert_eq!(last["level"], "ERROR");
    // Key for key in the order of the log lines, as the server writes its own.
    assert!(raw.starts_with(r#"{"timestamp":""#), "{raw}");
    assert!(raw.ends_with(r#","target":"xdsloop_client"}"#), "{raw}");
    assert!(
        last["message"].as_str().unwrap().contains("nonsense"),
        "{last}"
    );
}
