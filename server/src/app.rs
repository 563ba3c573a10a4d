//! Wiring: bind the listener, serve ADS on a `watch` of snapshots, shut down cleanly.
//!
//! [`serve`] runs the gRPC server on any snapshot source (tests, benchmarks, fleets);
//! `start` adds the fixture watcher in front of it.

use std::{net::SocketAddr, sync::Arc};

use tokio::{net::TcpListener, sync::watch, task::JoinHandle};
use tokio_stream::{StreamExt, wrappers::TcpListenerStream};
use tracing::info;

use crate::{
    Error, Snapshot,
    registry::Registry,
    service::{Ads, Discovery},
};

/// A running gRPC server. Dropping it stops the server without waiting; [`shutdown`] waits.
///
/// [`shutdown`]: GrpcServer::shutdown
#[derive(Debug)]
pub struct GrpcServer {
    addr: SocketAddr,
    registry: Registry,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
}

impl GrpcServer {
    /// The bound address (the real port when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Open streams and their per-type state.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Ends every stream, stops accepting, and waits for the server to finish.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        let _ = self.stop.send(true);
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        match task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::Transport(e.to_string())),
            Err(e) => Err(Error::Transport(e.to_string())),
        }
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Binds `listen` (port 0 picks a free port) and serves ADS (SotW and Delta) from
/// `snapshots`, with gRPC message limits of `max_message_bytes` both ways (S13).
pub async fn serve(
    listen: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    max_message_bytes: usize,
) -> Result<GrpcServer, Error> {
    let bind_error = |source| Error::Bind {
        addr: listen.to_string(),
        source,
    };
    let listener = TcpListener::bind(listen).await.map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    let registry = Registry::new();
    let (stop, stopped) = watch::channel(false);
    let discovery = Discovery::new(snapshots, registry.clone(), stopped.clone());
    let ads = Ads::new(discovery).into_server(max_message_bytes);
    // xDS pushes are small writes that should leave at once, not wait for Nagle.
    let incoming = TcpListenerStream::new(listener).map(|conn| {
        if let Ok(stream) = &conn {
            let _ = stream.set_nodelay(true);
        }
        conn
    });
    let mut signal = stopped;
    let server = tonic::transport::Server::builder()
        .add_service(ads)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = signal.wait_for(|stop| *stop).await;
        });
    let task = tokio::spawn(server);
    info!(%addr, "xDS server listening (ADS: SotW and Delta)");
    Ok(GrpcServer {
        addr,
        registry,
        stop,
        task: Some(task),
    })
}
