//! The harness: the server binary as a child process, killed when dropped, with its stdout and
//! stderr arriving line by line.

use std::{
    io::{BufRead, BufReader, Read},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_xdsloop-server");
pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// A server process, killed when dropped.
pub(crate) struct Server {
    pub child: Child,
    stdout: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
}

fn lines(pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

impl Server {
    /// `xdsloop-server --fixtures DIR ARGS...`, with `envs` set and `NO_COLOR` unset.
    pub(crate) fn spawn(fixtures: &Path, args: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut child = Command::new(BIN)
            .args(["--fixtures", fixtures.to_str().unwrap()])
            .args(args)
            .env_remove("NO_COLOR")
            .envs(envs.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server binary starts");
        let stdout = lines(child.stdout.take().unwrap());
        let stderr = lines(child.stderr.take().unwrap());
        Self {
            child,
            stdout,
            stderr,
        }
    }

    /// The next stdout line; `None` once the process closed stdout.
    pub(crate) fn line(&self) -> Option<String> {
        match self.stdout.recv_timeout(WAIT) {
            Ok(line) => Some(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("no stdout line within {WAIT:?}"),
        }
    }

    /// The next stderr (log) line; `None` once the process closed stderr.
    pub(crate) fn log_line(&self) -> Option<String> {
        match self.stderr.recv_timeout(WAIT) {
            Ok(line) => Some(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("no log line within {WAIT:?}"),
        }
    }

    /// The address from the first stdout line, `xdsloop-server listening on ADDR`.
    pub(crate) fn listening(&self) -> String {
        let line = self.line().expect("the server prints where it listens");
        line.strip_prefix("xdsloop-server listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string()
    }

    /// The admin address from the stdout line `admin: http://ADDR/status (...)`.
    pub(crate) fn admin(&self) -> String {
        let line = self.line().expect("the server prints its admin address");
        let rest = line
            .strip_prefix("admin: http://")
            .or_else(|| line.strip_prefix("admin: https://"))
            .unwrap_or_else(|| panic!("unexpected admin line {line:?}"));
        rest.split('/').next().unwrap().to_string()
    }

    /// Stops the process and returns everything it wrote to stderr.
    pub(crate) fn stop_and_stderr(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Killed: the pipe closes, so this ends.
        self.stderr.iter().collect()
    }

    /// Waits for the process to exit by itself; its exit code and stderr.
    pub(crate) fn exit(mut self) -> (Option<i32>, Vec<String>) {
        let status = self.child.wait().unwrap();
        (status.code(), self.stderr.iter().collect())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `xdsloop-server status ARGS...`.
pub(crate) fn status(args: &[&str]) -> std::process::Output {
    Command::new(BIN).arg("status").args(args).output().unwrap()
}

/// A temp fixture dir with cluster `web` under the explicit CDS version `version`, so a test
/// can tell which server answered.
pub(crate) fn fixtures(version: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let cluster = format!(
        r#"{{"version_info": "{version}", "resources": [
            {{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
              "name": "web", "connect_timeout": "1s"}}]}}"#
    );
    std::fs::write(dir.path().join("clusters.json"), cluster).unwrap();
    dir
}

/// The CDS version in a `/status` JSON document.
pub(crate) fn served_version(status_json: &[u8]) -> String {
    let doc: serde_json::Value = serde_json::from_slice(status_json).unwrap();
    assert_eq!(doc["schema"], "xdsloop.status.v1");
    assert_eq!(doc["snapshot"]["types"][0]["type"], "cds");
    doc["snapshot"]["types"][0]["version"]
        .as_str()
        .unwrap()
        .to_string()
}
