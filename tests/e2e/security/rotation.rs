//! Item 1: certificate rotation without a restart. New connections get the new certificate
//! once the files change, whether they are rewritten in place or renamed into place; a bad
//! file keeps the last good certificate serving.

use std::{path::Path, sync::Arc};

use tokio::net::TcpStream;
use tokio_rustls::{
    TlsConnector,
    rustls::{
        ClientConfig,
        pki_types::{CertificateDer, ServerName, pem::PemObject},
    },
};
use xdsloop_tests::certs::Pki;

use super::*;

/// The certificate a new TLS connection to `served` is shown.
async fn served_certificate(served: &FixtureServer, pki: &Pki) -> CertificateDer<'static> {
    let config: ClientConfig = server_tls::client_config(&pki.ca_file, None, &[b"h2"]).unwrap();
    let tcp = TcpStream::connect(served.addr()).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("the handshake succeeds");
    tls.get_ref().1.peer_certificates().unwrap()[0].clone()
}

fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
}

/// Writes `text` to `path` by writing a temp file beside it and renaming it into place.
fn rename_into_place(path: &Path, text: &str) {
    let temp = path.with_extension("tmp");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

#[tokio::test]
async fn tls_cert_rotation_without_restart() {
    let pki = Pki::new();
    let served = serve_tls(&pki, false, |_| {}).await;
    let first = served_certificate(&served, &pki).await;
    // In place: the key first, then the certificate (a half-written pair is an error that
    // the second write clears).
    let (cert, key) = pki.ca.server(2);
    std::fs::write(&pki.server_key, &key).unwrap();
    std::fs::write(&pki.server_cert, &cert).unwrap();
    let doc = status_where(&served, &pki, "serial 02", |d| {
        let tls = d.tls.as_ref().unwrap();
        tls.cert.identity.serial == "02" && tls.reload_error.is_none()
    })
    .await;
    assert!(doc.tls.unwrap().loads >= 2);
    let second = served_certificate(&served, &pki).await;
    assert_ne!(second, first);
    assert_eq!(second, der(&cert));
    // By rename, as editors and Kubernetes do.
    let (cert, key) = pki.ca.server(3);
    rename_into_place(&pki.server_key, &key);
    rename_into_place(&pki.server_cert, &cert);
    status_where(&served, &pki, "serial 03", |d| {
        let tls = d.tls.as_ref().unwrap();
        tls.cert.identity.serial == "03" && tls.reload_error.is_none()
    })
    .await;
    assert_eq!(served_certificate(&served, &pki).await, der(&cert));
}

#[tokio::test]
async fn tls_bad_rotation_keeps_old_cert() {
    let pki = Pki::new();
    let served = serve_tls(&pki, false, |_| {}).await;
    let first = served_certificate(&served, &pki).await;
    let (_, other_key) = pki.ca.server(9);
    let good_key = std::fs::read_to_string(&pki.server_key).unwrap();
    std::fs::write(&pki.server_key, &other_key).unwrap();
    let doc = status_where(&served, &pki, "the reload error", |d| {
        d.tls.as_ref().unwrap().reload_error.is_some()
    })
    .await;
    let error = doc.tls.unwrap().reload_error.unwrap();
    assert!(error.contains("--tls-key"), "{error}");
    assert!(
        error.contains("does not go with the certificate"),
        "{error}"
    );
    assert!(!error.contains("PRIVATE KEY"), "{error}");
    assert_eq!(
        served_certificate(&served, &pki).await,
        first,
        "the old one serves"
    );
    std::fs::write(&pki.server_key, good_key).unwrap();
    status_where(&served, &pki, "the error cleared", |d| {
        d.tls.as_ref().unwrap().reload_error.is_none()
    })
    .await;
}
