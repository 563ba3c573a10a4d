//! Connections the server would not take, in plain words on both sides: the log and
//! `/status` here, and for a client that spoke plaintext to a TLS port, an answer it can read
//! (an HTTP/1.1 400, or an HTTP/2 GOAWAY whose debug text gRPC clients show).

use std::{
    collections::VecDeque,
    io,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, SystemTime},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::Semaphore,
};
use tokio_rustls::rustls::{self, CertificateError};

/// How many handshake failures `/status` remembers.
pub(crate) const RECENT_FAILURES: usize = 32;

/// One connection refused during its TLS handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HandshakeFailure {
    pub peer: SocketAddr,
    pub at: SystemTime,
    pub reason: String,
}

/// Connection counters and recent handshake failures of one listener. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct NetStats {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// One permit per connection (`--max-connections`).
    connections: Arc<Semaphore>,
    max_connections: usize,
    refused: AtomicU64,
    failures: Mutex<VecDeque<HandshakeFailure>>,
    /// One permit per refusal being answered ([`ANSWERED_REFUSALS`]).
    answering: Arc<Semaphore>,
}

impl NetStats {
    pub(crate) fn new(max_connections: usize) -> Self {
        let max = max_connections.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            inner: Arc::new(Inner {
                connections: Arc::new(Semaphore::new(max)),
                max_connections: max,
                refused: AtomicU64::new(0),
                failures: Mutex::default(),
                answering: Arc::new(Semaphore::new(ANSWERED_REFUSALS)),
            }),
        }
    }

    pub(crate) fn permits(&self) -> Arc<Semaphore> {
        self.inner.connections.clone()
    }

    /// Connections accepted and not yet closed (handshakes in progress included).
    pub(crate) fn open_connections(&self) -> usize {
        self.inner.max_connections - self.inner.connections.available_permits()
    }

    /// Connections closed at once because `--max-connections` were open.
    pub(crate) fn refused_connections(&self) -> u64 {
        self.inner.refused.load(Ordering::Relaxed)
    }

    /// Counts one refusal; true for the first and then every 1000th, which are logged.
    pub(crate) fn refused(&self) -> bool {
        self.inner
            .refused
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(1000)
    }

    /// The last [`RECENT_FAILURES`] handshake failures, most recent first.
    pub(crate) fn handshake_failures(&self) -> Vec<HandshakeFailure> {
        let failures = self
            .inner
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        failures.iter().rev().cloned().collect()
    }

    pub(crate) fn failed(&self, peer: SocketAddr, reason: String) {
        tracing::warn!(%peer, %reason, "TLS handshake failed");
        let mut failures = self
            .inner
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if failures.len() == RECENT_FAILURES {
            failures.pop_front();
        }
        failures.push_back(HandshakeFailure {
            peer,
            at: SystemTime::now(),
            reason,
        });
    }
}

/// A TLS accept error in words a person can act on.
pub(crate) fn handshake_reason(error: &io::Error) -> String {
    let tls = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(rustls::Error::NoCertificatesPresented) => {
            "the client sent no certificate (mTLS: it needs one signed by --tls-client-ca)".into()
        }
        Some(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)) => {
            "the client's certificate is not signed by --tls-client-ca".into()
        }
        Some(rustls::Error::InvalidCertificate(e)) => match dates(e) {
            Some(dates) => format!("the client's certificate was refused: {dates}"),
            None => format!(
                "the client's certificate was refused: {}",
                tls.expect("matched")
            ),
        },
        Some(rustls::Error::AlertReceived(alert)) => format!(
            "the client refused the server's certificate (TLS alert {alert:?}): does its CA \
             file hold the CA of --tls-cert, and does the name it checks match?"
        ),
        Some(other) => format!("TLS: {other}"),
        None if error.kind() == io::ErrorKind::UnexpectedEof => {
            "the client closed the connection during the TLS handshake".into()
        }
        None => error.to_string(),
    }
}

/// A certificate outside its validity, with the dates in RFC 3339 (rustls says UNIX seconds).
pub(crate) fn dates(error: &CertificateError) -> Option<String> {
    let at = |t: rustls::pki_types::UnixTime| {
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(t.as_secs());
        humantime::format_rfc3339_seconds(time).to_string()
    };
    match error {
        CertificateError::ExpiredContext { time, not_after } => Some(format!(
            "it expired at {} (now {})",
            at(*not_after),
            at(*time)
        )),
        CertificateError::NotValidYetContext { time, not_before } => Some(format!(
            "it is not valid before {} (now {})",
            at(*not_before),
            at(*time)
        )),
        _ => None,
    }
}

/// The preface of an HTTP/2 client with prior knowledge (gRPC without TLS).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0";

/// What a client that did not start with a TLS record gets: an answer in its own protocol
/// saying this port speaks TLS, then the connection closed. Returns the reason to record.
pub(crate) async fn refuse_plaintext(mut tcp: TcpStream, head: &[u8]) -> String {
    let (answer, reason) = if head.starts_with(&H2_PREFACE[..head.len().min(H2_PREFACE.len())]) {
        let reason = "plaintext HTTP/2 (gRPC without TLS) on a TLS port: the client needs TLS \
                      (xdsloop-client --tls-ca FILE)";
        (
            goaway(b"this port speaks TLS: connect with TLS (xdsloop-client: --tls-ca FILE)"),
            reason,
        )
    } else if head.iter().take_while(|b| b.is_ascii_uppercase()).count() >= 3 {
        let body = "this port speaks TLS: use https://\n";
        let answer = format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\nconnection: close\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        (
            answer.into_bytes(),
            "plaintext HTTP/1.1 on a TLS port: use https://",
        )
    } else {
        (Vec::new(), "not TLS (the first bytes are no TLS handshake)")
    };
    let _ = tcp.write_all(&answer).await;
    let _ = tcp.shutdown().await;
    // Read what the client still sends before closing: closing with unread data makes the
    // kernel reset the connection, and the client could lose the answer.
    let mut sink = [0u8; 4096];
    let drain = async { while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {} };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    reason.to_string()
}

/// An HTTP/2 server preface (empty SETTINGS) and a GOAWAY (PROTOCOL_ERROR) carrying `text`.
fn goaway(text: &[u8]) -> Vec<u8> {
    goaway_with(PROTOCOL_ERROR, text)
}

/// HTTP/2 error codes a GOAWAY carries.
const PROTOCOL_ERROR: u8 = 0x1;
const ENHANCE_YOUR_CALM: u8 = 0xb;

fn goaway_with(code: u8, text: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0, 0x4, 0, 0, 0, 0, 0];
    let len = 8 + text.len();
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[0x7, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, code]);
    out.extend_from_slice(text);
    out
}

/// The id of the first stream an HTTP/2 client opens (its first HEADERS frame), read within
/// two seconds and 64 KiB; `None` if it opens none.
async fn first_stream(tcp: &mut TcpStream) -> Option<u32> {
    let read = async {
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 4096];
        while buffer.len() < 64 * 1024 {
            let n = tcp.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
            buffer.extend_from_slice(&chunk[..n]);
            if let Some(stream) = headers_stream(&buffer) {
                return Some(stream);
            }
        }
        None
    };
    tokio::time::timeout(Duration::from_secs(2), read)
        .await
        .ok()
        .flatten()
}

/// The stream of the first HEADERS frame after the client preface in `bytes`, if it is there.
fn headers_stream(bytes: &[u8]) -> Option<u32> {
    const PREFACE_LEN: usize = 24;
    let mut at = PREFACE_LEN;
    while let Some(header) = bytes.get(at..at + 9) {
        let length = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
        if header[3] == 0x1 {
            return Some(stream);
        }
        at += 9 + length;
    }
    None
}

/// A server preface, then `stream` ended by a gRPC status UNAVAILABLE with `text` (a
/// trailers-only response), then a GOAWAY that lets no other stream start.
fn grpc_refusal(stream: u32, text: &str) -> Vec<u8> {
    let mut block = vec![0x88]; // :status 200, from HPACK's static table
    for (name, value) in [
        ("content-type", "application/grpc"),
        ("grpc-status", "14"),
        ("grpc-message", &text.replace('%', "%25")),
    ] {
        block.push(0x00); // a literal field, not indexed, with a new name
        for part in [name, value] {
            hpack_length(&mut block, part.len());
            block.extend_from_slice(part.as_bytes());
        }
    }
    let mut out = frame(0x4, 0, 0, &[]);
    // END_STREAM | END_HEADERS
    out.extend(frame(0x1, 0x5, stream, &block));
    let mut goaway = stream.to_be_bytes().to_vec();
    goaway.extend_from_slice(&[0, 0, 0, ENHANCE_YOUR_CALM]);
    goaway.extend_from_slice(text.as_bytes());
    out.extend(frame(0x7, 0, 0, &goaway));
    out
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// An HPACK string length (7-bit prefix integer, no Huffman coding).
fn hpack_length(out: &mut Vec<u8>, length: usize) {
    if length < 127 {
        out.push(length as u8);
        return;
    }
    out.push(127);
    let mut rest = length - 127;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// Refusals answered at once (a flood of connections past the limit gets the rest closed
/// without a word: answering must not cost more than the connections it refuses).
const ANSWERED_REFUSALS: usize = 64;

/// How a connection refused at `--max-connections` is told, in its protocol: what the
/// client shows (xdsloop-client finds it by this beginning).
pub(crate) const CROWDED: &str = "xdsloop refused this connection:";

/// Tells a client turned away at `--max-connections` why, in its own protocol (an HTTP/2
/// GOAWAY with ENHANCE_YOUR_CALM and the reason as its debug text, or an HTTP/1.1 503), then
/// closes. A TLS client is closed without a word: answering would mean a handshake.
pub(crate) fn refuse_crowded(tcp: TcpStream, stats: &NetStats) {
    let Ok(permit) = stats.inner.answering.clone().try_acquire_owned() else {
        return;
    };
    let max = stats.inner.max_connections;
    tokio::spawn(async move {
        let _permit = permit;
        let text =
            format!("{CROWDED} the server's --max-connections ({max}) are open; try again later");
        answer_crowded(tcp, &text).await;
    });
}

async fn answer_crowded(mut tcp: TcpStream, text: &str) {
    let mut head = [0u8; 16];
    let peek = tokio::time::timeout(Duration::from_secs(2), tcp.peek(&mut head)).await;
    let n = match peek {
        Ok(Ok(n)) if n > 0 => n,
        _ => return,
    };
    let head = &head[..n];
    let answer = if head.starts_with(&H2_PREFACE[..n.min(H2_PREFACE.len())]) {
        // A GOAWAY alone races the client's first stream (it may only learn that its
        // connection went away): answer that stream with a gRPC status the client shows.
        match first_stream(&mut tcp).await {
            Some(stream) => grpc_refusal(stream, text),
            None => goaway_with(ENHANCE_YOUR_CALM, text.as_bytes()),
        }
    } else if head.iter().take_while(|b| b.is_ascii_uppercase()).count() >= 3 {
        let body = format!("{text}\n");
        format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: \
             close\r\nretry-after: 1\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    } else {
        return;
    };
    let _ = tcp.write_all(&answer).await;
    let _ = tcp.shutdown().await;
    // As in `refuse_plaintext`: read what the client still sends, so the kernel does not
    // reset the connection over unread data before the client has read the answer.
    let mut sink = [0u8; 4096];
    let drain = async { while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {} };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goaway_is_a_settings_frame_then_a_goaway_frame_with_the_text() {
        let frames = goaway(b"hi");
        assert_eq!(&frames[..9], &[0, 0, 0, 4, 0, 0, 0, 0, 0], "empty SETTINGS");
        assert_eq!(&frames[9..12], &[0, 0, 10], "payload: 8 + 2 bytes");
        assert_eq!(frames[12], 7, "GOAWAY");
        assert_eq!(&frames[frames.len() - 2..], b"hi");
    }

    #[test]
    fn a_refused_grpc_stream_gets_a_trailers_only_status() {
        let mut client = H2_PREFACE.to_vec();
        client.extend_from_slice(b"\r\n\r\nSM\r\n\r\n");
        assert_eq!(client.len(), 24, "the client preface");
        client.extend(frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]));
        assert_eq!(headers_stream(&client), None, "no stream yet");
        client.extend(frame(0x1, 0x4, 1, b"...."));
        assert_eq!(headers_stream(&client), Some(1));
        let answer = grpc_refusal(1, "full");
        let headers = &answer[9..];
        assert_eq!(
            &headers[3..5],
            &[0x1, 0x5],
            "HEADERS, END_STREAM | END_HEADERS"
        );
        let block = &headers[9..9 + headers[2] as usize];
        assert_eq!(block[0], 0x88);
        assert!(block.windows(12).any(|w| w == b"\x0bgrpc-status"));
        assert!(block.windows(5).any(|w| w == b"\x04full"));
        let mut long = Vec::new();
        hpack_length(&mut long, 300);
        assert_eq!(long, [127, 173, 1], "300 = 127 + 173 - 128 + 128");
    }

    #[test]
    fn expired_and_not_yet_valid_certificates_say_their_dates() {
        let secs = rustls::pki_types::UnixTime::since_unix_epoch;
        let expired = CertificateError::ExpiredContext {
            time: secs(Duration::from_secs(1_767_225_600)),
            not_after: secs(Duration::from_secs(1_735_689_600)),
        };
        let error = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(expired),
        );
        assert_eq!(
            handshake_reason(&error),
            "the client's certificate was refused: it expired at 2025-01-01T00:00:00Z \
             (now 2026-01-01T00:00:00Z)"
        );
        let early = CertificateError::NotValidYetContext {
            time: secs(Duration::from_secs(1_735_689_600)),
            not_before: secs(Duration::from_secs(1_767_225_600)),
        };
        assert_eq!(
            dates(&early).unwrap(),
            "it is not valid before 2026-01-01T00:00:00Z (now 2025-01-01T00:00:00Z)"
        );
    }

    #[test]
    fn failures_are_bounded_most_recent_first() {
        let stats = NetStats::new(4);
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        for i in 0..RECENT_FAILURES + 3 {
            stats.failed(peer, format!("reason {i}"));
        }
        let failures = stats.handshake_failures();
        assert_eq!(failures.len(), RECENT_FAILURES);
        assert_eq!(
            failures[0].reason,
            format!("reason {}", RECENT_FAILURES + 2)
        );
    }
}
