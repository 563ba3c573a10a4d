//! The command-line flags for TLS, admin access, secrets and limits: the server's, and the
//! ones `xdsloop-server status` reaches a protected admin endpoint with. Here rather than in
//! `main.rs` so the binary stays a thin parser and the mapping to [`Config`] is tested.

use std::{path::PathBuf, sync::Arc};

use clap::Args;
use xdsloop_proto::redact::Secrets;

use crate::{
    admin::status::remote::RemoteAccess,
    app::Config,
    error::Error,
    net::{
        DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_STREAMS_PER_CONNECTION,
        tls::{self, ALPN_HTTP1, TlsFiles},
    },
};

/// The server's security and limit flags.
#[derive(Debug, Clone, Args)]
pub struct SecurityArgs {
    /// Serve the xDS port (gRPC, REST-JSON and the admin routes) over TLS with this PEM
    /// certificate chain. The files are watched: a new certificate is used for new
    /// connections without a restart.
    #[arg(long, value_name = "FILE", requires = "tls_key", help_heading = "TLS")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert", help_heading = "TLS")]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by this PEM CA (mTLS). Each stream's verified
    /// identity (subject CN, URI and DNS SANs) shows in /status and the log.
    #[arg(long, value_name = "FILE", requires = "tls_cert", help_heading = "TLS")]
    pub tls_client_ca: Option<PathBuf>,
    /// /status and /snapshot answer loopback peers, verified client certificates, and
    /// requests with `Authorization: Bearer TOKEN`; everyone else gets 401. /healthz and xDS
    /// stay open. Prefer the environment variable: a flag shows in `ps`.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "XDSLOOP_ADMIN_TOKEN",
        hide_env_values = true,
        help_heading = "Admin access"
    )]
    pub admin_token: Option<String>,
    /// Show secret values (SDS private keys, passwords, session ticket keys, generic secrets)
    /// in /snapshot; they are shown as `[redacted, N bytes]` otherwise. The xDS wire always
    /// carries them.
    #[arg(long, help_heading = "Admin access")]
    pub show_secrets: bool,
    /// Largest request accepted (gRPC message or REST body), in bytes; a larger one ends its
    /// stream with RESOURCE_EXHAUSTED (REST: 413) before it is read.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_REQUEST_BYTES, help_heading = "Limits")]
    pub max_request_bytes: usize,
    /// HTTP/2 streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STREAMS_PER_CONNECTION, help_heading = "Limits")]
    pub max_streams_per_connection: u32,
    /// Connections open at once, at least 1; more are refused as they arrive (a plaintext
    /// client is told why, an HTTP/2 GOAWAY or an HTTP 503) and counted in /status. There is
    /// no "unlimited": give a number above what the host's file descriptors allow.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS,
        value_parser = at_least_one, help_heading = "Limits")]
    pub max_connections: usize,
}

/// `--max-connections`: 0 would refuse every client.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err(
            "0 would refuse every connection: give at least 1 (there is no \
                      \"unlimited\": give a number above what the host allows open)"
                .into(),
        ),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

impl SecurityArgs {
    /// Writes the flags into `config`.
    pub fn apply(self, config: &mut Config) {
        if let (Some(cert), Some(key)) = (self.tls_cert, self.tls_key) {
            config.tls = Some(TlsFiles {
                cert,
                key,
                client_ca: self.tls_client_ca,
            });
        }
        config.admin_token = self.admin_token;
        config.secrets = if self.show_secrets {
            Secrets::Show
        } else {
            Secrets::Hide
        };
        config.limits.max_request_bytes = self.max_request_bytes;
        config.limits.max_streams_per_connection = self.max_streams_per_connection;
        config.limits.max_connections = self.max_connections;
    }
}

/// How `xdsloop-server status` reaches a server with TLS or an admin token.
#[derive(Debug, Clone, Args)]
pub struct RemoteArgs {
    /// The server uses TLS: trust this PEM CA for its certificate.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Present this client certificate (a server with --tls-client-ca lets verified clients
    /// read the admin data from anywhere).
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the host of --server).
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    pub tls_server_name: Option<String>,
    /// The server's --admin-token, sent as `Authorization: Bearer`.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "XDSLOOP_ADMIN_TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,
}

impl RemoteArgs {
    /// How to reach the admin routes these flags describe: the CA to trust, the client certificate
    /// and the bearer token; an unreadable file is an error naming its flag.
    pub fn access(&self) -> Result<RemoteAccess, Error> {
        let identity = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        let tls = match &self.tls_ca {
            Some(ca) => Some(Arc::new(tls::client_config(ca, identity, &[ALPN_HTTP1])?)),
            None => None,
        };
        Ok(RemoteAccess {
            tls,
            server_name: self.tls_server_name.clone(),
            token: self.admin_token.clone(),
        })
    }
}
