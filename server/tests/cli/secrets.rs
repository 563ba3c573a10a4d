//! Secret material in a rejected fixture shows in none of what users see.

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use crate::support::{BIN, Server, WAIT, fixtures, status};

/// A private key written where a map belongs is rejected, and its text is in
/// none of what users see: the start-up error, the reload log line, `/status`.
#[test]
fn secret_is_never_quoted_in_errors() {
    let secret_fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/invalid/secret-not-a-map.yaml");
    let secret_text = ["PRIVATE KEY", "Tk9ULUEt"];
    let shows_secret = |text: &str| secret_text.iter().any(|s| text.contains(s));

    let dir = fixtures("v1");
    let bad = dir.path().join("secret.yaml");
    std::fs::copy(&secret_fixture, &bad).unwrap();
    let out = Command::new(BIN)
        .args(["--fixtures", dir.path().to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "{stderr}");
    // The line itself is checked with every other invalid fixture (tests/e2e/harness/invalid.rs).
    assert!(stderr.contains("secret.yaml: line "), "{stderr}");
    assert!(!shows_secret(&stderr), "{stderr}");

    std::fs::remove_file(&bad).unwrap();
    let server = Server::spawn(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let addr = server.listening();
    std::fs::copy(&secret_fixture, &bad).unwrap();
    let mut seen = Vec::new();
    loop {
        let line = server.log_line().expect("the server logs the rejection");
        assert!(!shows_secret(&line), "{line}");
        let rejected = line.contains("fixtures rejected");
        seen.push(line);
        if rejected {
            break;
        }
    }
    assert!(seen.last().unwrap().contains("secret.yaml"), "{seen:?}");

    // The log line is written just before /status changes: ask until it has.
    let deadline = Instant::now() + WAIT;
    let (doc, raw) = loop {
        let json = status(&["--server", &addr, "--output", "json"]);
        let raw = String::from_utf8(json.stdout).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&raw).unwrap();
        if doc["reload"]["ok"] == false {
            break (doc, raw);
        }
        assert!(Instant::now() < deadline, "no rejection in /status: {raw}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let error = doc["reload"]["error"].as_str().unwrap();
    assert!(error.contains("tls_certificate.private_key"), "{error}");
    assert!(!shows_secret(&raw), "{raw}");
}
