//! Carrying out the fault stage's plan for one REST poll: waits, a hang (no answer until the
//! client gives up, or for a while), a changed answer, or an HTTP error instead of one. Every
//! firing is reported through [`RestFaults`]; every answer a rule touched carries the header
//! `x-xdsloop-fault: RULE/ACTION`.

use axum::{
    http::{HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use xdsloop_proto::services::PerTypeApi;

use super::{Rest, faults::RestFaults, json};
use crate::faults::stage::{StreamEnd, WireStep};
use crate::{
    protocol::{response::SotwResponse, wire::FaultMark},
    transport::stream::act::{end_text, fate_text},
};

/// The header naming the rule that changed an answer or answered instead.
pub(super) const FAULT_HEADER: &str = "x-xdsloop-fault";

/// Carries out `steps` for a poll of `api` by `node`; without a response to send, the answer
/// is 304 Not Modified.
pub(super) async fn carry_out(
    rest: &Rest,
    faults: &RestFaults,
    api: PerTypeApi,
    node: &str,
    steps: Vec<WireStep<SotwResponse>>,
) -> Response {
    for step in steps {
        match step {
            WireStep::Send {
                response,
                mark: None,
                ..
            } => return rest.answer(api, &response),
            WireStep::Send {
                response,
                mark: Some(mark),
                fate,
            } => {
                let detail = fate.map_or_else(|| "sent".to_string(), |(_, f)| fate_text(&f));
                faults.changed(node, &response, &mark, &detail);
                let answer = rest.answer_changed(api, &response);
                return marked(answer, &mark);
            }
            WireStep::Wait { by, .. } => tokio::time::sleep(by).await,
            WireStep::Hang { duration, mark } => {
                let detail = match duration {
                    Some(d) => format!("no answer for {}", humantime::format_duration(d)),
                    None => "no answer until the client gives up".to_string(),
                };
                faults.fired(node, mark, None, detail);
                hang(duration).await;
            }
            // `drop` is not selected for polls (a poll left unanswered is `hang`).
            WireStep::Drop { target, mark } => {
                faults.fired(node, mark, Some(&target), "not answered".into());
                hang(None).await;
            }
            WireStep::End { end, target, mark } => {
                let answer = error(end.clone());
                let detail = format!(
                    "answered HTTP {} instead: {}",
                    answer.status(),
                    end_text(&end)
                );
                faults.fired(node, mark.clone(), target.as_ref(), detail);
                return marked(answer, &mark);
            }
        }
    }
    StatusCode::NOT_MODIFIED.into_response()
}

async fn hang(duration: Option<std::time::Duration>) {
    match duration {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// The HTTP error a stream-ending rule answers with.
fn error(end: StreamEnd) -> Response {
    match end {
        StreamEnd::Close { code, message } => (json::http_status(code), message).into_response(),
        // Not selected for polls; should one get here, it is still an error, not a hang.
        StreamEnd::ResetStream | StreamEnd::ResetConnection => {
            let reason = "reset by a scenario rule".to_string();
            (StatusCode::INTERNAL_SERVER_ERROR, reason).into_response()
        }
    }
}

fn marked(mut answer: Response, mark: &FaultMark) -> Response {
    let value = format!("{}/{}", mark.rule, mark.action);
    if let Ok(value) = HeaderValue::from_str(&value) {
        answer.headers_mut().insert(FAULT_HEADER, value);
    }
    answer
}
