//! Certificates for the TLS tests, made by the tests themselves (rcgen, ECDSA P-256) in a temp
//! directory: never a committed private key.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use tempfile::TempDir;

/// The SPIFFE id (URI SAN) of [`Pki::client_cert`].
pub const CLIENT_SPIFFE: &str = "spiffe://xdsloop.test/ns/e2e/sa/client";
/// The common name of [`Pki::client_cert`]; its DNS SAN is `<CN>.xdsloop.test`.
pub const CLIENT_CN: &str = "e2e-client";

/// A certificate authority that signs leaf certificates.
pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    /// Its certificate, PEM.
    pub pem: String,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca")
            .field("pem", &self.pem)
            .finish_non_exhaustive()
    }
}

impl Ca {
    /// A self-signed CA with common name `name` and a fresh key.
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Self {
            issuer: Issuer::new(params, key),
            pem,
        }
    }

    /// A server certificate for `localhost` and 127.0.0.1 with serial `serial`: (cert, key) PEM.
    pub fn server(&self, serial: u64) -> (String, String) {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        params
            .distinguished_name
            .push(DnType::CommonName, "xdsloop-server");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.serial_number = Some(serial.into());
        self.sign(params)
    }

    /// A client certificate with a SPIFFE URI SAN and a DNS SAN: (cert, key) PEM.
    pub fn client(&self, cn: &str, spiffe: &str) -> (String, String) {
        let mut params = CertificateParams::new(vec![format!("{cn}.xdsloop.test")]).unwrap();
        params
            .subject_alt_names
            .push(SanType::URI(spiffe.try_into().unwrap()));
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// Everything a TLS test needs, as files: the CA, a server certificate signed by it, a client
/// certificate signed by it, and a second CA (untrusted) with a client certificate of its own.
#[derive(Debug)]
pub struct Pki {
    /// The temp directory holding every file below; deleted when the `Pki` drops.
    pub dir: TempDir,
    /// The trusted CA, for a test that needs more certificates (a rotated server one).
    pub ca: Ca,
    /// The trusted CA's certificate, PEM.
    pub ca_file: PathBuf,
    /// The server's certificate (`localhost`, 127.0.0.1), PEM.
    pub server_cert: PathBuf,
    /// The server certificate's private key, PEM.
    pub server_key: PathBuf,
    /// The client's certificate ([`CLIENT_CN`], [`CLIENT_SPIFFE`]), PEM.
    pub client_cert: PathBuf,
    /// The client certificate's private key, PEM.
    pub client_key: PathBuf,
    /// The certificate of a second CA, which nobody trusts, PEM.
    pub other_ca_file: PathBuf,
    /// A client certificate signed by the untrusted CA, which a server must refuse.
    pub rogue_cert: PathBuf,
    /// The rogue certificate's private key, PEM.
    pub rogue_key: PathBuf,
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

impl Pki {
    /// Makes both CAs and every certificate and key, and writes them to a new temp directory.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ca = Ca::new("xdsloop test CA");
        let other = Ca::new("some other CA");
        let (server_cert, server_key) = ca.server(1);
        let (client_cert, client_key) = ca.client(CLIENT_CN, CLIENT_SPIFFE);
        let (rogue_cert, rogue_key) = other.client("rogue", "spiffe://elsewhere/rogue");
        Self {
            ca_file: write(d, "ca.pem", &ca.pem),
            server_cert: write(d, "server.pem", &server_cert),
            server_key: write(d, "server.key", &server_key),
            client_cert: write(d, "client.pem", &client_cert),
            client_key: write(d, "client.key", &client_key),
            other_ca_file: write(d, "other-ca.pem", &other.pem),
            rogue_cert: write(d, "rogue.pem", &rogue_cert),
            rogue_key: write(d, "rogue.key", &rogue_key),
            ca,
            dir,
        }
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}
