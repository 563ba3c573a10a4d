//! The harness: the testkit's server on a temp copy of `fixtures/demo`, and the binary with its
//! stdout and stderr read line by line.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::ops::Deref;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;
use tokio::sync::mpsc;
use xdsloop_server::testkit::TestServer;

pub(crate) const WAIT: Duration = Duration::from_secs(20);
const QUIET: Duration = Duration::from_millis(500);
pub(crate) const NODE: &str = "cli-test";

// The `xdsloop-tests` crate has the same helper; this crate cannot depend on it (it depends
// on this one).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A temp copy of `fixtures/demo` served by the testkit (as `xdsloop-server` serves a fixture
/// directory, admin routes on the xDS port); the copy lives as long as the server.
pub(crate) struct Demo {
    pub dir: TempDir,
    pub server: TestServer,
}

impl Deref for Demo {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

pub(crate) async fn serve_demo_on(dir: TempDir, listen: SocketAddr) -> Demo {
    let server = TestServer::builder()
        .fixtures(dir.path())
        .listen(listen)
        .admin()
        .max_message_bytes(64 << 20)
        .configure(|config| config.debounce = Duration::from_millis(50))
        .start()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Demo { dir, server }
}

/// A temp copy of `fixtures/demo`, to edit before serving it.
pub(crate) fn demo_dir() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/demo"),
        dir.path(),
    );
    dir
}

pub(crate) async fn serve_demo() -> Demo {
    serve_demo_on(demo_dir(), "127.0.0.1:0".parse().unwrap()).await
}

impl Demo {
    /// The SotW version of `alias` (`cds`, ...) the CLI's node is served now.
    pub(crate) fn served_version(&self, alias: &str) -> String {
        self.server
            .version(NODE, alias)
            .expect("the demo serves the type")
    }
}

/// The binary, running; its stdout and stderr arrive line by line.
pub(crate) struct Cli {
    pub child: Child,
    stdout: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
}

fn lines(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    // Bounded: a test reads everything it asks for; the bound only caps a runaway process.
    let (tx, rx) = mpsc::channel(4096);
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Cli {
    pub(crate) fn spawn(server: SocketAddr, args: &[&str]) -> Self {
        Self::spawn_with_env(server, args, &[])
    }

    /// [`Cli::spawn`] with `envs` set and `NO_COLOR` unset.
    pub(crate) fn spawn_with_env(server: SocketAddr, args: &[&str], envs: &[(&str, &str)]) -> Self {
        let server = server.to_string();
        let all = [&["--server", &server, "--node-id", NODE], args].concat();
        Self::spawn_args(&all, envs)
    }

    /// `xdsloop-client fleet` with `args` (which name the server).
    pub(crate) fn fleet(args: &[&str]) -> Self {
        Self::spawn_args(&[&["fleet"], args].concat(), &[])
    }

    fn spawn_args(args: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_xdsloop-client"))
            .args(args)
            .env_remove("NO_COLOR")
            .envs(envs.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = lines(child.stdout.take().unwrap());
        let stderr = lines(child.stderr.take().unwrap());
        Self {
            child,
            stdout,
            stderr,
        }
    }

    /// The next stdout line; `None` once the process closed stdout.
    pub(crate) async fn line(&mut self) -> Option<String> {
        tokio::time::timeout(WAIT, self.stdout.recv())
            .await
            .expect("a line in time")
    }

    pub(crate) async fn lines(&mut self, n: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for _ in 0..n {
            lines.push(self.line().await.expect("more output"));
        }
        lines
    }

    /// Stdout lines up to and including the first one `wanted` accepts.
    pub(crate) async fn lines_until(&mut self, wanted: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self.line().await.unwrap_or_else(|| {
                panic!(
                    "stdout closed before the awaited line; it said:\n{}",
                    seen.join("\n")
                )
            });
            let done = wanted(&line);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    /// All remaining stdout, then the exit status.
    pub(crate) async fn finish(&mut self) -> (Vec<String>, std::process::ExitStatus) {
        let mut rest = Vec::new();
        while let Some(line) = self.line().await {
            rest.push(line);
        }
        (rest, self.child.wait().unwrap())
    }

    pub(crate) async fn stderr_until(&mut self, wanted: &str) -> String {
        let wait = async {
            loop {
                let line = self.stderr.recv().await.expect("stderr open");
                if line.contains(wanted) {
                    return line;
                }
            }
        };
        tokio::time::timeout(WAIT, wait)
            .await
            .unwrap_or_else(|_| panic!("stderr never said {wanted:?}"))
    }

    /// All of stderr, once the process has ended (or is ending: it closes the pipe).
    pub(crate) async fn all_stderr(&mut self) -> Vec<String> {
        let mut all = Vec::new();
        let wait = async {
            while let Some(line) = self.stderr.recv().await {
                all.push(line);
            }
        };
        tokio::time::timeout(WAIT, wait)
            .await
            .expect("stderr closed in time");
        all
    }

    /// Stdout lines arriving until it stays quiet for `QUIET`.
    pub(crate) async fn quiet_lines(&mut self) -> Vec<String> {
        let mut seen = Vec::new();
        while let Ok(Some(line)) = tokio::time::timeout(QUIET, self.stdout.recv()).await {
            seen.push(line);
        }
        seen
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `time type version=V nonce=N ACK added=[..] updated=[..] removed=[..]` → its fields.
pub(crate) fn text_fields(line: &str) -> (String, String, String, String) {
    let parts: Vec<&str> = line.split(' ').collect();
    assert!(
        humantime::parse_rfc3339(parts[0]).is_ok(),
        "time first: {line}"
    );
    let version = parts[2].strip_prefix("version=").expect(line).to_string();
    assert!(
        parts[3].starts_with("nonce=") && parts[3].len() > 6,
        "{line}"
    );
    let added = line
        .split("added=[")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .expect(line);
    (
        parts[1].to_string(),
        version,
        parts[4].to_string(),
        added.to_string(),
    )
}
