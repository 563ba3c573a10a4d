//! Envoy's REST-JSON transport (xDS protocol, "REST-JSON polling subscriptions"):
//! `POST /v3/discovery:<type>` with a `DiscoveryRequest` in the proto3 JSON mapping, answered
//! with a `DiscoveryResponse` in JSON, served on the xDS port next to gRPC (HTTP/1.1 and h2c).
//!
//! Answers ([`crate::protocol::fetch`] decides; this module only converts):
//! - `200` + `DiscoveryResponse` JSON: the same resources and `version_info` a SotW stream
//!   would send now;
//! - `304 Not Modified`, empty body: the request's `version_info` is the current version
//!   (Envoy's REST fetcher then keeps what it has);
//! - `400` + a plain-text reason: a body that is not a `DiscoveryRequest` in JSON (the parse
//!   error, with line and column), or a `type_url` of another type than the path's;
//! - `413` + a plain-text reason: a body over `--max-request-bytes`.
//!
//! Scenario rules apply to polls as to streams, where a one-shot answer allows
//! ([`faults`]: which rules and how they count; `act`: what they do to the answer; [`json`]:
//! a changed response in JSON, and the HTTP status a `close` rule answers with).

mod act;
pub(crate) mod faults;
pub(crate) mod json;

use axum::extract::rejection::BytesRejection;
use axum::{
    Router,
    body::Bytes,
    extract::{DefaultBodyLimit, Request, State},
    http::{HeaderMap, StatusCode, Uri, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::post,
};
use prost_reflect::{DynamicMessage, MessageDescriptor, SerializeOptions};
use tonic::service::Routes;
use tracing::{info, warn};
use xdsloop_proto::{
    Codec,
    discovery::{DiscoveryRequest, DiscoveryResponse},
    services::{PER_TYPE_APIS, PerTypeApi},
};

use crate::{
    protocol::{fetch::Fetched, response::SotwResponse},
    transport::per_type::claim,
    transport::unary::Fetcher,
};
use faults::{Planned, RestFaults};

const REQUEST: &str = "envoy.service.discovery.v3.DiscoveryRequest";
const RESPONSE: &str = "envoy.service.discovery.v3.DiscoveryResponse";

/// What the REST handlers need: fetches and the descriptor pool that turns JSON into
/// messages and back (the pool includes `--descriptor-set` types, so their `Any`s print).
#[derive(Debug, Clone)]
pub(crate) struct Rest {
    fetcher: Fetcher,
    codec: Codec,
    request: MessageDescriptor,
    response: MessageDescriptor,
    max_request_bytes: usize,
    /// The scenario rules polls follow (none: every poll is answered as it is).
    faults: Option<RestFaults>,
}

impl Rest {
    /// Request bodies are limited to `max_request_bytes`.
    pub(crate) fn new(fetcher: Fetcher, codec: &Codec, max_request_bytes: usize) -> Self {
        let message = |name: &str| {
            codec
                .pool()
                .get_message_by_name(name)
                .expect("the Envoy descriptor pool has the discovery messages")
        };
        Self {
            fetcher,
            codec: codec.clone(),
            request: message(REQUEST),
            response: message(RESPONSE),
            max_request_bytes,
            faults: None,
        }
    }

    /// Polls follow the scenario rules of `faults`.
    pub(crate) fn with_faults(mut self, faults: RestFaults) -> Self {
        self.faults = Some(faults);
        self
    }

    /// One route per API with a Fetch method.
    pub(crate) fn router(self) -> Router {
        let mut router = Router::new();
        let limit = self.max_request_bytes;
        for api in PER_TYPE_APIS {
            let Some(path) = api.rest_path else { continue };
            let state = self.clone();
            let handler = move |body: Result<Bytes, BytesRejection>| async move {
                match body {
                    Ok(body) => state.handle(api, &body).await,
                    Err(rejected) => too_large(rejected, limit),
                }
            };
            router = router.route(path, post(handler));
        }
        // A declared length over the limit is refused before anything is read; a body without
        // one is cut off at the limit.
        let declared = middleware::from_fn_with_state(limit, declared_length);
        router
            .layer(DefaultBodyLimit::max(limit))
            .route_layer(declared)
    }

    async fn handle(&self, api: PerTypeApi, body: &[u8]) -> Response {
        let request = match self.parse(body) {
            Ok(request) => request,
            Err(e) => {
                let reason = format!("the body is not a DiscoveryRequest in JSON: {e}");
                info!(service = api.service, %reason, "REST request rejected");
                return (StatusCode::BAD_REQUEST, reason).into_response();
            }
        };
        let request = match claim(api, request) {
            Ok(request) => request,
            Err(wrong) => return (StatusCode::BAD_REQUEST, wrong.to_string()).into_response(),
        };
        let node = request
            .node
            .as_ref()
            .map(|n| n.id.clone())
            .unwrap_or_default();
        let response = match self.fetcher.fetch_wire("rest", api.type_url, request) {
            Fetched::NotModified { .. } => None,
            Fetched::Response(response) => Some(response),
        };
        let planned = match &self.faults {
            Some(faults) => faults.plan(&node, response),
            None => Planned::AsIs(response),
        };
        match (planned, &self.faults) {
            (Planned::AsIs(None), _) => StatusCode::NOT_MODIFIED.into_response(),
            (Planned::AsIs(Some(response)), _) => self.answer(api, &response),
            (Planned::Steps(steps), Some(faults)) => {
                act::carry_out(self, faults, api, &node, steps).await
            }
            (Planned::Steps(_), None) => unreachable!("only a fault stage plans steps"),
        }
    }

    /// 200 with `response` as JSON.
    fn answer(&self, api: PerTypeApi, response: &SotwResponse) -> Response {
        let json = self.render(&response.to_message());
        self.json_answer(api, json)
    }

    /// 200 with `response`, which a rule changed, as JSON ([`json::changed`]).
    fn answer_changed(&self, api: PerTypeApi, response: &SotwResponse) -> Response {
        let json = json::changed(&self.codec, &self.response, response, api.type_url);
        self.json_answer(api, json)
    }

    fn json_answer(&self, api: PerTypeApi, json: Result<Vec<u8>, String>) -> Response {
        match json {
            Ok(json) => (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                json,
            )
                .into_response(),
            Err(e) => {
                warn!(service = api.service, error = %e, "REST response cannot be written as JSON");
                let reason = format!("the response cannot be written as JSON: {e}");
                (StatusCode::INTERNAL_SERVER_ERROR, reason).into_response()
            }
        }
    }

    /// Proto3 JSON (either field-name style, unknown fields rejected) → `DiscoveryRequest`.
    fn parse(&self, body: &[u8]) -> Result<DiscoveryRequest, String> {
        let mut json = serde_json::Deserializer::from_slice(body);
        let message = DynamicMessage::deserialize(self.request.clone(), &mut json)
            .map_err(|e| e.to_string())?;
        json.end().map_err(|e| e.to_string())?;
        message.transcode_to().map_err(|e| e.to_string())
    }

    /// `DiscoveryResponse` → proto3 JSON with proto field names (`version_info`, as Envoy's
    /// docs and go-control-plane write them; every proto3 JSON parser accepts both styles).
    fn render(&self, response: &DiscoveryResponse) -> Result<Vec<u8>, String> {
        let mut message = DynamicMessage::new(self.response.clone());
        message
            .transcode_from(response)
            .map_err(|e| e.to_string())?;
        let options = SerializeOptions::new().use_proto_field_name(true);
        let mut json = serde_json::Serializer::new(Vec::new());
        message
            .serialize_with_options(&mut json, &options)
            .map_err(|e| e.to_string())?;
        Ok(json.into_inner())
    }
}

/// A body that could not be read: over the limit (413, saying which limit), or broken.
fn too_large(rejected: BytesRejection, limit: usize) -> Response {
    match rejected.status() {
        StatusCode::PAYLOAD_TOO_LARGE => over_limit(limit),
        status => (status, rejected.body_text()).into_response(),
    }
}

fn over_limit(limit: usize) -> Response {
    let reason = format!("the request body is over the --max-request-bytes limit ({limit})");
    info!(%reason, "REST request rejected");
    (StatusCode::PAYLOAD_TOO_LARGE, reason).into_response()
}

/// 413 for a `Content-Length` over the limit, without reading the body.
async fn declared_length(State(limit): State<usize>, request: Request, next: Next) -> Response {
    let declared = request.headers().get(header::CONTENT_LENGTH);
    let declared = declared.and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return over_limit(limit);
    }
    next.run(request).await
}

/// Serves the `http` routes ([`Rest::router`] and whatever else the xDS port answers) next to
/// the `grpc` services on one router. A request no route matches gets gRPC's `UNIMPLEMENTED`
/// when it is gRPC, and a 404 listing the REST paths otherwise (an HTTP client should not read
/// an empty 200 with gRPC trailers).
pub(crate) fn with_grpc(grpc: Routes, http: Router) -> Routes {
    let router = grpc.into_axum_router().merge(http);
    router.fallback(unmatched).into()
}

async fn unmatched(headers: HeaderMap, uri: Uri) -> Response {
    let content_type = headers.get(header::CONTENT_TYPE);
    let content_type = content_type.and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type.starts_with("application/grpc") {
        return tonic::Status::unimplemented("").into_http();
    }
    let paths: Vec<&str> = PER_TYPE_APIS.iter().filter_map(|a| a.rest_path).collect();
    let reason = format!(
        "no xDS endpoint at {}; REST-JSON endpoints (POST): {}",
        uri.path(),
        paths.join(", ")
    );
    (StatusCode::NOT_FOUND, reason).into_response()
}

#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::sync::watch;
    use xdsloop_proto::type_url::CLUSTER;

    use std::sync::Arc;

    use super::*;
    use xdsloop_proto::services::CLUSTERS;

    use crate::snapshot::Snapshot;

    pub(super) fn rest(snapshot: Snapshot) -> Rest {
        let (_source, snapshots) = watch::channel(Arc::new(snapshot));
        Rest::new(Fetcher::new(snapshots), &Codec::envoy(), 1 << 20)
    }

    fn cluster_snapshot() -> Snapshot {
        let codec = Codec::envoy();
        let value = json!({"@type": CLUSTER, "name": "c1", "connect_timeout": "1s"});
        let resource = codec.encode_resource(&value, "test").unwrap();
        let resources = [(resource.name.clone(), Arc::new(resource))].into();
        let types = crate::snapshot::TypeResources::new(resources, None);
        Snapshot {
            generation: 1,
            base: [(CLUSTER.to_string(), Arc::new(types))].into(),
            overlays: Default::default(),
        }
    }

    pub(super) async fn body(response: Response) -> (StatusCode, String) {
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_json_request_gets_a_json_response_with_typed_resources() {
        let rest = rest(cluster_snapshot());
        let request = br#"{"node": {"id": "n1"}, "versionInfo": ""}"#;
        let (status, text) = body(rest.handle(CLUSTERS, request).await).await;
        assert_eq!(status, StatusCode::OK);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["type_url"], CLUSTER);
        assert_eq!(value["resources"][0]["@type"], CLUSTER);
        assert_eq!(value["resources"][0]["name"], "c1");
        let version = value["version_info"].as_str().unwrap();
        let again = format!(r#"{{"version_info": "{version}"}}"#);
        let (status, text) = body(rest.handle(CLUSTERS, again.as_bytes()).await).await;
        assert_eq!((status, text.as_str()), (StatusCode::NOT_MODIFIED, ""));
    }

    #[tokio::test]
    async fn malformed_json_and_unknown_fields_are_400_with_the_reason() {
        let rest = rest(cluster_snapshot());
        let (status, text) = body(rest.handle(CLUSTERS, b"{\"node\": ").await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(text.contains("line 1 column"), "{text}");
        let (status, text) = body(rest.handle(CLUSTERS, br#"{"nonsense": 1}"#).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(text.contains("nonsense"), "{text}");
        let other = br#"{"type_url": "type.googleapis.com/envoy.config.listener.v3.Listener"}"#;
        let (status, text) = body(rest.handle(CLUSTERS, other).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(text.contains("serves only"), "{text}");
    }
}
