//! The per-type ("singleton") xDS services: CDS, EDS, LDS, RDS, SRDS, VHDS, SDS, RTDS and
//! ECDS, each with its SotW stream, Delta stream and unary Fetch where the API defines them.
//!
//! They are ADS restricted to one type: the streams run on the same [`Discovery`] (the same
//! SotW and Delta state machines), registered with their service's [`StreamKind`], and Fetch is
//! [`crate::protocol::fetch`]. The only per-type rule is the type URL: a client may omit it (it is
//! implicit in the service), and a request for another type ends the stream with
//! `INVALID_ARGUMENT` (xDS protocol: the type is "implicit in requests made via singleton xDS
//! APIs"; serving another type there would hide a misconfigured client).

use std::fmt;

use futures::StreamExt;
use tonic::Status;
use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DiscoveryRequest, DiscoveryResponse},
    services::PerTypeApi,
};

use crate::{
    admin::registry::{StreamKind, Variant},
    net::conn::PeerInfo,
    protocol::fetch::Fetched,
    protocol::request::SotwRequest,
    protocol::response::{DeltaResponse, SotwResponse},
    transport::discovery::{Discovery, ResponseStream},
    transport::request_body::Requests,
    transport::response_body::Limits,
    transport::unary::Fetcher,
};

/// A request for another type than the service's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WrongType {
    pub api: PerTypeApi,
    pub requested: String,
}

impl fmt::Display for WrongType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} service serves only {} (type_url may be omitted); this request asks for {}: \
             use ADS or that type's own service",
            self.api.service, self.api.type_url, self.requested
        )
    }
}

impl From<WrongType> for Status {
    fn from(wrong: WrongType) -> Self {
        Status::invalid_argument(wrong.to_string())
    }
}

/// The requests that carry a type URL.
pub(crate) trait Typed {
    fn type_url_mut(&mut self) -> &mut String;
}

impl Typed for DiscoveryRequest {
    fn type_url_mut(&mut self) -> &mut String {
        &mut self.type_url
    }
}

impl Typed for SotwRequest {
    fn type_url_mut(&mut self) -> &mut String {
        &mut self.head.type_url
    }
}

impl Typed for DeltaDiscoveryRequest {
    fn type_url_mut(&mut self) -> &mut String {
        &mut self.type_url
    }
}

/// Fills in an omitted type URL with `api`'s; rejects a different one.
pub(crate) fn claim<R: Typed>(api: PerTypeApi, mut request: R) -> Result<R, WrongType> {
    let url = request.type_url_mut();
    if url.is_empty() {
        *url = api.type_url.to_string();
    } else if url != api.type_url {
        let requested = std::mem::take(url);
        return Err(WrongType { api, requested });
    }
    Ok(request)
}

fn kind(api: PerTypeApi, variant: Variant) -> StreamKind {
    StreamKind {
        variant,
        service: api.service,
    }
}

/// What every per-type service serves from. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct PerType {
    discovery: Discovery,
    fetcher: Fetcher,
}

impl PerType {
    pub(crate) fn new(discovery: Discovery, fetcher: Fetcher) -> Self {
        Self { discovery, fetcher }
    }

    fn limits(&self) -> Limits {
        Limits::of(&self.discovery)
    }

    fn sotw(
        &self,
        api: PerTypeApi,
        peer: Option<PeerInfo>,
        requests: Requests<SotwRequest>,
    ) -> ResponseStream<SotwResponse> {
        // A wrong type becomes the stream's error: the loop sends it and ends this stream.
        let requests = requests.map(move |r| r.and_then(|r| claim(api, r).map_err(Status::from)));
        self.discovery
            .sotw(kind(api, Variant::Sotw), peer, requests)
    }

    fn delta(
        &self,
        api: PerTypeApi,
        peer: Option<PeerInfo>,
        requests: Requests<DeltaDiscoveryRequest>,
    ) -> ResponseStream<DeltaResponse> {
        let requests = requests.map(move |r| r.and_then(|r| claim(api, r).map_err(Status::from)));
        self.discovery
            .delta(kind(api, Variant::Delta), peer, requests)
    }

    /// gRPC has no "304": the current version is answered `FAILED_PRECONDITION` (the
    /// precondition "version_info is not the current version" failed, as HTTP conditional
    /// requests do), never with an empty response, which would mean "delete everything".
    fn fetch(
        &self,
        api: PerTypeApi,
        request: DiscoveryRequest,
    ) -> Result<DiscoveryResponse, Status> {
        let request = claim(api, request)?;
        match self.fetcher.fetch("grpc", api.type_url, request) {
            Fetched::Response(response) => Ok(response),
            Fetched::NotModified { version } => Err(Status::failed_precondition(format!(
                "not modified: version_info {version:?} is the current version of {}",
                api.type_url
            ))),
        }
    }
}

mod routes;
pub(crate) use routes::add_to;

#[cfg(test)]
mod tests {
    use xdsloop_proto::{services::CLUSTERS, type_url};

    use super::*;

    #[test]
    fn an_omitted_type_url_is_the_services_and_another_is_rejected() {
        let filled = claim(CLUSTERS, DiscoveryRequest::default()).unwrap();
        assert_eq!(filled.type_url, type_url::CLUSTER);
        let same = DeltaDiscoveryRequest {
            type_url: type_url::CLUSTER.into(),
            ..Default::default()
        };
        assert!(claim(CLUSTERS, same).is_ok());
        let other = DiscoveryRequest {
            type_url: type_url::LISTENER.into(),
            ..Default::default()
        };
        let wrong = claim(CLUSTERS, other).unwrap_err();
        assert_eq!(wrong.requested, type_url::LISTENER);
        let status = Status::from(wrong);
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().contains("clusters service serves only"));
        assert!(status.message().contains(type_url::LISTENER));
    }
}
