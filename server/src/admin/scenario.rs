//! `GET /scenario` (the scenario in force: its text and counters), `PUT /scenario` (a YAML
//! body replaces it; a bad one is refused with `line:col` and the old one stays) and
//! `DELETE /scenario` (the server behaves again, and every stream resyncs), and
//! `POST /resync` (the streams a fault left behind get the current snapshot again). Last
//! writer wins between these, the `--scenario` file and Rust code.

use axum::{
    Json,
    extract::State,
    http::StatusCode,
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

pub(crate) async fn put_scenario(State(scenarios): State<Scenarios>, body: String) -> Response {
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
