//! `xdsloop-server status`: fetch `/status` from a running server (its xDS port, where the admin
//! routes are served, or its `--admin` listener) and render it.
//!
//! The admin routes are plain HTTP, so a minimal HTTP/1.0 GET over a TCP (or TLS) stream is all
//! the client needs: HTTP/1.0 makes the server close the connection after one response and never
//! use chunked encoding, so the body is everything after the headers.

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::TcpStream,
};
use tokio_rustls::{
    TlsConnector,
    rustls::{ClientConfig, pki_types::ServerName},
};

use super::{StatusDocument, table};
use crate::error::Error;

/// How to reach an admin endpoint that is not plain HTTP on loopback.
#[derive(Clone, Default)]
pub struct RemoteAccess {
    /// TLS (the server runs with `--tls-cert`): the CA to trust, and a client certificate for
    /// mTLS.
    pub tls: Option<Arc<ClientConfig>>,
    /// The name the server's certificate must carry; default: the host of the address.
    pub server_name: Option<String>,
    /// Sent as `Authorization: Bearer` (the server's `--admin-token`).
    pub token: Option<String>,
}

/// The token never shows in a debug print.
impl std::fmt::Debug for RemoteAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteAccess")
            .field("tls", &self.tls.is_some())
            .field("server_name", &self.server_name)
            .field("token", &self.token.as_ref().map(|_| "<hidden>"))
            .finish()
    }
}

/// How long a status request may take in total: the admin routes answer from memory.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Responses larger than this are refused rather than buffered (a wrong port could stream
/// anything at us). Far above the document for thousands of streams.
const MAX_RESPONSE: u64 = 256 * 1024 * 1024;

/// What `status` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// The table for a terminal.
    #[default]
    Text,
    /// The raw `/status` document.
    Json,
}

/// Fetches `/status` from `server` (`HOST:PORT`, optionally with `http://`) and returns the
/// text to print.
pub async fn command(server: &str, output: Output) -> Result<String, Error> {
    command_with(server, output, &RemoteAccess::default()).await
}

/// [`command`] over TLS and/or with a token.
pub async fn command_with(
    server: &str,
    output: Output,
    access: &RemoteAccess,
) -> Result<String, Error> {
    let body = get_with(server, "/status", access).await?;
    match output {
        Output::Json => Ok(body),
        Output::Text => {
            let doc: StatusDocument = serde_json::from_str(&body).map_err(|e| {
                Error::Admin(format!("{server}: /status is not a status document: {e}"))
            })?;
            Ok(table::render(&doc, SystemTime::now()))
        }
    }
}

/// Fetches and parses `/status`.
pub async fn fetch(server: &str) -> Result<StatusDocument, Error> {
    fetch_with(server, &RemoteAccess::default()).await
}

/// [`fetch`] over TLS and/or with a token.
pub async fn fetch_with(server: &str, access: &RemoteAccess) -> Result<StatusDocument, Error> {
    let body = get_with(server, "/status", access).await?;
    serde_json::from_str(&body)
        .map_err(|e| Error::Admin(format!("{server}: /status is not a status document: {e}")))
}

/// `GET path` on `server`; the body of a 200 response, or an error naming the server.
pub async fn get(server: &str, path: &str) -> Result<String, Error> {
    get_with(server, path, &RemoteAccess::default()).await
}

/// [`get`] over TLS and/or with a token.
pub async fn get_with(server: &str, path: &str, access: &RemoteAccess) -> Result<String, Error> {
    let authority = server
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_string();
    let fail = |message: String| Error::Admin(format!("{authority}: {message}"));
    let mut request =
        format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\nAccept: application/json\r\n");
    if let Some(token) = &access.token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    request.push_str("\r\n");
    let exchange = async {
        let tcp = TcpStream::connect(&authority).await?;
        match &access.tls {
            None => exchange(tcp, &request).await,
            Some(config) => {
                let name = access
                    .server_name
                    .clone()
                    .unwrap_or_else(|| host(&authority));
                let name = ServerName::try_from(name)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
                let tls = TlsConnector::from(config.clone())
                    .connect(name, tcp)
                    .await?;
                exchange(tls, &request).await
            }
        }
    };
    let response = match tokio::time::timeout(TIMEOUT, exchange).await {
        Err(_) => return Err(fail(format!("no answer within {TIMEOUT:?}"))),
        Ok(Err(e)) => return Err(fail(failure_words(&e, access))),
        Ok(Ok(response)) => response,
    };
    if response.len() as u64 > MAX_RESPONSE {
        return Err(fail(format!("response larger than {MAX_RESPONSE} bytes")));
    }
    let (code, body) = parse_response(&response).map_err(fail)?;
    if code == 401 {
        let refused: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let reason = refused["error"].as_str().unwrap_or(body.trim());
        return Err(fail(format!(
            "GET {path}: HTTP 401: {reason}; pass --admin-token (or run on the server's host, \
             or with --tls-cert/--tls-key where it verifies client certificates)"
        )));
    }
    if code == 400 && body.contains("this port speaks TLS") {
        return Err(fail(format!(
            "GET {path}: {}; pass --tls-ca FILE (the server's CA)",
            body.trim()
        )));
    }
    if code != 200 {
        return Err(fail(format!("GET {path}: HTTP {code}: {}", body.trim())));
    }
    Ok(body)
}

/// A failed exchange in words: a TLS refusal says what the server wants; anything else asks
/// whether a server listens there.
fn failure_words(error: &std::io::Error, access: &RemoteAccess) -> String {
    let with_cert = access
        .tls
        .as_ref()
        .map(|tls| tls.client_auth_cert_resolver.has_certs());
    let text = format!("{error} {error:?}");
    let alert = text.contains("received fatal alert");
    // With TLS 1.3 the client's handshake is done before the server checks its certificate:
    // a refusal may only show as the connection closing before the answer.
    let cut = matches!(
        error.kind(),
        std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::BrokenPipe
    );
    match with_cert {
        Some(false) if alert || cut => format!(
            "{error}: the server refused this TLS connection, which presented no client \
             certificate: it requires a client certificate signed by its --tls-client-ca; pass \
             --tls-cert FILE --tls-key FILE (or read its --admin listener, if it has one, where \
             a certificate is optional)"
        ),
        Some(true) if alert => format!(
            "{error}: the server refused this client's TLS: is --tls-cert signed by its \
             --tls-client-ca?"
        ),
        _ => format!(
            "{error} (is xdsloop-server listening there? Give its --listen address, or its \
             --admin one if it has one)"
        ),
    }
}

/// Sends `request` and reads the response to the end of the connection (a TLS peer that
/// closes without `close_notify` still ends it).
async fn exchange(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    request: &str,
) -> std::io::Result<Vec<u8>> {
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    let mut limited = (&mut stream).take(MAX_RESPONSE + 1);
    match limited.read_to_end(&mut response).await {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => {}
        other => {
            other?;
        }
    }
    Ok(response)
}

/// The host part of `host:port` (brackets of an IPv6 address removed).
fn host(authority: &str) -> String {
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}

/// Status code and body of an HTTP/1.x response that ends with the connection.
fn parse_response(response: &[u8]) -> Result<(u16, String), String> {
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("not an HTTP response")?;
    let head = std::str::from_utf8(&response[..split]).map_err(|_| "not an HTTP response")?;
    let status_line = head.lines().next().unwrap_or_default();
    let mut parts = status_line.split_whitespace();
    let (Some(proto), Some(code)) = (parts.next(), parts.next()) else {
        return Err(format!("bad status line {status_line:?}"));
    };
    let code: u16 = code
        .parse()
        .ok()
        .filter(|_| proto.starts_with("HTTP/1."))
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let mut body = &response[split + 4..];
    let length = head.lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        let is_length = name.trim().eq_ignore_ascii_case("content-length");
        is_length
            .then(|| value.trim().parse::<usize>().ok())
            .flatten()
    });
    if let Some(length) = length {
        body = body
            .get(..length)
            .ok_or("response shorter than its Content-Length")?;
    }
    let body = String::from_utf8(body.to_vec()).map_err(|_| "response body is not UTF-8")?;
    Ok((code, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_and_body_by_content_length() {
        let raw = b"HTTP/1.0 200 OK\r\ncontent-type: application/json\r\nContent-Length: 2\r\n\r\n{}trailing";
        assert_eq!(parse_response(raw).unwrap(), (200, "{}".to_string()));
        let closed = b"HTTP/1.1 404 Not Found\r\n\r\nnope";
        assert_eq!(parse_response(closed).unwrap(), (404, "nope".to_string()));
        assert!(parse_response(b"SSH-2.0-OpenSSH\r\n").is_err());
        let short = b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\n{}";
        assert!(parse_response(short).is_err());
    }
}
