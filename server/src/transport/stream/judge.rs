//! The loop's side of the conformance judge: what it found goes to the log, the tap (events,
//! counters, `/status`) and, on a strict server, ends the stream with FAILED_PRECONDITION.

use tokio::sync::mpsc;
use tonic::{Code, Status};
use tracing::warn;

use super::{Ending, StreamKit};
use crate::protocol::facts::StatusFacts;
use crate::tap::CloseReason;

/// Hands what the judge found to the log, the counters and the tap.
pub(super) fn report_violations(kit: &mut StreamKit) {
    for violation in kit.judge.take_violations() {
        warn!(stream = kit.tap.stream(), node = kit.tap.node(), rule = violation.rule,
            check = violation.check, message = %violation.message, "conformance violation");
        kit.tap.violation(violation);
    }
}

/// A strict judge found a violation: the stream ends with FAILED_PRECONDITION naming it.
pub(super) fn strict_ending<T>(
    kit: &StreamKit,
    responses: &mpsc::Sender<Result<T, Status>>,
) -> Option<Ending> {
    let violation = kit.judge.failure()?;
    let message = format!("xdsloop --strict: {violation}");
    warn!(
        stream = kit.tap.stream(),
        check = violation.check,
        "closing the stream: the server runs with --strict"
    );
    let status = Status::new(Code::FailedPrecondition, message.clone());
    let _ = responses.try_send(Err(status));
    Some(Ending {
        reason: CloseReason::Status,
        status: Some(StatusFacts {
            code: Code::FailedPrecondition as i32,
            message: message.into(),
        }),
    })
}
