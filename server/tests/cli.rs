//! The `xdsloop-server` binary: `--fixtures DIR` still serves (now with `--admin`), and
//! `xdsloop-server status` reads a running server's admin endpoint.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_xdsloop-server");
const WAIT: Duration = Duration::from_secs(20);

/// A server process, killed when dropped.
struct Server {
    child: Child,
    admin: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(fixtures: &Path) -> Server {
    spawn(fixtures, Stdio::null()).0
}

/// Starts the server; with `stderr` piped, its log lines come out of the receiver.
fn spawn(fixtures: &Path, stderr: Stdio) -> (Server, mpsc::Receiver<String>) {
    let mut child = Command::new(BIN)
        .args(["--fixtures", fixtures.to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("the server binary starts");
    let rx = lines(child.stdout.take().unwrap());
    let log = match child.stderr.take() {
        Some(stderr) => lines(stderr),
        None => mpsc::channel().1,
    };
    let mut server = Server {
        child,
        admin: String::new(),
    };
    loop {
        let line = rx
            .recv_timeout(WAIT)
            .expect("the server prints its admin address");
        if let Some(rest) = line.strip_prefix("admin: http://") {
            server.admin = rest.split('/').next().unwrap().to_string();
            return (server, log);
        }
    }
}

/// The lines of a child's output, read on a thread.
fn lines(output: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

fn status(args: &[&str]) -> std::process::Output {
    Command::new(BIN).arg("status").args(args).output().unwrap()
}

fn fixtures() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let cluster = r#"[{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        "name": "web", "connect_timeout": "1s"}]"#;
    std::fs::write(dir.path().join("clusters.json"), cluster).unwrap();
    dir
}

#[test]
fn status_subcommand_reads_a_running_server() {
    let dir = fixtures();
    let server = start(dir.path());
    let table = status(&["--server", &server.admin]);
    assert!(table.status.success(), "{table:?}");
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.starts_with("snapshot  generation 1 · 1 resources · cds "),
        "{text}"
    );
    assert!(text.contains("\nno open streams\n"), "{text}");

    let json = status(&["--server", &server.admin, "--output", "json"]);
    assert!(json.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["schema"], "xdsloop.status.v1");
    assert_eq!(doc["snapshot"]["types"][0]["type"], "cds");
}

#[test]
fn status_subcommand_fails_clearly_without_a_server() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap().to_string();
    drop(free);
    let out = status(&["--server", &addr]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(&addr), "{stderr}");
}

#[test]
fn serving_still_requires_fixtures() {
    let out = Command::new(BIN).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("--fixtures"), "{stderr}");
}

/// Issue #12 item 9: a private key written where a map belongs is rejected, and its text is in
/// none of what users see: the start-up error, the reload log line, `/status`.
#[test]
fn secret_is_never_quoted_in_errors() {
    let secret_fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/invalid/secret-not-a-map.yaml");
    let secret_text = ["PRIVATE KEY", "Tk9ULUEt"];
    let shows_secret = |text: &str| secret_text.iter().any(|s| text.contains(s));

    let dir = fixtures();
    let bad = dir.path().join("secret.yaml");
    std::fs::copy(&secret_fixture, &bad).unwrap();
    let out = Command::new(BIN)
        .args(["--fixtures", dir.path().to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0", "--admin", "off"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("secret.yaml: line 7, column "), "{stderr}");
    assert!(!shows_secret(&stderr), "{stderr}");

    std::fs::remove_file(&bad).unwrap();
    let (server, log) = spawn(dir.path(), Stdio::piped());
    std::fs::copy(&secret_fixture, &bad).unwrap();
    let mut seen = Vec::new();
    loop {
        let line = log
            .recv_timeout(WAIT)
            .expect("the server logs the rejection");
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
        let json = status(&["--server", &server.admin, "--output", "json"]);
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
