//! Item 4: what one client may cost. A request over `--max-request-bytes` is refused on its
//! length prefix, before the server buffers it; REST bodies get 413; the stream limit is what
//! the server's HTTP/2 SETTINGS advertise; connections over the limit are closed and counted.

use std::net::SocketAddr;

use bytes::Bytes;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};
use tonic::codegen::http;
use xdsloop_proto::services::ADS_SOTW_PATH;
use xdsloop_server::{app::Placement, testkit::TestServer};

use super::*;
use crate::harness::{TIMEOUT, within};

/// The demo, plaintext, with `tweak` applied to the config.
async fn serve_plain(tweak: impl Fn(&mut Config) + Send + Sync + 'static) -> (TempDir, TestServer) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&demo_dir(), dir.path());
    let server = TestServer::builder()
        .fixtures(dir.path())
        .admin()
        .configure(tweak);
    (dir, server.start().await.unwrap_or_else(|e| panic!("{e}")))
}

async fn h2_client(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    client
}

#[tokio::test]
async fn request_over_max_request_bytes_is_refused_before_buffering() {
    let (_dir, server) = serve_plain(|_| {}).await;
    let running = server.running().unwrap();
    let mut client = h2_client(running.addr).await.ready().await.unwrap();
    let request = http::Request::post(format!("http://{}{ADS_SOTW_PATH}", running.addr))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut body) = client.send_request(request, false).unwrap();
    // A gRPC message prefix announcing 59 MiB, and nothing behind it: the stream stays open.
    let announced: u32 = 59 * 1024 * 1024;
    let mut prefix = vec![0];
    prefix.extend(announced.to_be_bytes());
    body.send_data(Bytes::from(prefix), false).unwrap();
    let (status, message) = within("the refusal", async {
        let mut response = response.await.unwrap().into_body();
        while let Some(chunk) = response.data().await {
            chunk.unwrap();
        }
        let trailers = response.trailers().await.unwrap().expect("gRPC trailers");
        let text = |name: &str| trailers[name].to_str().unwrap().to_string();
        (text("grpc-status"), text("grpc-message"))
    })
    .await;
    assert_eq!(status, (tonic::Code::ResourceExhausted as i32).to_string());
    let message = percent_decoded(&message);
    assert!(
        message.contains(&format!(
            "a request of {announced} bytes is over the --max-request-bytes limit (4194304)"
        )),
        "{message}"
    );
    drop(body);
    server.shutdown().await.unwrap();
}

/// grpc-message is percent-encoded.
fn percent_decoded(text: &str) -> String {
    let mut out = Vec::new();
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex: String = bytes.by_ref().take(2).map(char::from).collect();
            out.push(u8::from_str_radix(&hex, 16).unwrap());
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn rest_body_over_limit_gets_413() {
    let (_dir, server) = serve_plain(|c| c.limits.max_request_bytes = 1000).await;
    let running = server.running().unwrap();
    let mut tcp = TcpStream::connect(running.addr).await.unwrap();
    let head = "POST /v3/discovery:clusters HTTP/1.1\r\nHost: x\r\n\
                content-type: application/json\r\ncontent-length: 5000000\r\n\
                connection: close\r\n\r\n{\"node\":";
    tcp.write_all(head.as_bytes()).await.unwrap();
    let answer = within("the 413", async {
        let mut raw = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = tcp.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            raw.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8_lossy(&raw).into_owned()
    })
    .await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains("over the --max-request-bytes limit (1000)"),
        "{answer}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn streams_per_connection_limit_is_advertised() {
    let (_dir, server) = serve_plain(|c| c.limits.max_streams_per_connection = 7).await;
    let running = server.running().unwrap();
    let mut client = h2_client(running.addr).await;
    let advertised = poll_until("the server's SETTINGS", TIMEOUT, async || {
        client = client.clone().ready().await.unwrap();
        let max = client.current_max_send_streams();
        (max != usize::MAX).then_some(max)
    });
    let advertised = advertised.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(advertised, 7);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn connections_over_limit_are_refused_and_counted() {
    let (_dir, server) = serve_plain(|c| {
        c.limits.max_connections = 2;
        c.admin = Placement::Listener("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let running = server.running().unwrap();
    let admin = running.admin_addr.unwrap().to_string();
    let limits = |doc: &StatusDocument| doc.limits.clone().unwrap();
    let held = [
        TcpStream::connect(running.addr).await.unwrap(),
        TcpStream::connect(running.addr).await.unwrap(),
    ];
    let wait = |what: &'static str, done: fn(&xdsloop_server::status::LimitsView) -> bool| {
        let admin = admin.clone();
        async move {
            let found = poll_until(what, TIMEOUT, async || {
                let doc = remote::fetch(&admin).await.unwrap();
                if done(&limits(&doc)) {
                    Ok(doc)
                } else {
                    Err(format!("{doc:#?}"))
                }
            });
            found.await.unwrap_or_else(|e| panic!("{e}"))
        }
    };
    wait("two open connections", |l| l.open_connections == 2).await;
    let mut third = TcpStream::connect(running.addr).await.unwrap();
    let closed = within("the third to be closed", async {
        let mut byte = [0u8; 1];
        matches!(third.read(&mut byte).await, Ok(0) | Err(_))
    })
    .await;
    assert!(closed);
    let doc = wait("the refusal counted", |l| l.refused_connections == 1).await;
    assert_eq!(limits(&doc).max_connections, 2);
    drop(held);
    wait("the held ones closed", |l| l.open_connections == 0).await;
    server.shutdown().await.unwrap();
}

/// A Delta stream adds names with every request, each request under the size limit: the
/// stream's subscriptions are bounded all the same (4 x --max-request-bytes), and only that
/// stream ends.
#[tokio::test]
async fn delta_subscriptions_over_their_bound_end_only_that_stream() {
    let (_dir, server) = serve_plain(|c| c.limits.max_request_bytes = 2000).await;
    let running = server.running().unwrap();
    let mut greedy = crate::harness::DeltaClient::connect(running.addr, "greedy").await;
    let mut calm = crate::harness::DeltaClient::connect(running.addr, "calm").await;
    calm.change(xdsloop_proto::type_url::CLUSTER, &["*"], &[], "")
        .await;
    calm.recv().await;
    let ended = within("the greedy stream to end", async {
        for batch in 0.. {
            let names: Vec<String> = (0..100).map(|i| format!("c-{batch:04}-{i:04}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            greedy
                .change(xdsloop_proto::type_url::ENDPOINT, &names, &[], "")
                .await;
            match tokio::time::timeout(std::time::Duration::from_millis(50), greedy.try_recv())
                .await
            {
                Ok(Err(status)) => return status,
                Ok(Ok(None)) => panic!("ended without a status"),
                _ => {}
            }
        }
        unreachable!()
    })
    .await;
    assert_eq!(ended.code(), tonic::Code::ResourceExhausted, "{ended:?}");
    assert!(
        ended.message().contains("(4 x --max-request-bytes)"),
        "{ended:?}"
    );
    // The other stream on the same server still gets pushes.
    calm.change(xdsloop_proto::type_url::ENDPOINT, &["*"], &[], "")
        .await;
    calm.recv().await;
    server.shutdown().await.unwrap();
}

/// A client turned away at the limit is told so, not "operation was canceled".
#[tokio::test]
async fn a_client_over_the_connection_limit_is_told_why() {
    let (_dir, server) = serve_plain(|c| c.limits.max_connections = 1).await;
    let running = server.running().unwrap();
    let _held = TcpStream::connect(running.addr).await.unwrap();
    let config = crate::client_support::config(running.addr, xdsloop_client::Source::Ads);
    let (client, mut reports) = crate::client_support::demo_client(config).await;
    let reason = failure(&mut reports).await;
    assert!(
        reason.contains(
            "xdsloop refused this connection: the server's --max-connections (1) are open; \
             try again later"
        ),
        "{reason}"
    );
    client.stop().await;
    server.shutdown().await.unwrap();
}

/// What `PUT /scenario` refuses before reading the YAML is refused as documented, a JSON
/// `{"error": …}` saying why: a body that is not UTF-8, a body over the limit (named), and a
/// method the route does not take.
#[tokio::test]
async fn scenario_refusals_are_json_errors_that_say_why() {
    let (_dir, server) = serve_plain(|_| {}).await;
    let addr = server.running().unwrap().addr;
    let latin1 = b"version: 1\nrules: [] # caf\xe9\n";
    let answer = crate::harness::http_send_bytes(addr, "PUT", "/scenario", Some(latin1)).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    let error = answer.json()["error"].as_str().unwrap().to_string();
    assert!(
        error.starts_with("PUT /scenario: the body is not UTF-8"),
        "{error}"
    );
    let huge = vec![b'#'; 3 * 1024 * 1024];
    let answer = crate::harness::http_send_bytes(addr, "PUT", "/scenario", Some(&huge)).await;
    assert_eq!(answer.status, 413, "{answer:?}");
    let error = answer.json()["error"].as_str().unwrap().to_string();
    assert!(error.contains("over the limit of 2097152 bytes"), "{error}");
    let answer = crate::harness::http_send(addr, "POST", "/scenario", Some("version: 1")).await;
    assert_eq!(answer.status, 405, "{answer:?}");
    let error = answer.json()["error"].as_str().unwrap().to_string();
    assert!(error.contains("GET, PUT or DELETE"), "{error}");
    assert!(answer.header("allow").is_some(), "{answer:?}");
}

/// A scenario nested far too deep is refused at once, at its place, before the YAML parser
/// (whose cost grows with the square of the depth) sees it; so is a fixture.
#[tokio::test]
async fn yaml_nested_too_deep_is_refused_with_its_place() {
    let (dir, server) = serve_plain(|_| {}).await;
    let running = server.running().unwrap();
    let deep = format!(
        "version: 1\nrules: {}{}\n",
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    let answer = crate::harness::http_send(running.addr, "PUT", "/scenario", Some(&deep)).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    let error = answer.json()["error"].as_str().unwrap().to_string();
    assert!(
        error.starts_with("PUT /scenario:2:107: nested deeper than 100 levels"),
        "{error}"
    );
    std::fs::write(dir.path().join("deep.yaml"), &deep).unwrap();
    let mut reloads = running.reloads.clone();
    let rejected = within("the deep fixture's rejection", reloads.wait_for(|r| !r.ok)).await;
    let error = rejected.unwrap().error.clone().unwrap_or_default();
    assert!(error.contains("deep.yaml"), "{error}");
    assert!(
        error.contains("line 2, column 107: nested deeper than 100 levels"),
        "{error}"
    );
    server.shutdown().await.unwrap();
}
