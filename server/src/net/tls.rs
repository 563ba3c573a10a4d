//! TLS configurations from PEM files: the server's (`--tls-cert`, `--tls-key`, optionally
//! `--tls-client-ca` for mTLS) and the one `xdsloop-server status` connects with.
//!
//! Always rustls with the ring provider passed explicitly: `builder()` would panic if another
//! crate ever enabled a second provider. The server offers ALPN `h2` and `http/1.1`: gRPC
//! clients refuse a TLS connection without `h2` selected, and REST-JSON and the admin routes
//! speak HTTP/1.1 on the same port.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::SystemTime,
};

use tokio_rustls::rustls::{
    self, ClientConfig, RootCertStore, ServerConfig,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::WebPkiClientVerifier,
};

use crate::{error::Error, net::identity::PeerIdentity};

/// ALPN protocols, most preferred first.
pub const ALPN_H2: &[u8] = b"h2";
/// HTTP/1.1 (REST-JSON and the admin routes), after [`ALPN_H2`].
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// The files that make the server's TLS configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain, the server's own certificate first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) matching `cert`.
    pub key: PathBuf,
    /// PEM CA certificates that client certificates must chain to (mTLS).
    pub client_ca: Option<PathBuf>,
}

impl TlsFiles {
    /// Every file the configuration is read from.
    pub fn paths(&self) -> Vec<&Path> {
        let mut paths = vec![self.cert.as_path(), self.key.as_path()];
        paths.extend(self.client_ca.as_deref());
        paths
    }
}

/// Whether a listener asks clients for a certificate (only with a client CA).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientCerts {
    /// mTLS: a client without a certificate signed by the client CA is refused.
    Required,
    /// Asked for and verified when sent (the admin listener: a token works too).
    Optional,
}

/// A server configuration and what it was made of.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    pub config: Arc<ServerConfig>,
    /// The names in the server's own certificate.
    pub cert: PeerIdentity,
    pub client_auth: bool,
    pub loaded_at: SystemTime,
    /// The files' bytes, to tell a real change from a touch.
    pub(crate) fingerprint: Vec<Vec<u8>>,
}

/// The ring crypto provider every configuration is built with.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn fail(flag: &str, path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Tls(format!("{flag} {}: {message}", path.display()))
}

fn read(flag: &str, path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| fail(flag, path, e))
}

/// The certificates in a PEM file; at least one.
pub(crate) fn certificates(flag: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    certificates_in(flag, path, &read(flag, path)?)
}

fn certificates_in(
    flag: &str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| fail(flag, path, format!("not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(fail(flag, path, "no CERTIFICATE block in it"));
    }
    Ok(certs)
}

/// The private key in a PEM file. Errors never quote the file's content.
pub(crate) fn private_key(flag: &str, path: &Path) -> Result<PrivateKeyDer<'static>, Error> {
    private_key_in(flag, path, &read(flag, path)?)
}

fn private_key_in(flag: &str, path: &Path, pem: &[u8]) -> Result<PrivateKeyDer<'static>, Error> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|_| {
        fail(
            flag,
            path,
            "no PEM private key in it (expected a PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE \
             KEY block)",
        )
    })
}

/// Trust anchors from a PEM CA file.
pub(crate) fn roots(flag: &str, path: &Path) -> Result<RootCertStore, Error> {
    roots_from(flag, path, certificates(flag, path)?)
}

fn roots_from(
    flag: &str,
    path: &Path,
    certs: Vec<CertificateDer<'static>>,
) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| fail(flag, path, format!("not a usable CA certificate: {e}")))?;
    }
    Ok(roots)
}

/// Reads `files` and builds the server configuration.
pub(crate) fn load(files: &TlsFiles, client_certs: ClientCerts) -> Result<Loaded, Error> {
    let mut fingerprint = vec![
        read("--tls-cert", &files.cert)?,
        read("--tls-key", &files.key)?,
    ];
    let chain = certificates_in("--tls-cert", &files.cert, &fingerprint[0])?;
    let key = private_key_in("--tls-key", &files.key, &fingerprint[1])?;
    let cert = PeerIdentity::of(&chain[0]).ok_or_else(|| {
        fail(
            "--tls-cert",
            &files.cert,
            "the first certificate does not parse",
        )
    })?;
    let provider = provider();
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let pem = read("--tls-client-ca", path)?;
            let certs = certificates_in("--tls-client-ca", path, &pem)?;
            fingerprint.push(pem);
            let roots = Arc::new(roots_from("--tls-client-ca", path, certs)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            let verifier = match client_certs {
                ClientCerts::Required => verifier,
                ClientCerts::Optional => verifier.allow_unauthenticated(),
            };
            let verifier = verifier
                .build()
                .map_err(|e| fail("--tls-client-ca", path, e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        let message = format!("does not go with the certificate in --tls-cert: {e}");
        fail("--tls-key", &files.key, message)
    })?;
    config.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP1.to_vec()];
    Ok(Loaded {
        config: Arc::new(config),
        cert,
        client_auth: files.client_ca.is_some(),
        loaded_at: SystemTime::now(),
        fingerprint,
    })
}

/// A client configuration trusting `ca`, presenting `identity` (certificate and key files)
/// if given, offering `alpn`.
pub fn client_config(
    ca: &Path,
    identity: Option<(&Path, &Path)>,
    alpn: &[&[u8]],
) -> Result<ClientConfig, Error> {
    let roots = roots("--tls-ca", ca)?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_root_certificates(roots);
    let mut config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = certificates("--tls-cert", cert)?;
            let key_der = private_key("--tls-key", key)?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| fail("--tls-key", key, e))?
        }
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}
