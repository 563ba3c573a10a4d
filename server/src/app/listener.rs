//! One HTTP server (gRPC over HTTP/2, and HTTP/1.1) on connections accepted by
//! [`crate::net::incoming`], and its shutdown: stop accepting, let connections deliver what
//! they were handed for a grace period, then close the ones still open.

use std::{net::SocketAddr, time::Duration};

use tokio::{net::TcpListener, sync::watch, task::JoinHandle};
use tonic::service::Routes;
use tracing::warn;

use crate::{
    error::Error,
    net::{
        close::Closer,
        incoming::{Accept, incoming},
    },
};

/// How long a shutdown waits for connections to take their last responses before closing them.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A running HTTP server. Dropping it starts a graceful stop without waiting for it;
/// [`HttpServer::shutdown`] waits, and closes what is left after [`SHUTDOWN_GRACE`].
#[derive(Debug)]
pub(crate) struct HttpServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
    closer: Closer,
}

/// Serves `routes` on the connections `listener` accepts, until `stop` turns true.
/// `max_streams` is each connection's HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`.
pub(crate) fn start(
    listener: TcpListener,
    routes: Routes,
    accept: Accept,
    max_streams: u32,
    stop: (watch::Sender<bool>, watch::Receiver<bool>),
) -> Result<HttpServer, Error> {
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: "the bound listener".into(),
        source,
    })?;
    let closer = accept.closer.clone();
    let connections = incoming(listener, accept);
    let (stop, mut signal) = stop;
    let server = tonic::transport::Server::builder()
        // REST-JSON clients (Envoy's REST config source) and the admin routes speak HTTP/1.1;
        // gRPC keeps HTTP/2.
        .accept_http1(true)
        // tonic's default (none) would lift hyper's limit too: a client could open streams
        // without end on one connection.
        .max_concurrent_streams(max_streams)
        .add_routes(routes)
        .serve_with_incoming_shutdown(connections, async move {
            let _ = signal.wait_for(|stop| *stop).await;
        });
    Ok(HttpServer {
        addr,
        stop,
        task: Some(tokio::spawn(server)),
        closer,
    })
}

impl HttpServer {
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and waits for the open connections to finish; after
    /// [`SHUTDOWN_GRACE`] the ones still open are closed (a client that stopped reading would
    /// hold a graceful shutdown up forever, and its connection's task would outlive the
    /// server in a longer-lived runtime).
    pub(crate) async fn shutdown(mut self) -> Result<(), Error> {
        let _ = self.stop.send(true);
        let Some(mut task) = self.task.take() else {
            return Ok(());
        };
        let result = match tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(e))) => Err(Error::Transport(e.to_string())),
            Ok(Err(e)) => Err(Error::Transport(e.to_string())),
            Err(_) => {
                task.abort();
                warn!(
                    grace = ?SHUTDOWN_GRACE, connections = self.closer.open(),
                    "connections still had undelivered responses at shutdown (a client that stopped reading); closed them"
                );
                Ok(())
            }
        };
        self.closer.close();
        result
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}
