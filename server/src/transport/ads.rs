//! The Aggregated Discovery Service: every type on one stream, SotW or Delta.
//!
//! It is the generated tonic service's routing written out by hand: the generated one copies
//! every message through a per-stream buffer, while here requests are read off the request
//! body as they arrive ([`crate::transport::request_body`]) and responses are
//! [`Outbound`](crate::protocol::response::Outbound) values whose resource entries, encoded once
//! and shared by every stream, go out uncopied (`response_body`).

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use tonic::{Code, Status, body::Body, codegen::http, server::NamedService};
use xdsloop_proto::services::{ADS_DELTA_PATH, ADS_SERVICE, ADS_SOTW_PATH};

use crate::{
    admin::registry::StreamKind,
    transport::discovery::Discovery,
    transport::response_body::{self, Limits},
};

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// ADS as a tonic route. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Ads {
    discovery: Discovery,
}

impl Ads {
    /// The message limits are `discovery`'s (S13).
    pub(crate) fn new(discovery: Discovery) -> Self {
        Self { discovery }
    }
}

impl NamedService for Ads {
    const NAME: &'static str = ADS_SERVICE;
}

impl tonic::codegen::Service<http::Request<Body>> for Ads {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let ads = self.clone();
        match request.uri().path() {
            ADS_SOTW_PATH => Box::pin(async move {
                let limits = Limits::of(&ads.discovery);
                Ok(response_body::serve(request, limits, |peer, requests| {
                    ads.discovery.sotw(StreamKind::ADS_SOTW, peer, requests)
                }))
            }),
            ADS_DELTA_PATH => Box::pin(async move {
                let limits = Limits::of(&ads.discovery);
                Ok(response_body::serve(request, limits, |peer, requests| {
                    ads.discovery.delta(StreamKind::ADS_DELTA, peer, requests)
                }))
            }),
            _ => Box::pin(async { Ok(Status::new(Code::Unimplemented, "").into_http()) }),
        }
    }
}
