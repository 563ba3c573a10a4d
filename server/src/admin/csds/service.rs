//! `envoy.service.status.v3.ClientStatusDiscoveryService` over gRPC: unary `FetchClientStatus`
//! and the `StreamClientStatus` stream (one answer per request). It shows what `/status` shows,
//! so it is served where the admin routes are ([`crate::admin::Admin::router`]) and behind
//! whatever guards them.

use std::{pin::Pin, sync::Arc};

use futures::{Stream, StreamExt};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};
use xdsloop_proto::{
    csds::{ClientStatusRequest, ClientStatusResponse},
    envoy::envoy::service::status::v3::client_status_discovery_service_server::{
        ClientStatusDiscoveryService, ClientStatusDiscoveryServiceServer,
    },
};

use crate::{Snapshot, admin::csds::build, admin::registry::Registry};

/// CSDS on the registry and the snapshots. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Csds {
    registry: Registry,
    snapshots: watch::Receiver<Arc<Snapshot>>,
}

impl Csds {
    pub fn new(registry: Registry, snapshots: watch::Receiver<Arc<Snapshot>>) -> Self {
        Self {
            registry,
            snapshots,
        }
    }

    /// The tonic service, to add to a server's gRPC routes.
    pub fn service(self) -> ClientStatusDiscoveryServiceServer<Self> {
        ClientStatusDiscoveryServiceServer::new(self)
    }

    /// The service alone as axum routes (with the gRPC fallback: merge other routes into it).
    pub fn router(self) -> axum::Router {
        tonic::service::Routes::new(self.service()).into_axum_router()
    }

    /// Builds the answer off the runtime threads: thousands of streams make it milliseconds of
    /// CPU, as `/status` does.
    async fn answer(&self, request: ClientStatusRequest) -> Result<ClientStatusResponse, Status> {
        let (registry, snapshot) = (self.registry.clone(), self.snapshots.borrow().clone());
        let built =
            tokio::task::spawn_blocking(move || build(&snapshot, &registry.streams(), &request));
        match built.await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(unsupported)) => Err(Status::unimplemented(unsupported.0)),
            Err(e) => Err(Status::internal(e.to_string())),
        }
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
