//! `envoy.service.status.v3.ClientStatusDiscoveryService` over gRPC: unary `FetchClientStatus`
//! and the `StreamClientStatus` stream (one answer per request). It shows what `/status` shows,
//! so it is served where the admin routes are ([`crate::admin::Admin::router`]) and behind
//! whatever guards them.

use std::{pin::Pin, sync::Arc};

use futures::{Stream, StreamExt};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};
use xdsloop_proto::{
    Codec,
    csds::{ClientStatusRequest, ClientStatusResponse, Unsupported},
    envoy::envoy::service::status::v3::client_status_discovery_service_server::{
        ClientStatusDiscoveryService, ClientStatusDiscoveryServiceServer,
    },
    redact::Secrets,
};

use crate::{
    admin::{
        access::AdminAccess,
        csds::{build, hide_secrets},
        registry::Registry,
    },
    snapshot::Snapshot,
};

/// CSDS on the registry and the snapshots. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Csds {
    registry: Registry,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    access: AdminAccess,
    /// Decodes resources to hide their secret values, unless `secrets` says to show them.
    codec: Codec,
    secrets: Secrets,
}

impl Csds {
    /// Answering loopback peers and verified client certificates only, until
    /// [`Csds::with_access`] gives it the server's rule (its `--admin-token`); secret values
    /// in the resources it shows hidden, as the Envoy API's codec knows them.
    pub(crate) fn new(registry: Registry, snapshots: watch::Receiver<Arc<Snapshot>>) -> Self {
        Self {
            registry,
            snapshots,
            access: AdminAccess::default(),
            codec: Codec::envoy(),
            secrets: Secrets::Hide,
        }
    }

    /// Shows resources as `/snapshot` does: decoded with `codec` (the user's types too),
    /// secret values shown only with [`Secrets::Show`] (`--show-secrets`).
    pub(crate) fn with_display(mut self, codec: Codec, secrets: Secrets) -> Self {
        self.codec = codec;
        self.secrets = secrets;
        self
    }

    /// Answers whom `access` allows, as the admin routes do.
    pub(crate) fn with_access(mut self, access: AdminAccess) -> Self {
        self.access = access;
        self
    }

    /// The tonic service, to add to a server's gRPC routes.
    pub(crate) fn service(self) -> ClientStatusDiscoveryServiceServer<Self> {
        ClientStatusDiscoveryServiceServer::new(self)
    }

    /// The service alone as axum routes (with the gRPC fallback: merge other routes into it).
    pub(crate) fn router(self) -> axum::Router {
        tonic::service::Routes::new(self.service()).into_axum_router()
    }

    /// Builds the answer off the runtime threads: thousands of streams make it milliseconds of
    /// CPU, as `/status` does.
    async fn answer(&self, request: ClientStatusRequest) -> Result<ClientStatusResponse, Status> {
        let (registry, snapshot) = (self.registry.clone(), self.snapshots.borrow().clone());
        let hide = (self.secrets == Secrets::Hide).then(|| self.codec.clone());
        let built = tokio::task::spawn_blocking(move || {
            let mut response = build(&snapshot, &registry.streams(), &request)?;
            if let Some(codec) = hide {
                hide_secrets(&mut response, &codec);
            }
            Ok::<_, Unsupported>(response)
        });
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
        self.access.check_grpc(&request)?;
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
        self.access.check_grpc(&request)?;
        self.answer(request.into_inner()).await.map(Response::new)
    }
}
