//! Seeded random damage to the demo fixtures, one mutation at a time, on a running server with
//! a connected client: after each, the reload loop has read it (whatever it made of it), the
//! server answers, its watcher is up, and a following good edit reaches the client.

use std::{path::PathBuf, time::Instant};

use fastrand::Rng;
use xdsloop_proto::{discovery::DiscoveryResponse, type_url::ENDPOINT};
use xdsloop_server::testkit::TestServer;

use super::*;
use crate::harness::{SotwClient, http_get, within};

/// Fixed, so a failure names a mutation that can be replayed.
const SEED: u64 = 0x0012_0004_0005_0006;
const MUTATIONS: usize = 300;
/// Small, so the huge-line mutation is sometimes over it and sometimes not.
const LIMIT: u64 = 64 * 1024;

/// What one mutation leaves at a fixture's path.
enum Damage {
    Bytes(&'static str, Vec<u8>),
    Fifo,
    Deleted,
}

impl Damage {
    fn describe(&self) -> String {
        match self {
            Damage::Bytes(name, bytes) => format!("{name}, {} bytes", bytes.len()),
            Damage::Fifo => "replaced by a FIFO".to_string(),
            Damage::Deleted => "deleted".to_string(),
        }
    }
}

fn lines(text: &[u8]) -> Vec<Vec<u8>> {
    text.split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn mutate(rng: &mut Rng, original: &[u8]) -> Damage {
    let mut bytes = original.to_vec();
    let mut lines = lines(original);
    let line = rng.usize(..lines.len());
    let (name, bytes) = match rng.u8(..12) {
        0 => {
            bytes.truncate(rng.usize(..bytes.len()));
            ("truncated", bytes)
        }
        1 => {
            for _ in 0..rng.usize(1..=4) {
                let at = rng.usize(..bytes.len());
                bytes[at] ^= rng.u8(1..);
            }
            ("bytes flipped", bytes)
        }
        2 => {
            lines.remove(line);
            ("line deleted", lines.concat())
        }
        3 => {
            lines.insert(line, lines[line].clone());
            ("line duplicated", lines.concat())
        }
        4 => {
            let other = rng.usize(..lines.len());
            lines.swap(line, other);
            ("lines swapped", lines.concat())
        }
        5 => {
            let garbage: Vec<u8> = (0..rng.usize(1..64)).map(|_| rng.u8(..)).collect();
            let at = rng.usize(..=bytes.len());
            bytes.splice(at..at, garbage);
            ("garbage inserted", bytes)
        }
        6 => ("emptied", Vec::new()),
        7 => {
            let huge = format!(
                "x: \"{}\"\n",
                "y".repeat(rng.usize(1024..2 * LIMIT as usize))
            );
            lines.insert(line, huge.into_bytes());
            ("huge line", lines.concat())
        }
        8 => {
            lines[line].splice(0..0, *b"   ");
            ("indented", lines.concat())
        }
        9 => return Damage::Fifo,
        10 => return Damage::Deleted,
        _ => {
            let text = (0..rng.usize(1..400))
                .map(|_| rng.alphanumeric())
                .collect::<String>();
            ("replaced by text", text.into_bytes())
        }
    };
    Damage::Bytes(name, bytes)
}

fn apply(damage: &Damage, path: &Path) {
    match damage {
        Damage::Bytes(_, bytes) => std::fs::write(path, bytes).unwrap(),
        Damage::Fifo => {
            std::fs::remove_file(path).unwrap();
            rustix::fs::mkfifoat(rustix::fs::CWD, path, rustix::fs::Mode::RUSR).unwrap();
        }
        Damage::Deleted => std::fs::remove_file(path).unwrap(),
    }
}

/// Writes `text` as a regular file at `path`, whatever is there now (writing to a FIFO would
/// wait for a reader).
fn restore(path: &Path, text: &[u8]) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        std::fs::remove_file(path).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

fn web_ports(response: &DiscoveryResponse) -> Vec<u64> {
    let mut ports = Vec::new();
    for any in &response.resources {
        let json = Codec::envoy().to_json(ENDPOINT, &any.value).unwrap();
        if json["cluster_name"] != "web" {
            continue;
        }
        for locality in json["endpoints"].as_array().into_iter().flatten() {
            for lb in locality["lb_endpoints"].as_array().into_iter().flatten() {
                let address = &lb["endpoint"]["address"]["socket_address"];
                ports.extend(address["port_value"].as_u64());
            }
        }
    }
    ports
}

/// Waits until a reload that started after `written` has finished: it read the damage,
/// whatever it made of it.
async fn await_read(
    reloads: &mut watch::Receiver<ReloadStatus>,
    written: Instant,
    what: &str,
) -> ReloadStatus {
    let read = reloads.wait_for(|r| r.in_progress.is_none() && r.started >= written);
    within(what, read).await.expect("watcher running").clone()
}

/// Receives (and ACKs) responses until one puts `web` on `port`.
async fn await_pushed(client: &mut SotwClient, port: u64, what: &str) {
    let pushed = async {
        loop {
            let response = client.try_recv().await.expect("stream healthy");
            let response = response.expect("stream open");
            client.ack(&response, &["web"]).await;
            if web_ports(&response).contains(&port) {
                return;
            }
        }
    };
    within(&format!("the good edit after {what} to be pushed"), pushed).await;
}

/// A copy of the demo fixtures with each file's original bytes, sorted by path.
fn demo_files() -> (TempDir, Vec<(PathBuf, Vec<u8>)>) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture_set("demo"), dir.path());
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|path| (path.clone(), std::fs::read(&path).unwrap()))
        .collect();
    files.sort();
    (dir, files)
}

#[tokio::test]
async fn fuzzed_edits_never_stall_the_server() {
    let (dir, files) = demo_files();
    let endpoints = dir.path().join("endpoints.yaml");
    let endpoints_text = String::from_utf8(std::fs::read(&endpoints).unwrap()).unwrap();
    assert!(endpoints_text.contains("port_value: 8081"));

    let server = TestServer::builder()
        .fixtures(dir.path())
        .admin()
        .configure(|config| {
            config.debounce = Duration::from_millis(5);
            config.max_fixture_bytes = LIMIT;
        });
    let server = server.start().await.unwrap_or_else(|e| panic!("{e}"));
    let running = server.running().unwrap();
    let admin = running.admin_addr.unwrap();
    let mut reloads = running.reloads.clone();
    let mut client = SotwClient::connect(running.addr, "fuzz").await;
    let first = client.subscribe(ENDPOINT, &["web"]).await;
    client.ack(&first, &["web"]).await;

    let mut rng = Rng::with_seed(SEED);
    let (mut rejected, mut accepted) = (0, 0);
    for i in 0..MUTATIONS {
        let (path, original) = &files[rng.usize(..files.len())];
        let damage = mutate(&mut rng, original);
        let what = format!("mutation #{i} of {}: {}", path.display(), damage.describe());
        let written = Instant::now();
        apply(&damage, path);
        let status = await_read(&mut reloads, written, &what).await;
        if status.ok {
            accepted += 1
        } else {
            rejected += 1
        }
        assert!(status.watcher.ok, "{what}: {status:?}");
        let health = http_get(admin, "/healthz").await;
        assert_eq!(health.status, 200, "{what}: {}", health.body);

        // A good edit after it is pushed.
        let port = 20_000 + i as u64;
        restore(path, original);
        let good = endpoints_text.replace("port_value: 8081", &format!("port_value: {port}"));
        restore(&endpoints, good.as_bytes());
        await_pushed(&mut client, port, &what).await;
    }
    // Not vacuous: the damage was both rejected and (where harmless) accepted.
    assert!(
        rejected > MUTATIONS / 4 && accepted > 0,
        "{rejected} rejected, {accepted} accepted"
    );
    server.shutdown().await.unwrap();
}
