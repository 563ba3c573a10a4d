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
pub const RECENT_FAILURES: usize = 32;

/// One connection refused during its TLS handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeFailure {
    pub peer: SocketAddr,
    pub at: SystemTime,
    pub reason: String,
}

/// Connection counters and recent handshake failures of one listener. Cheap to clone.
#[derive(Debug, Clone)]
pub struct NetStats {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// One permit per connection (`--max-connections`).
    connections: Arc<Semaphore>,
    max_connections: usize,
    refused: AtomicU64,
    failures: Mutex<VecDeque<HandshakeFailure>>,
}

impl NetStats {
    pub fn new(max_connections: usize) -> Self {
        let max = max_connections.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            inner: Arc::new(Inner {
                connections: Arc::new(Semaphore::new(max)),
                max_connections: max,
                refused: AtomicU64::new(0),
                failures: Mutex::default(),
            }),
        }
    }

    pub(crate) fn permits(&self) -> Arc<Semaphore> {
        self.inner.connections.clone()
    }

    /// Connections accepted and not yet closed (handshakes in progress included).
    pub fn open_connections(&self) -> usize {
        self.inner.max_connections - self.inner.connections.available_permits()
    }

    /// Connections closed at once because `--max-connections` were open.
    pub fn refused_connections(&self) -> u64 {
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
    pub fn handshake_failures(&self) -> Vec<HandshakeFailure> {
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
pub fn handshake_reason(error: &io::Error) -> String {
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
        Some(rustls::Error::InvalidCertificate(_)) => {
            format!(
                "the client's certificate was refused: {}",
                tls.expect("matched")
            )
        }
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

/// The preface of an HTTP/2 client with prior knowledge (gRPC without TLS).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0";

/// What a client that did not start with a TLS record gets: an answer in its own protocol
/// saying this port speaks TLS, then the connection closed. Returns the reason to record.
pub async fn refuse_plaintext(mut tcp: TcpStream, head: &[u8]) -> String {
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
    let mut out = vec![0, 0, 0, 0x4, 0, 0, 0, 0, 0];
    let len = 8 + text.len();
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[0x7, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0x1]);
    out.extend_from_slice(text);
    out
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
