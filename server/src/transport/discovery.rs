//! tonic services on the stream state machines. [`Discovery`] starts SotW and Delta streams
//! for any transport; [`crate::transport::ads`] is the Aggregated Discovery Service on top of it. The per-type
//! services (CDS, EDS, LDS, RDS, ...) are the same two calls with their own [`StreamKind`]
//! ([`crate::transport::per_type`]); both answer through `transport::response_body`.

use std::{sync::Arc, time::Instant};

use futures::Stream;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;
use xdsloop_proto::discovery::DeltaDiscoveryRequest;

use crate::{
    admin::registry::{Registry, StreamKind},
    faults::scenario::{Installed, Scenarios},
    faults::stage::FaultStage,
    judge::{Conformance, Mode, nodes::Peer},
    net::{DEFAULT_MAX_REQUEST_BYTES, conn::PeerInfo},
    protocol::delta::DeltaStream,
    protocol::machine::MachineHooks,
    protocol::request::SotwRequest,
    protocol::response::{DeltaResponse, SotwResponse},
    protocol::sotw::SotwStream,
    replay::{self, Replay, ReplayStream},
    snapshot::Snapshot,
    transport::outage::ServerFaults,
    transport::stream::{self, Feeds, OUTBOUND_CAPACITY, StreamKit, tap::Tap},
};

/// The response limit: gRPC's default 4 MiB is far too small for real fleets' CDS/EDS (S13).
/// Requests have their own, smaller limit ([`crate::net::Limits::max_request_bytes`]).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Responses as a gRPC server stream.
pub(crate) type ResponseStream<T> = ReceiverStream<Result<T, Status>>;

/// What every stream needs: the snapshots to serve, the registry to report to, and the signal
/// that ends all streams when the server stops. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    snapshots: watch::Receiver<Arc<Snapshot>>,
    registry: Registry,
    shutdown: watch::Receiver<bool>,
    max_message_bytes: usize,
    scenarios: watch::Receiver<Arc<Installed>>,
    max_request_bytes: usize,
    conformance: Conformance,
    /// `--replay`: every stream serves the recording instead of the snapshots.
    replay: Option<Arc<Replay>>,
    /// The server-wide rules streams report their requests to.
    server_faults: ServerFaults,
}

impl Discovery {
    /// `shutdown` turning true (or its sender dropping) ends every open stream.
    pub(crate) fn new(
        snapshots: watch::Receiver<Arc<Snapshot>>,
        registry: Registry,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Self {
            snapshots,
            registry,
            shutdown,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            scenarios: Scenarios::new().subscribe(),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            conformance: Conformance::default(),
            replay: None,
            server_faults: ServerFaults::default(),
        }
    }

    /// The server-wide rules (`outage`, `when.requested`) every stream reports to.
    pub(crate) fn with_server_faults(mut self, server_faults: ServerFaults) -> Self {
        self.server_faults = server_faults;
        self
    }

    /// How every stream's client is judged (`--conformance`, `--strict`).
    pub(crate) fn with_conformance(mut self, mode: Mode) -> Self {
        self.conformance = Conformance::new(mode);
        self
    }

    /// Serves `replay` on every stream (SotW and Delta, ADS and per-type) instead of the
    /// snapshots.
    pub(crate) fn with_replay(mut self, replay: Option<Arc<Replay>>) -> Self {
        self.replay = replay;
        self
    }

    /// The largest response sent (S13); streams log responses that will not fit.
    pub(crate) fn with_max_message_bytes(mut self, max_message_bytes: usize) -> Self {
        self.max_message_bytes = max_message_bytes;
        self
    }

    /// The fault scenario streams follow (none by default).
    pub(crate) fn with_scenarios(mut self, scenarios: watch::Receiver<Arc<Installed>>) -> Self {
        self.scenarios = scenarios;
        self
    }

    /// The largest request accepted.
    pub(crate) fn with_max_request_bytes(mut self, max_request_bytes: usize) -> Self {
        self.max_request_bytes = max_request_bytes;
        self
    }

    pub(crate) fn max_message_bytes(&self) -> usize {
        self.max_message_bytes
    }

    pub(crate) fn max_request_bytes(&self) -> usize {
        self.max_request_bytes
    }

    /// Starts a SotW stream over `requests` and returns its responses.
    pub(crate) fn sotw<S>(
        &self,
        kind: StreamKind,
        peer: Option<PeerInfo>,
        requests: S,
    ) -> ResponseStream<SotwResponse>
    where
        S: Stream<Item = Result<SotwRequest, Status>> + Send + Unpin + 'static,
    {
        match &self.replay {
            Some(replay) => self.spawn(kind, peer, requests, |_, _| {
                ReplayStream::<replay::Sotw>::new(replay.clone(), kind)
            }),
            None => self.spawn(kind, peer, requests, SotwStream::new),
        }
    }

    /// Starts a Delta stream over `requests` and returns its responses.
    pub(crate) fn delta<S>(
        &self,
        kind: StreamKind,
        peer: Option<PeerInfo>,
        requests: S,
    ) -> ResponseStream<DeltaResponse>
    where
        S: Stream<Item = Result<DeltaDiscoveryRequest, Status>> + Send + Unpin + 'static,
    {
        match &self.replay {
            Some(replay) => self.spawn(kind, peer, requests, |_, _| {
                ReplayStream::<replay::Delta>::new(replay.clone(), kind)
            }),
            None => self.spawn(kind, peer, requests, DeltaStream::new),
        }
    }

    fn spawn<M, S>(
        &self,
        kind: StreamKind,
        peer: Option<PeerInfo>,
        requests: S,
        machine: impl FnOnce(u64, Arc<Snapshot>) -> M,
    ) -> ResponseStream<M::Response>
    where
        M: MachineHooks,
        S: Stream<Item = Result<M::Request, Status>> + Send + Unpin + 'static,
    {
        let addr = peer.as_ref().map(|p| p.addr);
        let kill = peer.as_ref().map(|p| p.kill.clone()).unwrap_or_default();
        let identity = peer.and_then(|p| p.identity);
        let client = identity.as_ref().map(|i| i.summary());
        let tap = Tap::open(&self.registry, kind, addr, identity);
        let id = tap.stream();
        crate::protocol::chatter::stream_line!(stream = id, transport = %kind, peer = ?addr,
            identity = client.as_deref(), "stream opened");
        // Mark the snapshot the machine starts from as seen on this stream's own receiver, so
        // a reload between here and the loop's first poll is still noticed.
        let mut snapshots = self.snapshots.clone();
        let current = snapshots.borrow_and_update().clone();
        let machine = machine(id, current);
        let (tx, rx) = mpsc::channel(OUTBOUND_CAPACITY);
        let feeds = Feeds {
            snapshots,
            shutdown: self.shutdown.clone(),
            max_message_bytes: self.max_message_bytes,
            scenarios: self.scenarios.clone(),
            max_request_bytes: self.max_request_bytes,
        };
        let kit = StreamKit {
            kind,
            tap,
            judge: self.conformance.judge(
                id,
                kind,
                addr.map(|p| Peer {
                    addr: p.to_string().into(),
                    ip: p.ip().to_string().into(),
                }),
            ),
            faults: FaultStage::new(),
            opened: Instant::now(),
            kill,
            max_message_bytes: self.max_message_bytes,
            server: self.server_faults.clone(),
        };
        tokio::spawn(stream::run(machine, requests, feeds, tx, kit));
        ReceiverStream::new(rx)
    }
}
