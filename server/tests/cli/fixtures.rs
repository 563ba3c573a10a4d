//! Fixtures that hurt, on the real binary: a FIFO must not stop SIGTERM from ending the server,
//! and `--max-fixture-bytes` sets the per-file limit.

use std::{process::Command, time::Duration};

use crate::support::{BIN, Server, WAIT, fixtures, status};

/// A FIFO among the fixtures (opening one blocks until a writer appears) is
/// a rejected reload naming it, and SIGTERM still stops the server.
#[cfg(unix)]
#[test]
fn sigterm_stops_the_server_with_a_fifo_in_the_fixtures() {
    let dir = fixtures("v1");
    let mut server = Server::spawn(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let addr = server.listening();
    let pipe = dir.path().join("pipe.yaml");
    rustix::fs::mkfifoat(rustix::fs::CWD, &pipe, rustix::fs::Mode::RUSR).unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let out = status(&["--server", &addr, "--output", "json"]);
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
    let dir = fixtures("v1");
    let size = std::fs::metadata(dir.path().join("clusters.json"))
        .unwrap()
        .len();
    let out = Command::new(BIN)
        .args(["--fixtures", dir.path().to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0", "--max-fixture-bytes", "100"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "clusters.json: {size} bytes is over the 100 bytes limit (max_fixture_bytes; the server's --max-fixture-bytes)"
        )),
        "{stderr}"
    );
}
