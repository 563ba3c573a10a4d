//! Real tonic ADS clients (SotW and Delta) with timeout-guarded receives.

use std::net::SocketAddr;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Streaming, transport::Channel};
use xdsloop_proto::{
    discovery::{
        DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse, Node,
        Status,
    },
    envoy::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient,
};
use xdsloop_server::app::DEFAULT_MAX_MESSAGE_BYTES;

use super::{CODEC, QUIET, within};

/// A gRPC connection of its own to the test server.
pub(crate) async fn channel(addr: SocketAddr) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .expect("connects to the test server")
}

/// An ADS client on its own connection, with the message limit raised like the server's.
pub(crate) async fn ads_client(addr: SocketAddr) -> AggregatedDiscoveryServiceClient<Channel> {
    AggregatedDiscoveryServiceClient::new(channel(addr).await)
        .max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
        .max_encoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
}

pub(crate) fn node(id: &str) -> Option<Node> {
    Some(Node {
        id: id.to_string(),
        ..Default::default()
    })
}

pub(crate) fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn nack_status(message: &str) -> Option<Status> {
    Some(Status {
        code: xdsloop_proto::discovery::INVALID_ARGUMENT,
        message: message.to_string(),
        details: vec![],
    })
}

/// A SotW ADS stream.
pub(crate) struct SotwClient {
    pub node: String,
    requests: mpsc::Sender<DiscoveryRequest>,
    responses: Streaming<DiscoveryResponse>,
    node_sent: bool,
}

impl SotwClient {
    pub(crate) async fn connect(addr: SocketAddr, node: &str) -> Self {
        // Requests queue here only until the stream picks them up; tests send a few at a time.
        let (requests, rx) = mpsc::channel(16);
        let mut client = ads_client(addr).await;
        let responses = within("the SotW stream to open", async {
            let stream = client.stream_aggregated_resources(ReceiverStream::new(rx));
            stream.await.expect("stream opens").into_inner()
        })
        .await;
        Self::from_parts(node, requests, responses)
    }

    /// A client on a stream opened elsewhere (e.g. a per-type service's).
    pub(crate) fn from_parts(
        node: &str,
        requests: mpsc::Sender<DiscoveryRequest>,
        responses: Streaming<DiscoveryResponse>,
    ) -> Self {
        Self {
            node: node.to_string(),
            requests,
            responses,
            node_sent: false,
        }
    }

    /// Sends a request; the node goes on the first one only (C1).
    pub(crate) async fn send(&mut self, mut request: DiscoveryRequest) {
        if !self.node_sent {
            request.node = node(&self.node);
            self.node_sent = true;
        }
        self.requests.send(request).await.expect("stream open");
    }

    pub(crate) async fn subscribe(&mut self, type_url: &str, names: &[&str]) -> DiscoveryResponse {
        self.request(type_url, names, "", "").await;
        self.recv().await
    }

    pub(crate) async fn request(
        &mut self,
        type_url: &str,
        names: &[&str],
        version: &str,
        nonce: &str,
    ) {
        let request = DiscoveryRequest {
            version_info: version.to_string(),
            resource_names: strings(names),
            type_url: type_url.to_string(),
            response_nonce: nonce.to_string(),
            ..Default::default()
        };
        self.send(request).await;
    }

    pub(crate) async fn ack(&mut self, response: &DiscoveryResponse, names: &[&str]) {
        let (url, version, nonce) = (&response.type_url, &response.version_info, &response.nonce);
        self.request(url, names, version, nonce).await;
    }

    /// Rejects `response`, reporting `accepted` as the last good version.
    pub(crate) async fn nack(
        &mut self,
        response: &DiscoveryResponse,
        names: &[&str],
        accepted: &str,
    ) {
        let request = DiscoveryRequest {
            version_info: accepted.to_string(),
            resource_names: strings(names),
            type_url: response.type_url.clone(),
            response_nonce: response.nonce.clone(),
            error_detail: nack_status("rejected by the test"),
            ..Default::default()
        };
        self.send(request).await;
    }

    /// The next message or the stream's error status (`Ok(None)` = stream ended).
    pub(crate) async fn try_recv(&mut self) -> Result<Option<DiscoveryResponse>, tonic::Status> {
        self.responses.message().await
    }

    pub(crate) async fn recv(&mut self) -> DiscoveryResponse {
        within("a SotW response", self.responses.message())
            .await
            .expect("stream healthy")
            .expect("stream still open")
    }

    /// Asserts that no response arrives for a while.
    pub(crate) async fn assert_silent(&mut self, why: &str) {
        if let Ok(got) = tokio::time::timeout(QUIET, self.responses.message()).await {
            panic!("{why}: expected no response, got {got:?}");
        }
    }
}

/// A Delta ADS stream.
pub(crate) struct DeltaClient {
    pub node: String,
    requests: mpsc::Sender<DeltaDiscoveryRequest>,
    responses: Streaming<DeltaDiscoveryResponse>,
    node_sent: bool,
}

impl DeltaClient {
    pub(crate) async fn connect(addr: SocketAddr, node: &str) -> Self {
        let (requests, rx) = mpsc::channel(16);
        let mut client = ads_client(addr).await;
        let responses = within("the Delta stream to open", async {
            let stream = client.delta_aggregated_resources(ReceiverStream::new(rx));
            stream.await.expect("stream opens").into_inner()
        })
        .await;
        Self::from_parts(node, requests, responses)
    }

    /// A client on a stream opened elsewhere (e.g. a per-type service's).
    pub(crate) fn from_parts(
        node: &str,
        requests: mpsc::Sender<DeltaDiscoveryRequest>,
        responses: Streaming<DeltaDiscoveryResponse>,
    ) -> Self {
        Self {
            node: node.to_string(),
            requests,
            responses,
            node_sent: false,
        }
    }

    /// The next message or the stream's error status (`Ok(None)` = stream ended).
    pub(crate) async fn try_recv(
        &mut self,
    ) -> Result<Option<DeltaDiscoveryResponse>, tonic::Status> {
        self.responses.message().await
    }

    pub(crate) async fn send(&mut self, mut request: DeltaDiscoveryRequest) {
        if !self.node_sent {
            request.node = node(&self.node);
            self.node_sent = true;
        }
        self.requests.send(request).await.expect("stream open");
    }

    pub(crate) async fn change(
        &mut self,
        type_url: &str,
        subscribe: &[&str],
        unsubscribe: &[&str],
        nonce: &str,
    ) {
        let request = DeltaDiscoveryRequest {
            type_url: type_url.to_string(),
            resource_names_subscribe: strings(subscribe),
            resource_names_unsubscribe: strings(unsubscribe),
            response_nonce: nonce.to_string(),
            ..Default::default()
        };
        self.send(request).await;
    }

    pub(crate) async fn ack(&mut self, response: &DeltaDiscoveryResponse) {
        self.change(&response.type_url, &[], &[], &response.nonce)
            .await;
    }

    pub(crate) async fn nack(&mut self, response: &DeltaDiscoveryResponse) {
        let request = DeltaDiscoveryRequest {
            type_url: response.type_url.clone(),
            response_nonce: response.nonce.clone(),
            error_detail: nack_status("rejected by the test"),
            ..Default::default()
        };
        self.send(request).await;
    }

    pub(crate) async fn recv(&mut self) -> DeltaDiscoveryResponse {
        within("a Delta response", self.responses.message())
            .await
            .expect("stream healthy")
            .expect("stream still open")
    }

    pub(crate) async fn assert_silent(&mut self, why: &str) {
        if let Ok(got) = tokio::time::timeout(QUIET, self.responses.message()).await {
            panic!("{why}: expected no response, got {got:?}");
        }
    }
}

/// Resource names in a SotW response, decoded from the `Any`s (S1: each `Any` must carry the
/// response's type URL).
pub(crate) fn names_in(response: &DiscoveryResponse) -> Vec<String> {
    let resources = response.resources.iter();
    resources
        .map(|any| {
            assert_eq!(
                any.type_url, response.type_url,
                "S1: Any type URL matches the response"
            );
            CODEC
                .resource_name(&any.type_url, &any.value)
                .expect("resource decodes")
        })
        .collect()
}

/// `(name, version)` of each resource in a Delta response, checked against the decoded `Any`.
pub(crate) fn delta_resources(response: &DeltaDiscoveryResponse) -> Vec<(String, String)> {
    let resources = response.resources.iter();
    resources
        .map(|r| {
            let any = r
                .resource
                .as_ref()
                .expect("Delta resources carry the resource");
            assert_eq!(
                any.type_url, response.type_url,
                "S1: Any type URL matches the response"
            );
            let decoded = CODEC
                .resource_name(&any.type_url, &any.value)
                .expect("decodes");
            assert_eq!(decoded, r.name, "S8: Resource.name is the resource's name");
            (r.name.clone(), r.version.clone())
        })
        .collect()
}

pub(crate) fn delta_names(response: &DeltaDiscoveryResponse) -> Vec<String> {
    delta_resources(response)
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}
