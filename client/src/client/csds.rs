//! `--csds ADDR`: this client's own Client Status Discovery Service (C18), as Envoy and gRPC
//! clients serve theirs, so CSDS tools can read what it holds. `FetchClientStatus` and
//! `StreamClientStatus` answer one `ClientConfig` about this client (none when the request's
//! `node_matchers` select another node).

use std::{net::SocketAddr, pin::Pin};

use futures::{Stream, StreamExt};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status, Streaming};
use xdsloop_proto::csds::{ClientStatusRequest, ClientStatusResponse, node_matches};
use xdsloop_proto::envoy::envoy::service::status::v3::client_status_discovery_service_server::{
    ClientStatusDiscoveryService, ClientStatusDiscoveryServiceServer,
};

use crate::client::StatusHandle;
use crate::error::ClientError;

/// The CSDS service over a client's [`StatusHandle`].
#[derive(Debug, Clone)]
pub struct Csds {
    client: StatusHandle,
}

impl Csds {
    /// The CSDS service for the client behind `client`.
    pub fn new(client: StatusHandle) -> Self {
        Self { client }
    }

    async fn answer(&self, request: ClientStatusRequest) -> Result<ClientStatusResponse, Status> {
        let contents = !request.exclude_resource_contents;
        let stopped = |e: ClientError| Status::unavailable(e.to_string());
        let config = self.client.client_config(contents).await.map_err(stopped)?;
        let node = config
            .node
            .as_ref()
            .map(|n| n.id.as_str())
            .unwrap_or_default();
        let wanted = node_matches(&request.node_matchers, node)
            .map_err(|unsupported| Status::unimplemented(unsupported.0))?;
        let config = if wanted { vec![config] } else { Vec::new() };
        Ok(ClientStatusResponse { config })
    }
}

type Answers = Pin<Box<dyn Stream<Item = Result<ClientStatusResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ClientStatusDiscoveryService for Csds {
    type StreamClientStatusStream = Answers;

    async fn stream_client_status(
        &self,
        request: Request<Streaming<ClientStatusRequest>>,
    ) -> Result<Response<Answers>, Status> {
        let csds = self.clone();
        let answers = request.into_inner().then(move |request| {
            let csds = csds.clone();
            async move { csds.answer(request?).await }
        });
        Ok(Response::new(Box::pin(answers)))
    }

    async fn fetch_client_status(
        &self,
        request: Request<ClientStatusRequest>,
    ) -> Result<Response<ClientStatusResponse>, Status> {
        self.answer(request.into_inner()).await.map(Response::new)
    }
}

/// A running CSDS server. Dropping it stops the server.
#[derive(Debug)]
pub struct CsdsServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl CsdsServer {
    /// The bound address (the real port when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and waits for the server to end.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for CsdsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Binds `listen` (port 0 picks a free port) and serves CSDS about `client` there.
pub async fn serve(listen: SocketAddr, client: StatusHandle) -> Result<CsdsServer, ClientError> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| ClientError::Argument(format!("--csds {listen}: cannot listen there: {e}")))?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let service = ClientStatusDiscoveryServiceServer::new(Csds::new(client));
    let server = tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), async {
            let _ = stopped.await;
        });
    let task = tokio::spawn(async move {
        if let Err(e) = server.await {
            tracing::warn!(error = %e, "the CSDS server stopped");
        }
    });
    tracing::info!(%addr, "CSDS listening on {addr}");
    Ok(CsdsServer {
        addr,
        stop: Some(stop),
        task,
    })
}
