//! `--record FILE` on real sessions: the client's side of the loop, read back by the same
//! binary's `transcript print`, and two recordings of one deterministic session compared with
//! `transcript diff`.

use std::path::Path;
use std::process::Command;

use xdsloop_transcript::line::{RequestBody, What};
use xdsloop_transcript::{Step, read_file};

use crate::support::{Cli, serve_demo};

/// `xdsloop-client transcript ARGS`: exit code and stdout.
fn transcript(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xdsloop-client"))
        .arg("transcript")
        .args(args)
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8(out.stdout).unwrap())
}

/// One recorded session: subscribe the demo, take its four updates, stop.
async fn record(addr: std::net::SocketAddr, path: &Path, extra: &[&str]) {
    let path = path.to_str().unwrap();
    let mut args = vec!["--record", path, "--exit-after", "4"];
    args.extend_from_slice(extra);
    let mut cli = Cli::spawn(addr, &args);
    let (_, status) = cli.finish().await;
    assert!(status.success(), "{:?}", cli.all_stderr().await);
}

#[tokio::test(flavor = "multi_thread")]
async fn record_writes_the_client_side_that_transcript_print_reads() {
    let served = serve_demo().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.jsonl");
    record(served.addr(), &path, &["--record-resources"]).await;
    let (code, printed) = transcript(&["print", path.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{printed}");
    let lines: Vec<&str> = printed.lines().collect();
    assert!(
        lines[0].starts_with("# client transcript by xdsloop-client "),
        "{printed}"
    );
    assert!(lines[0].ends_with("resource bodies recorded"), "{printed}");
    let eds = served.served_version("eds");
    for expected in [
        "cli-test     · ESTABLISHED ads-sotw peer ".to_string(),
        r#"cli-test cds → SUBSCRIBE   v"" n"" []"#.to_string(),
        format!(r#"cli-test eds ← PUSH        v"{eds}" n1-3 [api, web]"#),
        format!(r#"cli-test eds → ACK         v"{eds}" n1-3 [api, web]"#),
        "cli-test     · CLOSED      at shutdown".to_string(),
    ] {
        assert!(printed.contains(&expected), "no {expected:?} in\n{printed}");
    }

    let recorded = read_file(&path).unwrap();
    let mut pushes = Vec::new();
    let mut acks = Vec::new();
    for event in recorded.events.iter().map(|n| &n.event) {
        match &event.what {
            What::Response(r) => {
                assert!(
                    r.resources
                        .iter()
                        .all(|e| e.body.as_ref().is_some_and(|b| b["@type"] == r.type_url.0))
                );
                pushes.push(r.nonce.clone());
            }
            What::Request(r) if r.step == Step::Ack => {
                let RequestBody::Sotw { version, .. } = &r.body else {
                    panic!("SotW")
                };
                assert!(!version.is_empty());
                acks.push(r.nonce.clone());
            }
            _ => {}
        }
    }
    assert_eq!(pushes.len(), 4, "{printed}");
    assert_eq!(
        acks, pushes,
        "one ACK per push, echoing its nonce, the last one too"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_recordings_of_one_session_are_the_same_for_transcript_diff() {
    let served = serve_demo().await;
    let dir = tempfile::tempdir().unwrap();
    let [first, second, nacked] =
        ["first", "second", "nacked"].map(|n| dir.path().join(format!("{n}.jsonl")));
    for delta in [false, true] {
        let flavour: &[&str] = if delta { &["--delta"] } else { &[] };
        record(served.addr(), &first, flavour).await;
        record(served.addr(), &second, flavour).await;
        let (code, said) = transcript(&["diff", first.to_str().unwrap(), second.to_str().unwrap()]);
        assert_eq!(code, Some(0), "delta {delta}: {said}");
        assert!(said.starts_with("same: "), "{said}");
        let nack: Vec<&str> = flavour
            .iter()
            .copied()
            .chain(["--reject", "eds:web"])
            .collect();
        record(served.addr(), &nacked, &nack).await;
        let (code, said) = transcript(&["diff", first.to_str().unwrap(), nacked.to_str().unwrap()]);
        assert_eq!(
            code,
            Some(1),
            "delta {delta}: a NACK is a difference: {said}"
        );
        assert!(said.contains("eds → NACK"), "{said}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn recorded_lines_reach_the_file_while_the_client_runs() {
    let served = serve_demo().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.jsonl");
    let mut cli = Cli::spawn(served.addr(), &["--record", path.to_str().unwrap()]);
    cli.lines(4).await;
    // `tail -f` works: the ACKs are in the file while the client keeps running.
    let acks = |text: &str| text.matches(r#""step":"ack""#).count();
    let wait = async {
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if acks(&text) == 4 {
                return text;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    let text = tokio::time::timeout(std::time::Duration::from_secs(20), wait)
        .await
        .expect("the four ACKs written to the file");
    assert!(cli.child.try_wait().unwrap().is_none(), "still running");
    assert!(!text.contains(r#""kind":"close""#), "{text}");
}
