//! The `xdsloop-client` binary on real runs against the real server (in-process, over a temp
//! copy of `fixtures/demo`): its text and JSON lines, `--reject`, `--dump`, and how it reports
//! an unreachable or lost server.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::mpsc;
use xdsloop_proto::type_url::{self, CLUSTER};
use xdsloop_server::Snapshot;
use xdsloop_server::app::{self, Running};

const WAIT: Duration = Duration::from_secs(20);
const QUIET: Duration = Duration::from_millis(500);
const NODE: &str = "cli-test";

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

struct Served {
    dir: TempDir,
    running: Running,
}

async fn serve_demo_on(dir: TempDir, listen: SocketAddr) -> Served {
    let config = app::Config {
        fixtures: dir.path().into(),
        listen,
        descriptor_sets: Vec::new(),
        debounce: Duration::from_millis(50),
        max_message_bytes: 64 << 20,
        admin: None,
    };
    let running = app::start(config).await.unwrap();
    Served { dir, running }
}

async fn serve_demo() -> Served {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/demo"),
        dir.path(),
    );
    serve_demo_on(dir, "127.0.0.1:0".parse().unwrap()).await
}

impl Served {
    fn snapshot(&self) -> Arc<Snapshot> {
        self.running.snapshots.borrow().clone()
    }

    fn version(&self, alias: &str) -> String {
        let url = type_url::resolve(alias).unwrap();
        self.snapshot().get(NODE, &url).unwrap().version.clone()
    }
}

/// The binary, running; its stdout and stderr arrive line by line.
struct Cli {
    child: Child,
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
    fn spawn(server: SocketAddr, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_xdsloop-client"))
            .args(["--server", &server.to_string(), "--node-id", NODE])
            .args(args)
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
    async fn line(&mut self) -> Option<String> {
        tokio::time::timeout(WAIT, self.stdout.recv())
            .await
            .expect("a line in time")
    }

    async fn lines(&mut self, n: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for _ in 0..n {
            lines.push(self.line().await.expect("more output"));
        }
        lines
    }

    /// All remaining stdout, then the exit status.
    async fn finish(&mut self) -> (Vec<String>, std::process::ExitStatus) {
        let mut rest = Vec::new();
        while let Some(line) = self.line().await {
            rest.push(line);
        }
        (rest, self.child.wait().unwrap())
    }

    async fn stderr_until(&mut self, wanted: &str) -> String {
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

    /// Stdout lines arriving until it stays quiet for `QUIET`.
    async fn quiet_lines(&mut self) -> Vec<String> {
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
fn text_fields(line: &str) -> (String, String, String, String) {
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

#[tokio::test(flavor = "multi_thread")]
async fn text_output_has_one_line_per_update_with_version_ack_and_names() {
    let served = serve_demo().await;
    let mut cli = Cli::spawn(served.running.addr, &["--exit-after", "4"]);
    let mut lines: Vec<_> = cli.lines(4).await.iter().map(|l| text_fields(l)).collect();
    let (rest, status) = cli.finish().await;
    assert!(status.success() && rest.is_empty(), "{rest:?}");
    lines.sort();
    let expected: Vec<(String, String, String, String)> = [
        ("cds", "api,web"),
        ("eds", "api,web"),
        ("lds", "ingress"),
        ("rds", "local_route"),
    ]
    .into_iter()
    .map(|(t, names)| (t.into(), served.version(t), "ACK".into(), names.into()))
    .collect();
    assert_eq!(lines, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn json_output_is_one_object_per_line_with_the_documented_fields() {
    let served = serve_demo().await;
    let mut cli = Cli::spawn(
        served.running.addr,
        &["--delta", "--output", "json", "--exit-after", "4"],
    );
    let objects: Vec<Value> = cli
        .lines(4)
        .await
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(cli.finish().await.1.success());
    let documented = [
        "event", "time", "mode", "source", "type", "type_url", "version", "nonce", "status",
        "error", "added", "updated", "removed",
    ];
    let mut types = Vec::new();
    for object in &objects {
        let keys: Vec<&str> = object
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted = documented.to_vec();
        sorted.sort();
        assert_eq!(keys, sorted, "{object}");
        assert_eq!(
            (object["event"].as_str(), object["mode"].as_str()),
            (Some("update"), Some("delta"))
        );
        assert_eq!(object["source"], "ads-delta");
        assert_eq!(
            (object["status"].as_str(), &object["error"]),
            (Some("ACK"), &Value::Null)
        );
        assert!(!object["nonce"].as_str().unwrap().is_empty());
        let alias = object["type"].as_str().unwrap().to_string();
        assert_eq!(
            object["type_url"].as_str(),
            type_url::resolve(&alias).as_deref()
        );
        types.push((alias, object["added"].clone()));
    }
    types.sort_by(|a, b| a.0.cmp(&b.0));
    let added: Vec<String> = types.iter().map(|(t, a)| format!("{t}={a}")).collect();
    assert_eq!(
        added,
        [
            r#"cds=["api","web"]"#,
            r#"eds=["api","web"]"#,
            r#"lds=["ingress"]"#,
            r#"rds=["local_route"]"#
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reject_flag_nacks_once_and_the_server_records_it() {
    let served = serve_demo().await;
    let mut cli = Cli::spawn(served.running.addr, &["--reject", "cds:web"]);
    let mut seen = cli.lines(3).await; // CDS (NACK), LDS, RDS; EDS never follows a NACKed CDS.
    seen.extend(cli.quiet_lines().await);
    let cds: Vec<&String> = seen.iter().filter(|l| text_fields(l).0 == "cds").collect();
    assert_eq!(cds.len(), 1, "one NACK, no resend loop: {seen:#?}");
    assert!(
        cds[0].contains(" NACK (resource \"web\": rejected by --reject cds:web)"),
        "{}",
        cds[0]
    );
    assert!(!seen.iter().any(|l| text_fields(l).0 == "eds"), "{seen:#?}");
    let recorded = served
        .running
        .registry
        .streams()
        .into_iter()
        .find_map(|s| s.types.get(CLUSTER).and_then(|t| t.last_nack.clone()));
    let recorded = format!("{:?}", recorded.expect("the server recorded the NACK"));
    assert!(
        recorded.contains("rejected by --reject cds:web"),
        "{recorded}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dump_prints_the_applied_resources_and_exits() {
    let served = serve_demo().await;
    for (format, parse) in [
        (
            "text",
            (|s: &str| serde_yaml_ng::from_str::<Value>(s).unwrap()) as fn(&str) -> Value,
        ),
        ("json", |s: &str| serde_json::from_str::<Value>(s).unwrap()),
    ] {
        let mut cli = Cli::spawn(served.running.addr, &["--dump", "--output", format]);
        let (lines, status) = cli.finish().await;
        assert!(status.success());
        // Only the document: it can be piped straight into jq or yq.
        let dump = parse(&lines.join("\n"));
        let types = dump["types"].as_array().unwrap();
        let summary: Vec<String> = types
            .iter()
            .map(|t| {
                let names: Vec<&str> = t["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["name"].as_str().unwrap())
                    .collect();
                format!(
                    "{}@{}={}",
                    t["type"].as_str().unwrap(),
                    t["version"].as_str().unwrap(),
                    names.join(",")
                )
            })
            .collect();
        let expected: Vec<String> = [
            ("cds", "api,web"),
            ("eds", "api,web"),
            ("lds", "ingress"),
            ("rds", "local_route"),
        ]
        .iter()
        .map(|(t, n)| format!("{t}@{}={n}", served.version(t)))
        .collect();
        assert_eq!(summary, expected, "{format}");
        let web = &types[0]["resources"][1]["resource"];
        assert_eq!(web["@type"].as_str(), Some(CLUSTER));
        assert_eq!(web["connect_timeout"].as_str(), Some("0.250s"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_server_is_retried_with_backoff_and_reported_on_stderr() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cli = Cli::spawn(([127, 0, 0, 1], port).into(), &[]);
    cli.stderr_until("cannot connect to").await;
    cli.stderr_until("retrying in").await;
    cli.stderr_until("(attempt 2)").await;
    cli.stderr_until("(attempt 3)").await;
    assert!(
        cli.child.try_wait().unwrap().is_none(),
        "still running, not crashed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn server_loss_is_shown_on_stderr_and_the_client_reconnects() {
    let served = serve_demo().await;
    let addr = served.running.addr;
    let mut cli = Cli::spawn(addr, &[]);
    cli.lines(4).await;
    let Served { dir, running } = served;
    running.shutdown().await.unwrap();
    cli.stderr_until("stream closed").await;
    cli.stderr_until("retrying in").await;
    assert!(cli.child.try_wait().unwrap().is_none(), "no crash");
    let _again = serve_demo_on(dir, addr).await;
    cli.stderr_until(&format!("connected to {addr}")).await;
    assert!(cli.child.try_wait().unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn file_source_says_accepted_and_rejected_and_that_there_is_no_ack_channel() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("xds.json");
    let file = |version: &str| {
        serde_json::json!({
            "version_info": version,
            "resources": [{
                "@type": CLUSTER,
                "name": "web",
                "type": "STATIC",
                "connect_timeout": "1s",
            }],
        })
        .to_string()
    };
    std::fs::write(&path, file("f1")).unwrap();
    // No server: the file is the source.
    let nowhere: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let path_arg = path.to_str().unwrap();
    let args = ["--file", path_arg, "--types", "cds", "--output", "json"];
    let mut cli = Cli::spawn(nowhere, &args);
    let watching = cli.stderr_until("watching").await;
    assert!(watching.contains("no ACK channel"), "{watching}");
    let line: Value = serde_json::from_str(&cli.line().await.unwrap()).unwrap();
    assert_eq!(
        (&line["source"], &line["status"], &line["version"]),
        (
            &Value::from("file"),
            &Value::from("ACCEPTED"),
            &Value::from("f1")
        )
    );
    assert_eq!(line["added"], serde_json::json!(["web"]));
    std::fs::write(&path, "{ not json").unwrap();
    let line: Value = serde_json::from_str(&cli.line().await.unwrap()).unwrap();
    assert_eq!(line["status"], "REJECTED");
    assert!(
        line["error"].as_str().unwrap().contains("xds.json"),
        "{line}"
    );
    std::fs::write(&path, file("f2")).unwrap();
    let line: Value = serde_json::from_str(&cli.line().await.unwrap()).unwrap();
    assert_eq!(
        (&line["status"], &line["version"]),
        (&Value::from("ACCEPTED"), &Value::from("f2"))
    );
}
