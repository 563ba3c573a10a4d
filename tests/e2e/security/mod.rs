//! TLS and mTLS on both ends, certificate rotation, the admin access rule, secrets
//! kept out of sight, and what one client may cost. The real server (`app::start` over a temp
//! copy of the demo fixtures) and real clients over loopback; certificates made by the tests.

mod admin;
mod limits;
mod rotation;
mod secrets;
mod tls;

use std::{path::Path, sync::Arc};

use tempfile::TempDir;
use xdsloop_client::{ClientConfig, ConnectionReport, Report, Source, load_tls};
use xdsloop_server::{
    app::Config,
    status::{StatusDocument, remote},
    testkit::poll_until,
    tls::{self as server_tls, ALPN_HTTP1, TlsFiles},
};
use xdsloop_tests::{certs::Pki, copy_dir};

use crate::client_support::{FixtureServer, WAIT, config, demo_dir};

/// The demo fixtures served over TLS (mTLS with `mtls`), after `tweak` changes the config.
pub(crate) async fn serve_tls(
    pki: &Pki,
    mtls: bool,
    tweak: impl Fn(&mut Config) + Send + Sync + 'static,
) -> FixtureServer {
    let files = TlsFiles {
        cert: pki.server_cert.clone(),
        key: pki.server_key.clone(),
        client_ca: mtls.then(|| pki.ca_file.clone()),
    };
    FixtureServer::demo_with(|server| server.tls(files).configure(tweak)).await
}

/// A client config trusting `ca`, presenting `identity` (cert, key) if given.
pub(crate) fn tls_client(
    served: &FixtureServer,
    source: Source,
    ca: &Path,
    identity: Option<(&Path, &Path)>,
) -> ClientConfig {
    let mut config = config(served.addr(), source);
    config.tls = Some(load_tls(ca, identity, None).unwrap());
    config
}

/// How the tests read `/status` over TLS (from loopback: no token needed).
pub(crate) fn admin_access(pki: &Pki, identity: Option<(&Path, &Path)>) -> remote::RemoteAccess {
    let tls = server_tls::client_config(&pki.ca_file, identity, &[ALPN_HTTP1]).unwrap();
    remote::RemoteAccess {
        tls: Some(Arc::new(tls)),
        ..Default::default()
    }
}

/// `/status` over TLS once it satisfies `done` (with the client certificate: the xDS port of
/// an mTLS server takes no connection without one).
pub(crate) async fn status_where(
    served: &FixtureServer,
    pki: &Pki,
    what: &str,
    done: impl Fn(&StatusDocument) -> bool,
) -> StatusDocument {
    let identity = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let access = admin_access(pki, identity);
    let addr = served.addr().to_string();
    let found = poll_until(what, WAIT, async || {
        let doc = remote::fetch_with(&addr, &access).await.unwrap();
        if done(&doc) {
            Ok(doc)
        } else {
            Err(format!("{doc:#?}"))
        }
    });
    found.await.unwrap_or_else(|e| panic!("{e}"))
}

/// The reason of the next connection failure the client reports.
pub(crate) async fn failure(reports: &mut tokio::sync::broadcast::Receiver<Report>) -> String {
    crate::client_support::report(reports, |r| match r {
        Report::Connection(ConnectionReport::ConnectFailed { reason, .. })
        | Report::Connection(ConnectionReport::StreamClosed { reason }) => Some(reason.clone()),
        _ => None,
    })
    .await
}
