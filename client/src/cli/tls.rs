//! The TLS flags the client and the fleet share: the server's CA, a client certificate for
//! mTLS, the name to check.

use std::path::PathBuf;

use clap::Args;

use crate::config::ClientTls;
use crate::error::ClientError;
use crate::transport::tls;

#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// Connect over TLS, trusting this PEM CA for the server's certificate (the server runs
    /// with --tls-cert). `--server` may then be `HOST:PORT` or `https://HOST:PORT`.
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub tls_ca: Option<PathBuf>,
    /// Present this PEM client certificate (mTLS: the server runs with --tls-client-ca).
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"], help_heading = "TLS")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert", help_heading = "TLS")]
    pub tls_key: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the host of --server).
    #[arg(long, value_name = "NAME", requires = "tls_ca", help_heading = "TLS")]
    pub tls_server_name: Option<String>,
}

impl TlsArgs {
    /// The files read and checked; `None` without `--tls-ca`.
    pub fn load(&self) -> Result<Option<ClientTls>, ClientError> {
        let Some(ca) = &self.tls_ca else {
            return Ok(None);
        };
        let identity = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        tls::load(ca, identity, self.tls_server_name.clone()).map(Some)
    }
}
