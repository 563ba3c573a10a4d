//! How the binary reports a server it cannot reach or loses, and that it keeps retrying.

use crate::support::{Cli, Demo, serve_demo, serve_demo_on};

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
    let addr = served.addr();
    let mut cli = Cli::spawn(addr, &[]);
    cli.lines(4).await;
    let Demo { dir, server } = served;
    server.shutdown().await.unwrap();
    cli.stderr_until("stream closed").await;
    cli.stderr_until("retrying in").await;
    assert!(cli.child.try_wait().unwrap().is_none(), "no crash");
    let _again = serve_demo_on(dir, addr).await;
    cli.stderr_until(&format!("connected to {addr}")).await;
    assert!(cli.child.try_wait().unwrap().is_none());
}
