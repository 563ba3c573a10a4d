//! Raw ADS streams for the checks, each on a connection of its own: send exactly the requests
//! a check scripts (stale nonces and garbage included), receive with a deadline, or collect
//! what arrives in a quiet window. Nothing here decides anything about the protocol.

mod requests;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::timeout;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};
use tonic::{Status, Streaming};
use xdsloop_proto::discovery::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse, Node,
};
use xdsloop_proto::envoy::envoy::service::cluster::v3::cluster_discovery_service_client::ClusterDiscoveryServiceClient as Cds;
use xdsloop_proto::envoy::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient as Ads;
use xdsloop_proto::envoy::envoy::service::endpoint::v3::endpoint_discovery_service_client::EndpointDiscoveryServiceClient as Eds;
use xdsloop_proto::envoy::envoy::service::listener::v3::listener_discovery_service_client::ListenerDiscoveryServiceClient as Lds;
use xdsloop_proto::envoy::envoy::service::route::v3::route_discovery_service_client::RouteDiscoveryServiceClient as Rds;
use xdsloop_proto::type_url;

use crate::ClientError;
use crate::config::ClientTls;
use crate::transport::{self, tls};

/// How long opening a connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A check sends a handful of requests at a time; this only absorbs them while the stream opens.
const REQUEST_QUEUE: usize = 16;
/// How long a request may wait for room in the queue (a server that stopped reading), and how
/// long a closed call may take to deliver its status.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// A tonic client of `$client` on a connection of its own, with the suite's message limits.
macro_rules! client {
    ($target:expr, $client:ty) => {
        <$client>::new($target.channel())
            .max_decoding_message_size($target.max_message_bytes)
            .max_encoding_message_size($target.max_message_bytes)
    };
}

/// Where the server is, how to reach it and who the suite says it is.
#[derive(Clone, Debug)]
pub(super) struct Target {
    endpoint: Endpoint,
    /// For explaining a TLS failure in words.
    pub tls: Option<ClientTls>,
    pub node_id: String,
    pub max_message_bytes: usize,
}

impl Target {
    pub(super) fn new(
        server: &str,
        node_id: &str,
        max_message_bytes: usize,
        tls: Option<ClientTls>,
    ) -> Result<Self, ClientError> {
        let endpoint = transport::endpoint(server, CONNECT_TIMEOUT, tls.as_ref())?;
        Ok(Self {
            endpoint,
            tls,
            node_id: node_id.to_string(),
            max_message_bytes,
        })
    }

    pub(super) fn uri(&self) -> String {
        self.endpoint.uri().to_string()
    }

    /// Connects once (TCP, and the TLS handshake with TLS): a refused connection or a
    /// certificate either side rejects is an error before any check runs.
    pub(super) async fn connect(&self) -> Result<(), ClientError> {
        match self.endpoint.connect().await {
            Ok(_) => Ok(()),
            Err(e) => {
                let plain = chain(&e);
                let words = tls::describe(&e, self.tls.as_ref(), plain);
                let message = format!("cannot connect to {}: {words}", self.endpoint.uri());
                Err(ClientError::Io(std::io::Error::other(message)))
            }
        }
    }

    /// An ADS client on a connection of its own, with the suite's message limits.
    pub(super) fn ads(&self) -> Ads<Channel> {
        client!(self, Ads<Channel>)
    }

    /// A channel of its own: every probe stream gets its own HTTP/2 connection, so one
    /// stream's fate (a reset connection) never decides another check.
    pub(super) fn channel(&self) -> Channel {
        self.endpoint.connect_lazy()
    }

    pub(super) fn node(&self) -> Node {
        Node {
            id: self.node_id.clone(),
            ..Default::default()
        }
    }
}

/// An error and its sources, `: `-joined.
pub(super) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text = format!("{text}: {e}");
        source = e.source();
    }
    text
}

/// Why no response came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Gone {
    /// Nothing arrived in time.
    Silent(Duration),
    /// The server ended the stream (with this status, or cleanly).
    Ended(Option<(tonic::Code, String)>),
}

impl fmt::Display for Gone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gone::Silent(d) => write!(f, "no response within {}", humantime::format_duration(*d)),
            Gone::Ended(Some((code, message))) => {
                write!(f, "the server ended the stream: {code:?}: {message}")
            }
            Gone::Ended(None) => f.write_str("the server ended the stream without an error"),
        }
    }
}

/// Where a probe stream goes: ADS, or one of the per-type services (one type each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Service {
    Ads,
    Clusters,
    Endpoints,
    Listeners,
    Routes,
}

impl Service {
    /// The per-type service that serves `type_url`, if the suite exercises one.
    pub(crate) fn for_type(type_url: &str) -> Option<Service> {
        match type_url {
            type_url::CLUSTER => Some(Service::Clusters),
            type_url::ENDPOINT => Some(Service::Endpoints),
            type_url::LISTENER => Some(Service::Listeners),
            type_url::ROUTE => Some(Service::Routes),
            _ => None,
        }
    }

    /// `ads`, or the service's short name (`cds`) as the evidence writes it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Service::Ads => "ads",
            Service::Clusters => "cds-service",
            Service::Endpoints => "eds-service",
            Service::Listeners => "lds-service",
            Service::Routes => "rds-service",
        }
    }
}

/// The two variants' messages and how each service opens a stream of them.
pub(super) trait Variant: Sized + 'static {
    type Request: Send + 'static;
    type Response: Send + 'static;
    fn set_node(request: &mut Self::Request, node: Node);
    fn call(
        target: &Target,
        service: Service,
        requests: ReceiverStream<Self::Request>,
    ) -> impl Future<Output = Result<Streaming<Self::Response>, Status>> + Send + 'static;
}

pub(super) struct Sotw;
pub(super) struct Delta;

impl Variant for Sotw {
    type Request = DiscoveryRequest;
    type Response = DiscoveryResponse;
    fn set_node(request: &mut DiscoveryRequest, node: Node) {
        request.node = Some(node);
    }
    fn call(
        target: &Target,
        service: Service,
        requests: ReceiverStream<DiscoveryRequest>,
    ) -> impl Future<Output = Result<Streaming<DiscoveryResponse>, Status>> + Send + 'static {
        let target = target.clone();
        async move {
            let stream = match service {
                Service::Ads => {
                    client!(target, Ads<Channel>)
                        .stream_aggregated_resources(requests)
                        .await
                }
                Service::Clusters => {
                    client!(target, Cds<Channel>)
                        .stream_clusters(requests)
                        .await
                }
                Service::Endpoints => {
                    client!(target, Eds<Channel>)
                        .stream_endpoints(requests)
                        .await
                }
                Service::Listeners => {
                    client!(target, Lds<Channel>)
                        .stream_listeners(requests)
                        .await
                }
                Service::Routes => client!(target, Rds<Channel>).stream_routes(requests).await,
            };
            Ok(stream?.into_inner())
        }
    }
}

impl Variant for Delta {
    type Request = DeltaDiscoveryRequest;
    type Response = DeltaDiscoveryResponse;
    fn set_node(request: &mut DeltaDiscoveryRequest, node: Node) {
        request.node = Some(node);
    }
    fn call(
        target: &Target,
        service: Service,
        requests: ReceiverStream<DeltaDiscoveryRequest>,
    ) -> impl Future<Output = Result<Streaming<DeltaDiscoveryResponse>, Status>> + Send + 'static
    {
        let target = target.clone();
        async move {
            let stream = match service {
                Service::Ads => {
                    client!(target, Ads<Channel>)
                        .delta_aggregated_resources(requests)
                        .await
                }
                Service::Clusters => client!(target, Cds<Channel>).delta_clusters(requests).await,
                Service::Endpoints => {
                    client!(target, Eds<Channel>)
                        .delta_endpoints(requests)
                        .await
                }
                Service::Listeners => {
                    client!(target, Lds<Channel>)
                        .delta_listeners(requests)
                        .await
                }
                Service::Routes => client!(target, Rds<Channel>).delta_routes(requests).await,
            };
            Ok(stream?.into_inner())
        }
    }
}

type Opening<R> = Pin<Box<dyn Future<Output = Result<Streaming<R>, Status>> + Send>>;

enum State<R> {
    /// Some servers send response headers only with the first response, so the call is
    /// awaited when a response is wanted, never before the first request is queued.
    Opening(Opening<R>),
    Open(Streaming<R>),
    Ended(Gone),
}

/// One ADS stream.
pub(super) struct Probe<V: Variant> {
    requests: mpsc::Sender<V::Request>,
    state: State<V::Response>,
    node: Option<Node>,
    /// SotW: the names last requested per type, repeated by ACKs and NACKs (C3).
    interest: BTreeMap<String, Vec<String>>,
    /// Responses read while finding out why a send failed, not yet received.
    early: VecDeque<V::Response>,
}

impl<V: Variant> Probe<V> {
    /// A stream of `StreamAggregatedResources` (or `DeltaAggregatedResources`).
    pub(super) fn open(target: &Target) -> Self {
        Self::open_on(target, Service::Ads)
    }

    /// A stream of `service` (ADS or a per-type service), on a connection of its own.
    pub(super) fn open_on(target: &Target, service: Service) -> Self {
        let (requests, rx) = mpsc::channel(REQUEST_QUEUE);
        let call = V::call(target, service, ReceiverStream::new(rx));
        Self {
            requests,
            state: State::Opening(Box::pin(call)),
            node: Some(target.node()),
            interest: BTreeMap::new(),
            early: VecDeque::new(),
        }
    }

    /// Sends `request`; the node goes on the first one (C1).
    pub(super) async fn send(&mut self, mut request: V::Request) -> Result<(), Gone> {
        if let Some(node) = self.node.take() {
            V::set_node(&mut request, node);
        }
        // The queue is bounded: a server that stops reading must not hang the suite.
        let sent = timeout(SEND_TIMEOUT, self.requests.send(request)).await;
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(self.how_it_ended().await),
            Err(_) => Err(Gone::Silent(SEND_TIMEOUT)),
        }
    }

    /// The request side closed, so the call is over: reads on to the server's status,
    /// keeping any response that came before it for [`Self::recv`].
    async fn how_it_ended(&mut self) -> Gone {
        loop {
            match timeout(SEND_TIMEOUT, self.read()).await {
                Ok(Ok(response)) => self.early.push_back(response),
                Ok(Err(gone)) => return gone,
                Err(_) => return Gone::Ended(None),
            }
        }
    }

    /// The next response, or why none came within `within`.
    pub(super) async fn recv(&mut self, within: Duration) -> Result<V::Response, Gone> {
        timeout(within, self.next())
            .await
            .unwrap_or(Err(Gone::Silent(within)))
    }

    /// The next response, however long it takes.
    pub(super) async fn next(&mut self) -> Result<V::Response, Gone> {
        match self.early.pop_front() {
            Some(response) => Ok(response),
            None => self.read().await,
        }
    }

    async fn read(&mut self) -> Result<V::Response, Gone> {
        loop {
            let result = match &mut self.state {
                State::Ended(gone) => return Err(gone.clone()),
                State::Opening(call) => match call.await {
                    Ok(stream) => {
                        self.state = State::Open(stream);
                        continue;
                    }
                    Err(status) => Err(status),
                },
                State::Open(stream) => match stream.message().await {
                    Ok(Some(response)) => return Ok(response),
                    Ok(None) => Ok(()),
                    Err(status) => Err(status),
                },
            };
            let gone = Gone::Ended(result.err().map(|s| (s.code(), s.message().to_string())));
            self.state = State::Ended(gone);
        }
    }
}
