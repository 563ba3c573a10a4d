//! TLS toward the server: the PEM files read once ([`load`]) and checked so a bad file is an
//! error naming it, the configurations the transports use (tonic's for gRPC, rustls's for
//! REST), and TLS failures explained in words ([`explain`]).
//!
//! rustls with the ring provider, as tonic's `tls-ring`; no OpenSSL.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::{
    self, CertificateError, ClientConfig, RootCertStore,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use crate::config::{ClientTls, TlsIdentity};
use crate::error::ClientError;

fn fail(flag: &str, path: &Path, message: impl std::fmt::Display) -> ClientError {
    ClientError::tls(format!("{flag} {}: {message}", path.display()))
}

fn read(flag: &str, path: &Path) -> Result<Vec<u8>, ClientError> {
    std::fs::read(path)
        .map_err(|e| ClientError::tls_because(format!("{flag} {}", path.display()), e))
}

fn certificates(flag: &str, path: &Path, pem: &[u8]) -> Result<(), ClientError> {
    let certs: Vec<CertificateDer<'_>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| fail(flag, path, format!("not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(fail(flag, path, "no CERTIFICATE block in it"));
    }
    Ok(())
}

/// Checks that the key is the one of the certificate's public key, as the server does with its
/// own pair: otherwise every handshake fails with no more than "transport error".
fn matching_key(
    cert_pem: &[u8],
    key_der: PrivateKeyDer<'static>,
    (cert, key): (&Path, &Path),
) -> Result<(), ClientError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| {
            fail(
                "--tls-cert",
                cert,
                format!("not a PEM certificate file: {e}"),
            )
        })?;
    let provider = rustls::crypto::ring::default_provider();
    let signing = (provider.key_provider)
        .load_private_key(key_der)
        .map_err(|e| fail("--tls-key", key, format!("not a usable private key: {e}")))?;
    match rustls::sign::CertifiedKey::new(chain, signing).keys_match() {
        Err(rustls::Error::InconsistentKeys(_)) => Err(fail(
            "--tls-key",
            key,
            format!(
                "does not go with the certificate in --tls-cert {}: the key is not the one of \
                 the certificate's public key",
                cert.display()
            ),
        )),
        // A key whose public half cannot be derived is checked by the handshake instead.
        _ => Ok(()),
    }
}

/// Reads `--tls-ca` and, for mTLS, `--tls-cert` and `--tls-key`.
pub fn load(
    ca: &Path,
    identity: Option<(&Path, &Path)>,
    server_name: Option<String>,
) -> Result<ClientTls, ClientError> {
    let ca_pem = read("--tls-ca", ca)?;
    certificates("--tls-ca", ca, &ca_pem)?;
    let identity = match identity {
        None => None,
        Some((cert, key)) => {
            let cert_pem = read("--tls-cert", cert)?;
            certificates("--tls-cert", cert, &cert_pem)?;
            let key_pem = read("--tls-key", key)?;
            let key_der = PrivateKeyDer::from_pem_slice(&key_pem)
                .map_err(|_| fail("--tls-key", key, "no PEM private key in it"))?;
            matching_key(&cert_pem, key_der, (cert, key))?;
            Some(TlsIdentity { cert_pem, key_pem })
        }
    };
    Ok(ClientTls {
        ca_pem,
        ca_file: ca.display().to_string(),
        identity,
        server_name,
    })
}

/// tonic's configuration for gRPC channels (it offers ALPN `h2`).
pub(crate) fn grpc_config(tls: &ClientTls) -> ClientTlsConfig {
    let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&tls.ca_pem));
    if let Some(identity) = &tls.identity {
        config = config.identity(Identity::from_pem(&identity.cert_pem, &identity.key_pem));
    }
    match &tls.server_name {
        Some(name) => config.domain_name(name.clone()),
        None => config,
    }
}

/// rustls's configuration for REST polling (ALPN `http/1.1`).
pub(crate) fn rest_config(tls: &ClientTls) -> Result<Arc<ClientConfig>, ClientError> {
    let bad = ClientError::tls;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&tls.ca_pem) {
        let cert = cert.map_err(|e| bad(format!("--tls-ca {}: {e}", tls.ca_file)))?;
        roots
            .add(cert)
            .map_err(|e| bad(format!("--tls-ca {}: {e}", tls.ca_file)))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .with_root_certificates(roots);
    let mut config = match &tls.identity {
        None => builder.with_no_client_auth(),
        Some(identity) => {
            let chain = CertificateDer::pem_slice_iter(&identity.cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(format!("--tls-cert: {e}")))?;
            let key = PrivateKeyDer::from_pem_slice(&identity.key_pem)
                .map_err(|_| bad("--tls-key: no PEM private key".into()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| bad(format!("--tls-cert/--tls-key: {e}")))?
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// `plain` (an error's own text), led by the words of [`explain`] when it has some.
pub(crate) fn describe(
    error: &(dyn std::error::Error + 'static),
    tls: Option<&ClientTls>,
    plain: String,
) -> String {
    match explain(error, tls) {
        // The server's own words (a refusal it explained) need no repeating.
        Some(words) if plain.contains(&words) => plain,
        Some(words) => format!("{words} ({plain})"),
        None => plain,
    }
}

/// [`describe`] for a stream that failed to open. With TLS 1.3 a client counts its handshake
/// done before the server has checked the client's certificate: the server's alert can lose
/// the race with the first stream, which then only learns that its connection went away
/// (hyper: "operation was canceled"). Say what that most likely was.
pub(crate) fn describe_open(
    status: &tonic::Status,
    tls: Option<&ClientTls>,
    plain: String,
) -> String {
    let cut_short = status.message().contains("operation was canceled");
    if tls.is_some() && cut_short && explain(status, tls).is_none() {
        return format!(
            "the connection closed as the stream opened: if the server refused this client's \
             TLS, it requires a client certificate signed by its --tls-client-ca \
             (--tls-cert/--tls-key), and its /status lists the refused handshakes ({plain})"
        );
    }
    describe(status, tls, plain)
}

/// A connection or stream failure in words a person can act on, when it is about TLS (or
/// about TLS missing on one side); `None` for anything else. `tls` is whether this client
/// uses TLS.
pub(crate) fn explain(
    error: &(dyn std::error::Error + 'static),
    tls: Option<&ClientTls>,
) -> Option<String> {
    let mut source = Some(error);
    let mut text = String::new();
    while let Some(cause) = source {
        // io::Error's `source` skips the error it wraps: look at that one too.
        let wrapped = cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>());
        if let Some(rustls) = cause.downcast_ref::<rustls::Error>().or(wrapped) {
            return Some(rustls_words(rustls, tls));
        }
        text.push_str(&cause.to_string());
        text.push('\n');
        source = cause.source();
    }
    plaintext_words(&text, tls)
}

fn rustls_words(error: &rustls::Error, tls: Option<&ClientTls>) -> String {
    let ca = tls.map_or("", |t| t.ca_file.as_str());
    match error {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            format!("the server's certificate is not signed by --tls-ca {ca}")
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => format!(
            "the server's certificate is not valid for the name this client checks ({error}); \
             set --tls-server-name to a name in its certificate"
        ),
        rustls::Error::InvalidCertificate(e) => match dates(e) {
            Some(dates) => format!("the server's certificate was refused: {dates}"),
            None => format!("the server's certificate was refused: {error}"),
        },
        rustls::Error::AlertReceived(alert) => refused_words(&format!("{alert:?}")),
        rustls::Error::InvalidMessage(_) => {
            "the server did not answer TLS: is it plaintext? (drop --tls-ca)".to_string()
        }
        other => format!("TLS: {other}"),
    }
}

/// A certificate outside its validity, with the dates in RFC 3339 (rustls says UNIX seconds).
fn dates(error: &CertificateError) -> Option<String> {
    let at = |t: rustls::pki_types::UnixTime| {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(t.as_secs());
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

/// The beginning of the words a server refusing at its `--max-connections` sends (its HTTP/2
/// GOAWAY's debug text).
const CROWDED: &str = "xdsloop refused this connection:";

/// What the error chain's text says, where the TLS error itself did not survive (rustls hands
/// a received alert to the reader as text): an alert from the server, or (plaintext) the
/// server's HTTP/2 GOAWAY saying the port speaks TLS.
fn plaintext_words(text: &str, tls: Option<&ClientTls>) -> Option<String> {
    if let Some(at) = text.find(CROWDED) {
        // The server's words, without the quoting of the GOAWAY's debug data around them.
        let words = &text[at..];
        let end = words.find(['"', '\n']).unwrap_or(words.len());
        return Some(words[..end].to_string());
    }
    const ALERT: &str = "received fatal alert: ";
    if let Some(at) = text.find(ALERT) {
        // The alert's name only: the text may be a Debug rendering, with a quote after it.
        let rest = &text[at + ALERT.len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        return Some(refused_words(&rest[..end]));
    }
    if tls.is_none() && text.contains("this port speaks TLS") {
        return Some("the server speaks TLS and this client does not: pass --tls-ca FILE".into());
    }
    None
}

fn refused_words(alert: &str) -> String {
    format!(
        "the server refused this client's TLS (alert {alert}): it requires a client \
         certificate signed by its --tls-client-ca (--tls-cert/--tls-key)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> ClientTls {
        ClientTls {
            ca_pem: Vec::new(),
            ca_file: "ca.pem".into(),
            identity: None,
            server_name: None,
        }
    }

    #[test]
    fn tls_failures_are_explained_through_io_errors_and_text() {
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, unknown);
        let words = explain(&wrapped, Some(&settings())).unwrap();
        assert_eq!(
            words,
            "the server's certificate is not signed by --tls-ca ca.pem"
        );
        let alert = std::io::Error::other("received fatal alert: CertificateRequired");
        let words = explain(&alert, Some(&settings())).unwrap();
        assert!(words.contains("(alert CertificateRequired)"), "{words}");
        // As hyper passes it on: the io::Error's Debug text, a quote after the alert's name.
        let debug = std::io::Error::other(format!(
            "{:?}",
            std::io::Error::other("received fatal alert: CertificateUnknown",)
        ));
        let words = explain(&debug, Some(&settings())).unwrap();
        assert!(words.contains("(alert CertificateUnknown):"), "{words}");
        assert!(words.contains("--tls-cert/--tls-key"), "{words}");
        let goaway = std::io::Error::other("connection error received: b\"this port speaks TLS\"");
        let words = explain(&goaway, None).unwrap();
        assert!(words.contains("pass --tls-ca"), "{words}");
        assert_eq!(
            explain(&goaway, Some(&settings())),
            None,
            "this client has TLS"
        );
        let cut_short = tonic::Status::cancelled("operation was canceled");
        let words = describe_open(&cut_short, Some(&settings()), "open failed".into());
        assert!(words.contains("requires a client certificate"), "{words}");
        let plaintext = describe_open(&cut_short, None, "open failed".into());
        assert_eq!(plaintext, "open failed", "no TLS, no TLS guess");
        let other = std::io::Error::other("connection refused");
        assert_eq!(describe(&other, None, "x".into()), "x");
        let expired = CertificateError::ExpiredContext {
            time: rustls::pki_types::UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                1_767_225_600,
            )),
            not_after: rustls::pki_types::UnixTime::since_unix_epoch(
                std::time::Duration::from_secs(1_735_689_600),
            ),
        };
        let wrapped = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(expired),
        );
        assert_eq!(
            explain(&wrapped, Some(&settings())).unwrap(),
            "the server's certificate was refused: it expired at 2025-01-01T00:00:00Z \
             (now 2026-01-01T00:00:00Z)"
        );
    }

    #[test]
    fn load_names_the_file_that_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let error = load(&missing, None, None).unwrap_err().to_string();
        assert!(
            error.contains("--tls-ca") && error.contains("nope.pem"),
            "{error}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not pem").unwrap();
        let error = load(&empty, None, None).unwrap_err().to_string();
        assert!(error.contains("no CERTIFICATE block"), "{error}");
    }
}
