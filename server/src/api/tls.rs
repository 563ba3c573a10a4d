//! TLS on the xDS port: the files a server serves with ([`TlsFiles`], `--tls-cert`,
//! `--tls-key`, `--tls-client-ca`), and a client configuration that trusts a CA, for tests
//! and tools that talk to such a server.
pub use crate::net::tls::{ALPN_H2, ALPN_HTTP1, TlsFiles, client_config};
