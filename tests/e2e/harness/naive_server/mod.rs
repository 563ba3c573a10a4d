//! A deliberately small ADS server (SotW and Delta, real tonic on 127.0.0.1:0) over a fixture
//! directory, with one [`Bug`] switched on: the broken control planes `xdsloop-client check`
//! must catch. With [`Bug::None`] it passes every check, so a FAIL with the bug on is the
//! bug's doing (each naive test runs its check both ways).
//!
//! Or with one [`Legal`] choice: a behaviour the xDS protocol page allows that differs from
//! the plain one (and from xdsloop-server's), under which no check may FAIL.
//!
//! Each bug is a mistake a real control plane can make, and each choice one a correct control
//! plane makes; none is a special case for the suite's requests.

mod delta;
mod machine;
mod sotw;
mod store;

use std::{net::SocketAddr, path::Path, sync::Arc};

use tokio::{
    net::TcpListener,
    sync::{mpsc, oneshot, watch},
    task::JoinHandle,
};
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::{Request, Response, Status, Streaming, transport::Server};
use xdsloop_proto::{
    discovery::{
        DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
    },
    envoy::envoy::service::discovery::v3::aggregated_discovery_service_server::{
        AggregatedDiscoveryService, AggregatedDiscoveryServiceServer,
    },
};

use self::store::Set;

/// The one mistake the server makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    None,
    /// The nonce is the version: a resend of unchanged content repeats it (S1).
    NonceIsVersion,
    /// Resources are wrapped in `Any`s with the v2 type URL (S1).
    AnyTypeV2,
    /// Responses name the v2 type URL while the resources are v3 (S1).
    ResponseTypeV2,
    /// Every ACK is answered with the same content again (S3).
    ResendOnAck,
    /// Every NACK is answered with the rejected content again (S3).
    ResendOnNack,
    /// Requests with an old nonce are served like current ones (S4).
    AnswerStale,
    /// Only a type's first request is answered; a widened one is not (S5).
    IgnoreWidening,
    /// A name sent before on the stream and asked for again after [] is not sent again (S5).
    ReaddedNotResent,
    /// `*` is treated as a resource name (S6).
    StarIsLiteral,
    /// An empty name list means wildcard even after explicit names (S6).
    EmptyIsWildcard,
    /// An ACK of one type pushes every subscribed type again (S7).
    PushAllOnAck,
    /// Delta resources go out without a version (S8).
    DeltaNoVersions,
    /// Delta sends every subscribed resource on each change (S8).
    DeltaResendAll,
    /// Delta never reports a subscribed name that does not exist (S8).
    DeltaSilentMissing,
    /// Delta ignores `initial_resource_versions` (S9).
    DeltaIgnoreInitial,
    /// Delta: a name subscribed again on a live stream that holds it is not sent (S9).
    DeltaResubscribeIgnored,
    /// Delta: a declared name counts as held whatever version it declares (S9).
    DeltaTrustAnyDeclared,
    /// An unknown type URL ends the stream (S12).
    UnknownTypeCloses,
    /// A request that does not decode takes every stream down (S12).
    MalformedKillsAll,
    /// The fixtures are read once at start (FX: no push on edit).
    IgnoreEdits,
    /// Endpoints are pushed before the clusters of the same update (S11).
    DependentsFirst,
    /// Delta unsubscriptions are ignored (S10).
    IgnoreUnsubscribe,
    /// A fixture file that does not decode is left out instead of keeping the last good set.
    SkipBadFiles,
}

/// A choice the protocol allows, made by an otherwise plain double.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Legal {
    Plain,
    /// A SotW request that narrows the interest is answered with what is left (EDS [] gets an
    /// empty response): "an empty DiscoveryResponse is effectively a no-op" for EDS.
    AnswerNarrowing,
    /// SotW EDS a resource per response: a widened request is answered with the added names
    /// only ("Grouping Resources into Responses").
    GroupPerResource,
    /// Delta: a new stream's names declared in `initial_resource_versions` at their current
    /// version are not sent, even when subscribed (what Envoy's reconnect sends).
    TrustDeclared,
    /// Removals parents first: the CDS response without a cluster before the EDS one.
    RemovalsParentsFirst,
    /// DeltaAggregatedResources answers UNIMPLEMENTED.
    DeltaUnimplemented,
    /// A Delta stream is ended at its first request.
    DeltaReset,
}

/// The running double.
pub struct NaiveServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
    loader: JoinHandle<()>,
}

impl NaiveServer {
    /// Serves the fixture files under `dir` (read again whenever they change) with `bug`.
    pub async fn start(dir: &Path, bug: Bug) -> Self {
        Self::serve(dir, bug, Legal::Plain).await
    }

    /// Serves the fixture files under `dir` correctly, making the choice `legal`.
    pub async fn start_legal(dir: &Path, legal: Legal) -> Self {
        Self::serve(dir, Bug::None, legal).await
    }

    async fn serve(dir: &Path, bug: Bug, legal: Legal) -> Self {
        let (set, loader) = store::watch(dir.to_path_buf(), bug);
        let (kill, _) = watch::channel(false);
        let naive = Naive {
            bug,
            legal,
            set,
            kill: Arc::new(kill),
        };
        let service = AggregatedDiscoveryServiceServer::new(naive)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let incoming = TcpListenerStream::new(listener);
            let stopped = async {
                let _ = stopped.await;
            };
            Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, stopped)
                .await
                .expect("the naive server runs");
        });
        Self {
            addr,
            stop: Some(stop),
            server,
            loader,
        }
    }
}

impl Drop for NaiveServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.loader.abort();
        self.server.abort();
    }
}

struct Naive {
    bug: Bug,
    legal: Legal,
    set: watch::Receiver<Arc<Set>>,
    /// Set by a stream that met a malformed request under [`Bug::MalformedKillsAll`].
    kill: Arc<watch::Sender<bool>>,
}

/// Each stream's responses wait here for tonic; a few at a time.
const RESPONSES: usize = 16;

type Out<T> = ReceiverStream<Result<T, Status>>;

#[tonic::async_trait]
impl AggregatedDiscoveryService for Naive {
    type StreamAggregatedResourcesStream = Out<DiscoveryResponse>;
    type DeltaAggregatedResourcesStream = Out<DeltaDiscoveryResponse>;

    async fn stream_aggregated_resources(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Out<DiscoveryResponse>>, Status> {
        let (tx, rx) = mpsc::channel(RESPONSES);
        let machine = sotw::Sotw::new(self.bug, self.legal);
        let (set, kill) = (self.set.clone(), self.kill.clone());
        tokio::spawn(machine::run(
            machine,
            request.into_inner(),
            set,
            kill,
            self.bug,
            tx,
        ));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn delta_aggregated_resources(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Out<DeltaDiscoveryResponse>>, Status> {
        if self.legal == Legal::DeltaUnimplemented {
            return Err(Status::unimplemented("naive server: no Delta"));
        }
        let (tx, rx) = mpsc::channel(RESPONSES);
        let machine = delta::Delta::new(self.bug, self.legal);
        let (set, kill) = (self.set.clone(), self.kill.clone());
        tokio::spawn(machine::run(
            machine,
            request.into_inner(),
            set,
            kill,
            self.bug,
            tx,
        ));
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}
