//! The per-type gRPC services, routed by hand like ADS ([`crate::transport::ads`]): their streams answer
//! with [`crate::transport::response_body`] bodies (resource bytes shared by every stream, never copied per
//! stream), and Fetch is a plain tonic unary call. One route per [`PerTypeApi`]; every API names its
//! methods the same way (`Stream<m>`, `Delta<m>`, `Fetch<m>`).

use std::{
    convert::Infallible,
    task::{Context, Poll},
};

use tonic::{
    Code, Request, Response, Status,
    body::Body,
    codegen::http,
    server::{Grpc, NamedService, UnaryService},
    service::RoutesBuilder,
};
use tonic_prost::ProstCodec;
use xdsloop_proto::discovery::{DiscoveryRequest, DiscoveryResponse};

use xdsloop_proto::services::{PER_TYPE_APIS, PerTypeApi};

use super::PerType;
use crate::{transport::ads::BoxFuture, transport::response_body};

/// The methods of one API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Stream,
    Delta,
    Fetch,
}

impl Method {
    /// The method a request path names, if `api` has it.
    fn of(api: PerTypeApi, path: &str) -> Option<Method> {
        let name = path
            .strip_prefix('/')?
            .strip_prefix(api.grpc)?
            .strip_prefix('/')?;
        let (method, rest) = if let Some(rest) = name.strip_prefix("Stream") {
            (Method::Stream, rest)
        } else if let Some(rest) = name.strip_prefix("Delta") {
            (Method::Delta, rest)
        } else {
            (Method::Fetch, name.strip_prefix("Fetch")?)
        };
        // VHDS (no REST path) is Delta-only.
        let exists = method == Method::Delta || api.has_sotw();
        (rest == api.method && exists).then_some(method)
    }
}

/// The gRPC service of `PER_TYPE_APIS[I]`. Cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct Route<const I: usize> {
    per_type: PerType,
}

impl<const I: usize> NamedService for Route<I> {
    const NAME: &'static str = PER_TYPE_APIS[I].grpc;
}

impl<const I: usize> tonic::codegen::Service<http::Request<Body>> for Route<I> {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let api = PER_TYPE_APIS[I];
        let (per_type, limits) = (self.per_type.clone(), self.per_type.limits());
        let method = Method::of(api, request.uri().path());
        Box::pin(async move {
            Ok(match method {
                Some(Method::Stream) => response_body::serve(request, limits, |peer, requests| {
                    per_type.sotw(api, peer, requests)
                }),
                Some(Method::Delta) => response_body::serve(request, limits, |peer, requests| {
                    per_type.delta(api, peer, requests)
                }),
                Some(Method::Fetch) => {
                    let codec = ProstCodec::<DiscoveryResponse, DiscoveryRequest>::default();
                    let (decode, encode) = (Some(limits.request), Some(limits.response));
                    let mut grpc = Grpc::new(codec).apply_max_message_size_config(decode, encode);
                    grpc.unary(Fetch { per_type, api }, request).await
                }
                None => Status::new(Code::Unimplemented, "").into_http(),
            })
        })
    }
}

struct Fetch {
    per_type: PerType,
    api: PerTypeApi,
}

impl UnaryService<DiscoveryRequest> for Fetch {
    type Response = DiscoveryResponse;
    type Future = std::future::Ready<Result<Response<DiscoveryResponse>, Status>>;

    fn call(&mut self, request: Request<DiscoveryRequest>) -> Self::Future {
        let fetched = self.per_type.fetch(self.api, request.into_inner());
        std::future::ready(fetched.map(Response::new))
    }
}

/// Adds every per-type service to `routes`, with the message limits of `per_type`'s discovery
/// (S13); returns their gRPC service names (for health checks and reflection).
pub(crate) fn add_to(routes: &mut RoutesBuilder, per_type: PerType) -> Vec<&'static str> {
    fn route<const I: usize>(per_type: &PerType) -> Route<I> {
        Route {
            per_type: per_type.clone(),
        }
    }
    let p = &per_type;
    routes
        .add_service(route::<0>(p))
        .add_service(route::<1>(p))
        .add_service(route::<2>(p))
        .add_service(route::<3>(p))
        .add_service(route::<4>(p))
        .add_service(route::<5>(p))
        .add_service(route::<6>(p))
        .add_service(route::<7>(p))
        .add_service(route::<8>(p));
    PER_TYPE_APIS.iter().map(|api| api.grpc).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdsloop_proto::services::{CLUSTERS, VIRTUAL_HOSTS};

    #[test]
    fn paths_name_the_apis_methods_and_nothing_else() {
        let path = |m: &str| format!("/{}/{m}", CLUSTERS.grpc);
        assert_eq!(
            Method::of(CLUSTERS, &path("StreamClusters")),
            Some(Method::Stream)
        );
        assert_eq!(
            Method::of(CLUSTERS, &path("DeltaClusters")),
            Some(Method::Delta)
        );
        assert_eq!(
            Method::of(CLUSTERS, &path("FetchClusters")),
            Some(Method::Fetch)
        );
        assert_eq!(Method::of(CLUSTERS, &path("StreamListeners")), None);
        assert_eq!(Method::of(CLUSTERS, "/other.Service/StreamClusters"), None);
        let vhds = |m: &str| format!("/{}/{m}", VIRTUAL_HOSTS.grpc);
        assert_eq!(
            Method::of(VIRTUAL_HOSTS, &vhds("DeltaVirtualHosts")),
            Some(Method::Delta)
        );
        assert_eq!(Method::of(VIRTUAL_HOSTS, &vhds("StreamVirtualHosts")), None);
        assert_eq!(Method::of(VIRTUAL_HOSTS, &vhds("FetchVirtualHosts")), None);
    }
}
