//! `fleet --report FILE` where FILE cannot be written: refused before any node connects, and a
//! write that fails at the end of a run still leaves the run's summary.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use crate::support::{Cli, serve_demo};

/// A run of 2 nodes for 3 s against `server`, its report to `report`.
fn fleet_to(server: &str, report: &Path) -> Cli {
    Cli::fleet(&[
        "--server",
        server,
        "--nodes",
        "2",
        "--duration",
        "3",
        "--progress",
        "0",
        "--report",
        &report.display().to_string(),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn fleet_refuses_a_report_path_it_cannot_write_before_any_node_connects() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file.txt");
    std::fs::write(&file, "not a directory").unwrap();
    let cases = [
        (dir.path().join("missing").join("run.json"), "No such file"),
        (file.join("run.json"), "Not a directory"),
        (dir.path().to_path_buf(), "is a directory"),
    ];
    for (path, why) in cases {
        // Anything listening would see the nodes' connections; this listener counts them.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let server = listener.local_addr().unwrap().to_string();
        let mut cli = fleet_to(&server, &path);
        let (stdout, status) = cli.finish().await;
        let stderr = cli.all_stderr().await.join("\n");
        let name = path.display().to_string();
        let accepted = listener.accept().map(|(_, from)| from);
        assert!(
            matches!(&accepted, Err(e) if e.kind() == ErrorKind::WouldBlock),
            "{name}: a node connected ({accepted:?}) before the report's path was checked"
        );
        assert_eq!(status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("--report {name}: cannot write the report there"))
                && stderr.contains(why)
                && stderr.contains("nothing was run"),
            "{name}: {stderr}"
        );
        assert!(stdout.is_empty(), "{name}: no summary of a run: {stdout:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_report_that_cannot_be_written_at_the_end_leaves_the_summary_and_fails() {
    let served = serve_demo().await;
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    std::fs::create_dir(&reports).unwrap();
    let path = reports.join("run.json");
    let name = path.display().to_string();
    // Until Ctrl-C, so the directory goes while the run is surely on.
    let mut cli = Cli::fleet(&[
        "--server",
        &served.addr().to_string(),
        "--nodes",
        "2",
        "--progress",
        "0.1",
        "--report",
        &name,
    ]);
    cli.stderr_until("configured 2/2").await;
    std::fs::remove_dir(&reports).unwrap();
    let interrupt = Command::new("kill")
        .args(["-INT", &cli.child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let (stdout, status) = cli.finish().await;
    let stderr = cli.all_stderr().await.join("\n");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stdout.iter().any(|l| l.starts_with("fleet: 2 nodes (sotw")),
        "the run's summary: {stdout:?}\nstderr: {stderr}"
    );
    assert!(
        stderr.contains(&format!("cannot write the report {name}"))
            && stderr.contains("No such file")
            && stderr.contains("the run's summary is printed; its raw samples are lost"),
        "{stderr}"
    );
}
