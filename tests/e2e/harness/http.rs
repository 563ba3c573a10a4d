//! A tiny HTTP/1.1 client over a tokio `TcpStream`, enough to talk REST-JSON the way Envoy's
//! REST config source does (one POST per connection, `Connection: close`), and to read admin
//! routes whatever their status code.

use std::net::SocketAddr;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use super::within;

/// A parsed HTTP response.
#[derive(Debug, Clone)]
pub(crate) struct HttpResponse {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        let found = self.headers.iter().find(|(n, _)| n == name);
        found.map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }
}

/// `POST path` with a JSON body; the whole response, read until the server closes.
pub(crate) async fn http_post(addr: SocketAddr, path: &str, body: &str) -> HttpResponse {
    http_send(addr, "POST", path, Some(body)).await
}

/// `GET path`; the whole response, whatever its status.
pub(crate) async fn http_get(addr: SocketAddr, path: &str) -> HttpResponse {
    http_send(addr, "GET", path, None).await
}

/// Any method, with an optional JSON body; the whole response, whatever its status.
pub(crate) async fn http_send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> HttpResponse {
    http_send_bytes(addr, method, path, body.map(str::as_bytes)).await
}

/// [`http_send`] with a body of any bytes (not UTF-8, say).
pub(crate) async fn http_send_bytes(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
) -> HttpResponse {
    within("an HTTP response", async {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        let mut request =
            format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        if let Some(body) = body {
            request += &format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            );
        }
        request += "\r\n";
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body.unwrap_or_default());
        // The server may answer (413) and close before it has read a body over its limit.
        let _ = stream.write_all(&bytes).await;
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw).await;
        parse(&raw)
    })
    .await
}

fn parse(raw: &[u8]) -> HttpResponse {
    let text = String::from_utf8_lossy(raw);
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {text:?}"));
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    HttpResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("chunk size");
        if size == 0 {
            break;
        }
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    body
}
