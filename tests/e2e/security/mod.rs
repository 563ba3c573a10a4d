//! TLS and mTLS on both ends, certificate rotation, the admin access rule, secrets
//! kept out of sight, and what one client may cost. The real server (`app::start` over a temp
//! copy of the demo fixtures) and real clients over loopback; certificates made by the tests.

mod admin;
mod limits;
mod rotation;
mod secrets;
mod tls;

use std::{path::Path, sync::Arc, time::Duration};

use tempfile::TempDir;
use xdsloop_client::{
    ClientConfig, ConnectionReport, Report, Source, transport::tls as client_tls,
};
use xdsloop_server::{
    app::{self, Config, Running},
    status::{StatusDocument, remote},
    tls::{self as server_tls, ALPN_HTTP1, TlsFiles},
};
use xdsloop_tests::{certs::Pki, copy_dir};

use crate::client_support::{WAIT, config, demo_dir};

/// The demo fixtures served over TLS (mTLS with `mtls`), after `tweak` changes the config.
pub async fn serve_tls(pki: &Pki, mtls: bool, tweak: impl FnOnce(&mut Config)) -> Served {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&demo_dir(), dir.path());
    let mut config = Config::new(dir.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.debounce = Duration::from_millis(50);
    config.tls = Some(TlsFiles {
        cert: pki.server_cert.clone(),
        key: pki.server_key.clone(),
        client_ca: mtls.then(|| pki.ca_file.clone()),
    });
    tweak(&mut config);
    let running = app::start(config).await.unwrap_or_else(|e| panic!("{e}"));
    Served { _dir: dir, running }
}

pub struct Served {
    _dir: TempDir,
    pub running: Running,
}

impl Served {
    pub fn addr(&self) -> String {
        self.running.addr.to_string()
    }
}

/// A client config trusting `ca`, presenting `identity` (cert, key) if given.
pub fn tls_client(
    served: &Served,
    source: Source,
    ca: &Path,
    identity: Option<(&Path, &Path)>,
) -> ClientConfig {
    let mut config = config(served.running.addr, source);
    config.tls = Some(client_tls::load(ca, identity, None).unwrap());
    config
}

/// How the tests read `/status` over TLS (from loopback: no token needed).
pub fn admin_access(pki: &Pki, identity: Option<(&Path, &Path)>) -> remote::RemoteAccess {
    let tls = server_tls::client_config(&pki.ca_file, identity, &[ALPN_HTTP1]).unwrap();
    remote::RemoteAccess {
        tls: Some(Arc::new(tls)),
        ..Default::default()
    }
}

/// `/status` over TLS once it satisfies `done` (with the client certificate: the xDS port of
/// an mTLS server takes no connection without one).
pub async fn status_where(
    served: &Served,
    pki: &Pki,
    what: &str,
    done: impl Fn(&StatusDocument) -> bool,
) -> StatusDocument {
    let identity = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let access = admin_access(pki, identity);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let doc = remote::fetch_with(&served.addr(), &access).await.unwrap();
        if done(&doc) {
            return doc;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {doc:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The reason of the next connection failure the client reports.
pub async fn failure(reports: &mut tokio::sync::broadcast::Receiver<Report>) -> String {
    crate::client_support::report(reports, |r| match r {
        Report::Connection(ConnectionReport::ConnectFailed { reason, .. })
        | Report::Connection(ConnectionReport::StreamClosed { reason }) => Some(reason.clone()),
        _ => None,
    })
    .await
}
