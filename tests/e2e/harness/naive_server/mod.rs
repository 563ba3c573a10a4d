//! A deliberately small xDS server (ADS and the CDS/EDS/LDS/RDS services, SotW and Delta, real
//! tonic on 127.0.0.1:0) over a fixture directory, with one [`Bug`] switched on: the broken
//! control planes `xdsloop-client check` must catch, each breaking one sentence of the spec (a
//! few break two, and say which). With [`Bug::None`] it passes every check.
//!
//! Or with one [`Legal`] choice: a behaviour the spec allows that differs from the plain one
//! (and from xdsloop-server's), under which no check may FAIL.
//!
//! Each bug is a mistake a real control plane can make, and each choice one a correct control
//! plane makes; none is a special case for the suite's requests.

mod delta;
mod machine;
mod services;
mod sotw;
mod store;

use std::{net::SocketAddr, path::Path, sync::Arc};

use tokio::{
    net::TcpListener,
    sync::{oneshot, watch},
    task::JoinHandle,
};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::Server;

use self::store::Set;

/// The one mistake the server makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bug {
    None,
    /// The nonce is the version: a response of unchanged content repeats it (basic-protocol.4).
    NonceIsVersion,
    /// Resources are wrapped in `Any`s with the v2 type URL (proto.discovery-response.1).
    AnyTypeV2,
    /// Responses name the v2 type URL while the resources are v3 (proto.discovery-response.1).
    ResponseTypeV2,
    /// Every ACK is answered with the same content again: a push storm (resource-update.1).
    ResendOnAck,
    /// Every NACK is answered with the rejected content again (resource-update.1).
    ResendOnNack,
    /// An ACK of one type pushes every subscribed type again (resource-update.1).
    PushAllOnAck,
    /// SotW requests with an old nonce are served like current ones (resource-updates.3).
    AnswerStale,
    /// Only a type's first request is answered; a widened one is not (resource-hints.4).
    IgnoreWidening,
    /// A name sent before on the stream and asked for again after [] is not sent again
    /// (resource-hints.4).
    ReaddedNotResent,
    /// `*` is treated as a resource name (resource-hints.7).
    StarIsLiteral,
    /// An empty name list means wildcard even after explicit names (resource-hints.8).
    EmptyIsWildcard,
    /// `[a]` after `[*, a]` keeps the wildcard (resource-hints.11).
    StarStays,
    /// LDS/CDS responses hold only what is new, not the full state (grouping.2, grouping.3).
    PartialState,
    /// A SotW response lists its first resource twice (duplicate-names.1).
    DuplicateNames,
    /// A first request that carries a version_info (a client coming back) is not answered
    /// (ack-nack.3).
    SkipResumed,
    /// EDS is answered on the first stream that asks for it only (as a server that believes
    /// the node holds what it once sent): a later stream's first EDS request
    /// (basic-protocol.1), named resources (resource-hints.2), endpoints during warming
    /// (resource-warming.1), a new Delta stream's subscription (proto.delta-request.5), a
    /// missing name on Delta (delta-resource-not-existed.1) and a name created later
    /// (resource-not-existed.3) all go unanswered.
    SilentEds,
    /// Delta never reports a subscribed name that does not exist (delta-resource-not-existed.1;
    /// and delta-unsubscribe.6, which asks for exactly that report).
    DeltaSilentMissing,
    /// Delta: a name subscribed again on a live stream that holds it is not sent
    /// (delta-subscribe.3, in resource-hints.4/re-added).
    DeltaResubscribeIgnored,
    /// Delta: a declared name counts as held whatever version it declares
    /// (proto.delta-request.5).
    DeltaTrustAnyDeclared,
    /// Delta requests with a superseded nonce are ignored, subscriptions and all (delta.6).
    DeltaStaleIgnored,
    /// Delta: unsubscribing a name never subscribed ends the stream (delta-unsubscribe.4).
    DeltaPhantomCloses,
    /// Delta: unsubscribing a name named beside the wildcard is not answered when the name
    /// does not exist (delta-unsubscribe.6).
    DeltaWildcardUnsubscribeSilent,
    /// Delta resources go out without their name (resource-names.1).
    DeltaNoNames,
    /// An unknown type URL ends the stream (rpc-services.1).
    UnknownTypeCloses,
    /// A request that does not decode takes every open stream down (rpc-services.1).
    MalformedKillsAll,
    /// The first CDS request on an ADS stream is also answered with LDS, never asked for
    /// (rpc-services.1).
    PushUnasked,
    /// The fixtures are read once at start: a name asked for before it exists is never pushed
    /// (resource-not-existed.3), nor a wildcard stream's new resources (proto.delta-request.4).
    IgnoreEdits,
    /// A subscribed name that does not exist is forgotten: its creation is not pushed
    /// (resource-not-existed.3).
    ForgetMissing,
    /// The SotW version never changes (ack-nack.1).
    FixedVersion,
    /// Endpoints are pushed before the clusters of the same update, routes before listeners
    /// (eventual-consistency.*).
    DependentsFirst,
    /// A fixture file that does not decode is left out instead of keeping the last good set
    /// (xdsloop.bad-edit-keeps-last-good).
    SkipBadFiles,
}

/// A choice the protocol allows, made by an otherwise plain double.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Legal {
    Plain,
    /// A SotW request that narrows the interest is answered with what is left (EDS [] gets an
    /// empty response): "an empty DiscoveryResponse is effectively a no-op" for EDS.
    AnswerNarrowing,
    /// SotW EDS/RDS a resource per response: a widened request is answered with the added
    /// names only ("Grouping Resources into Responses").
    GroupPerResource,
    /// Delta: a new stream's names declared in `initial_resource_versions` at their current
    /// version are not sent, even when subscribed (what Envoy's reconnect sends).
    TrustDeclared,
    /// Delta: `initial_resource_versions` ignored, everything sent again on a new stream
    /// (servers "may" skip what the client held, ack-nack.3; they need not).
    IgnoreDeclared,
    /// Delta: every resource of the type goes out again with each change (delta.1: a server
    /// only *needs* to send what changed).
    ResendAll,
    /// Delta: changes of unsubscribed names are still pushed ("can also send updates for
    /// resources the client has not subscribed to", proto.delta-request.4).
    PushUnsubscribed,
    /// A new SotW stream's wildcard LDS/CDS request at the current version gets no response
    /// (the optimisation ack-nack.3 allows when the only subscription is a wildcard).
    SkipResumedWildcard,
    /// Removals parents first: the CDS response without a cluster before the EDS one.
    RemovalsParentsFirst,
    /// Every resource changes every 150 ms (an unknown field appended, a new version): pushes
    /// of every type at any moment, crossing every request.
    Churn,
    /// DeltaAggregatedResources (and the per-type Delta methods) answer UNIMPLEMENTED.
    DeltaUnimplemented,
    /// A Delta stream is ended at its first request.
    DeltaReset,
    /// Only ADS: the per-type services answer UNIMPLEMENTED.
    AdsOnly,
}

/// What every stream of one server shares.
#[derive(Clone)]
pub(super) struct Shared {
    pub bug: Bug,
    pub legal: Legal,
    pub set: watch::Receiver<Arc<Set>>,
    /// Bumped by a stream that met a malformed request under [`Bug::MalformedKillsAll`]: the
    /// streams open at that moment die.
    pub kill: Arc<watch::Sender<u64>>,
    /// How many streams asked for EDS ([`Bug::SilentEds`] answers the first only).
    pub eds_streams: Arc<std::sync::atomic::AtomicU64>,
}

/// The running double.
pub(crate) struct NaiveServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
    loader: JoinHandle<()>,
}

impl NaiveServer {
    /// Serves the fixture files under `dir` (read again whenever they change) with `bug`.
    pub(crate) async fn start(dir: &Path, bug: Bug) -> Self {
        Self::serve(dir, bug, Legal::Plain).await
    }

    /// Serves the fixture files under `dir` correctly, making the choice `legal`.
    pub(crate) async fn start_legal(dir: &Path, legal: Legal) -> Self {
        Self::serve(dir, Bug::None, legal).await
    }

    async fn serve(dir: &Path, bug: Bug, legal: Legal) -> Self {
        let (set, loader) = store::watch(dir.to_path_buf(), bug, legal == Legal::Churn);
        let (kill, _) = watch::channel(0);
        let shared = Shared {
            bug,
            legal,
            set,
            kill: Arc::new(kill),
            eds_streams: Arc::default(),
        };
        let router = services::router(Server::builder(), shared);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let incoming = TcpListenerStream::new(listener);
            let stopped = async {
                let _ = stopped.await;
            };
            router
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
