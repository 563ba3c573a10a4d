//! `GET /scenario` (the scenario in force: its text and counters), `PUT /scenario` (a YAML
//! body replaces it; a bad one is refused with `line:col` and the old one stays) and
//! `DELETE /scenario` (the server behaves again, and every stream resyncs), and
//! `POST /resync` (the streams a fault left behind get the current snapshot again). Last
//! writer wins between these, the `--scenario` file and Rust code.

use axum::{
    Json,
    body::Bytes,
    extract::{State, rejection::BytesRejection},
    http::{HeaderValue, Method, StatusCode, header::ALLOW},
    response::{IntoResponse, Response},
};
use serde_json::json;
use tracing::{info, warn};

use crate::{
    admin::status::scenario::view,
    faults::scenario::{Origin, Scenario, Scenarios},
};

pub(crate) async fn get_scenario(State(scenarios): State<Scenarios>) -> Response {
    let mut body = serde_json::to_value(view(&scenarios)).unwrap_or_default();
    body["text"] = json!(scenarios.current().text);
    Json(body).into_response()
}

/// The largest `PUT /scenario` body read (axum's default limit, named so a refusal can say it).
pub(crate) const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// A refusal of `PUT /scenario` as the route documents them: `{"error": …}`.
fn refused(status: StatusCode, error: String) -> Response {
    (status, Json(json!({ "error": error }))).into_response()
}

pub(crate) async fn put_scenario(
    State(scenarios): State<Scenarios>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            let error = format!("PUT /scenario: the body is over the limit of {BODY_LIMIT} bytes");
            return refused(StatusCode::PAYLOAD_TOO_LARGE, error);
        }
        Err(rejection) => {
            let error = format!(
                "PUT /scenario: the body could not be read: {}",
                rejection.body_text()
            );
            return refused(rejection.status(), error);
        }
    };
    let body = match String::from_utf8(body.to_vec()) {
        Ok(body) => body,
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let error =
                format!("PUT /scenario: the body is not UTF-8 (byte {at}); send the YAML as UTF-8");
            return refused(StatusCode::BAD_REQUEST, error);
        }
    };
    let scenario = match Scenario::from_yaml(&body) {
        Ok(scenario) => scenario,
        Err(e) => {
            let error = format!("PUT /scenario:{e}");
            warn!(%error, "scenario rejected; the one in force stays");
            scenarios.reject(Origin::Api, error.clone());
            return (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response();
        }
    };
    let rules = scenario.rules.len();
    match scenarios.install(scenario, Origin::Api, None, Some(body)) {
        Ok(installed) => {
            info!(
                rules,
                generation = installed.generation,
                "scenario installed through PUT /scenario (rule counters start at 0)"
            );
            Json(view(&scenarios)).into_response()
        }
        Err(error) => (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response(),
    }
}

/// Any other method on `/scenario`: 405, with what the route takes.
pub(crate) async fn other_method(method: Method) -> Response {
    let error = format!("{method} /scenario: the scenario takes GET, PUT or DELETE");
    let mut response = refused(StatusCode::METHOD_NOT_ALLOWED, error);
    let allow = HeaderValue::from_static("GET, PUT, DELETE");
    response.headers_mut().insert(ALLOW, allow);
    response
}

pub(crate) async fn delete_scenario(State(scenarios): State<Scenarios>) -> Response {
    scenarios.clear();
    info!("scenario removed through DELETE /scenario; streams resync");
    Json(view(&scenarios)).into_response()
}

/// `POST /resync`: every stream a fault left NACKED, PENDING or short gets the current
/// snapshot again; the scenario in force stays (`DELETE /scenario` removes it and resyncs).
pub(crate) async fn post_resync(State(scenarios): State<Scenarios>) -> Response {
    scenarios.resync();
    info!("resync asked through POST /resync");
    let body = json!({
        "resync": "every stream sends the current snapshot to the types its client may not hold"
    });
    Json(body).into_response()
}
