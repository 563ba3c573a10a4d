//! The `xdsloop-server` binary: `--fixtures DIR` still serves (now with `--admin`), and
//! `xdsloop-server status` reads a running server's admin endpoint.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
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
    let mut child = Command::new(BIN)
        .args(["--fixtures", fixtures.to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server binary starts");
    let stdout = child.stdout.take().unwrap();
    let (lines, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
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
            return server;
        }
    }
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

/// Issue #12 item 4: a FIFO among the fixtures used to block the reload for good, and SIGTERM
/// then never ended the process. Now the reload is rejected naming the FIFO, and SIGTERM stops
/// the server.
#[cfg(unix)]
#[test]
fn sigterm_stops_the_server_with_a_fifo_in_the_fixtures() {
    let dir = fixtures();
    let mut server = start(dir.path());
    let pipe = dir.path().join("pipe.yaml");
    let made = Command::new("mkfifo").arg(&pipe).status().unwrap();
    assert!(made.success());
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let out = status(&["--server", &server.admin, "--output", "json"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let error = doc["reload"]["error"].as_str().unwrap_or_default();
        if error.contains("pipe.yaml: not a regular file (FIFO)") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the FIFO was never rejected: {doc}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = server.child.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(sent.success());
    let deadline = std::time::Instant::now() + WAIT;
    let exit = loop {
        if let Some(exit) = server.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running {WAIT:?} after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn max_fixture_bytes_flag_sets_the_per_file_limit() {
    let dir = fixtures();
    let size = std::fs::metadata(dir.path().join("clusters.json"))
        .unwrap()
        .len();
    let out = Command::new(BIN)
        .args(["--fixtures", dir.path().to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0", "--admin", "off"])
        .args(["--max-fixture-bytes", "100"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "clusters.json: {size} bytes is over the 100 bytes limit (--max-fixture-bytes)"
        )),
        "{stderr}"
    );
}
