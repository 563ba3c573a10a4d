//! Carrying out the fault stage's plan for one batch of responses: each response the plan
//! sends is told to the machine (when a rule touched it), the judge and the tap, then handed
//! to the stream's bounded channel; waits, drops, hangs and the stream's end by a rule happen
//! here, each logged and tapped.

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tonic::{Code, Status};
use tracing::warn;
use xdsloop_proto::type_url;

use super::{Ending, StreamKit, now};
use crate::faults::stage::{Plan, StreamCtx, StreamEnd, Target, WireStep};
use crate::protocol::{
    facts::{StatusFacts, TapResponse, TypeName},
    machine::MachineHooks,
    wire::{FaultMark, WireFate, WireResponse},
};
use crate::tap::{CloseReason, FaultFacts};

type Responses<T> = mpsc::Sender<Result<T, Status>>;

/// The detail of the status that asks the response body to reset the stream (RST_STREAM)
/// instead of ending it with trailers.
const RESET: &[u8] = b"xdsloop: reset the stream";

/// What the response body sends to reset the stream rather than close it.
pub(crate) fn reset_status() -> Status {
    Status::with_details(Code::Internal, "reset by a scenario rule", RESET.into())
}

/// Whether `status` is [`reset_status`].
pub(crate) fn is_reset(status: &Status) -> bool {
    status.details() == RESET
}

/// The stream as the fault stage sees it now.
pub(crate) fn ctx<'a>(node: Option<&'a str>, kit: &StreamKit) -> StreamCtx<'a> {
    StreamCtx {
        stream: kit.tap.stream(),
        node,
        age: kit.opened.elapsed(),
        now: now(),
    }
}

/// When the next timed rule is due, if one waits.
pub(crate) fn timer_deadline(kit: &StreamKit) -> Option<Instant> {
    kit.faults.deadline().map(|age| kit.opened + age)
}

/// Resolves at `deadline` (never without one).
pub(crate) async fn fault_timer(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Fires the timed rules that are due; returns the responses the `flap`s that turned owe
/// the client, to be sent like any other.
pub(crate) async fn on_timer<M: MachineHooks>(
    machine: &mut M,
    kit: &mut StreamKit,
    responses: &Responses<M::Response>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Vec<M::Response>, Ending> {
    let steps = kit.faults.on_timer(&ctx(machine.node_id(), kit));
    let done = carry_out(machine, kit, responses, steps, shutdown).await;
    kit.tap.publish(machine.take_status());
    done?;
    Ok(on_flap(machine, kit))
}

/// The `flap`s due turn (and what a removed one hid comes back): the responses that say so.
pub(crate) fn on_flap<M: MachineHooks>(machine: &mut M, kit: &mut StreamKit) -> Vec<M::Response> {
    let node = machine.node_id().map(str::to_owned);
    let ctx = ctx(node.as_deref(), kit);
    kit.faults.on_flap(&ctx, machine)
}

/// Sends one batch as planned; `Err` says why the stream must end (the client went away, the
/// server is stopping, a rule ended it).
pub(crate) async fn send<M: MachineHooks>(
    machine: &mut M,
    kit: &mut StreamKit,
    responses: &Responses<M::Response>,
    out: Vec<M::Response>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), Ending> {
    if out.is_empty() {
        return Ok(());
    }
    let plan = kit.faults.plan(&ctx(machine.node_id(), kit), out);
    match plan {
        Plan::AsIs(out) => {
            let sent = send_as_is(kit, responses, out, shutdown).await;
            kit.tap.flush();
            Ok(sent?)
        }
        Plan::Steps(steps) => {
            let done = carry_out(machine, kit, responses, steps, shutdown).await;
            // What the rules did to the ledger shows now, not at the stream's next message
            // (after a drop or the stream's end there may be none).
            kit.tap.publish(machine.take_status());
            done
        }
    }
}

async fn send_as_is<R: TapResponse>(
    kit: &mut StreamKit,
    responses: &Responses<R>,
    out: Vec<R>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), CloseReason> {
    for response in out {
        send_one(kit, responses, response, None, shutdown).await?;
    }
    Ok(())
}

async fn carry_out<M: MachineHooks>(
    machine: &mut M,
    kit: &mut StreamKit,
    responses: &Responses<M::Response>,
    steps: Vec<WireStep<M::Response>>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), Ending> {
    for step in steps {
        match step {
            WireStep::Send {
                response,
                mark,
                fate,
            } => {
                // A delayed response was counted when its hold began.
                let counted = matches!(fate, Some((_, WireFate::Delayed { .. })));
                if let (Some(mark), Some((planned, fate))) = (&mark, fate) {
                    let (url, nonce) = (response.type_url(), response.nonce());
                    log_fault(
                        kit,
                        machine.node_id(),
                        mark,
                        Some((url, nonce)),
                        &fate_text(&fate),
                    );
                    // Its ledger is the planned type's, whatever the wire says.
                    let url = match &fate {
                        WireFate::Retyped { from, .. } => from.clone(),
                        _ => url.to_string(),
                    };
                    machine.note_wire(&url, &planned, mark.clone(), fate, now());
                }
                if mark.as_ref().is_some_and(|m| m.action == "oversize") {
                    warn_padded::<M>(kit, &response);
                }
                let mark = mark.as_ref().map(|m| (m, counted));
                send_one(kit, responses, response, mark, shutdown).await?;
            }
            WireStep::Wait { by, mark, target } => {
                hold(machine, kit, by, mark.clone(), &target);
                if let Err(ended) = pause(Some(by), responses, shutdown).await {
                    let (url, nonce) = (&target.type_url, &target.nonce);
                    machine.note_wire(url, nonce, mark, WireFate::NeverSent, now());
                    kit.tap.publish(machine.take_status());
                    return Err(ended.into());
                }
            }
            WireStep::Drop { target, mark } => {
                machine.note_wire(
                    &target.type_url,
                    &target.nonce,
                    mark.clone(),
                    WireFate::Dropped,
                    now(),
                );
                tap_fault(
                    kit,
                    machine.node_id(),
                    mark,
                    Some(&target),
                    "dropped".into(),
                );
            }
            WireStep::Hang { duration, mark } => {
                let detail = match duration {
                    Some(d) => format!("hang for {}", humantime::format_duration(d)),
                    None => "hang until the client leaves".to_string(),
                };
                tap_fault(kit, machine.node_id(), mark, None, detail);
                kit.tap.flush();
                pause(duration, responses, shutdown).await?;
            }
            WireStep::End { end, target, mark } => {
                if let Some(t) = &target {
                    let cut = WireFate::Cut { kind: mark.action };
                    machine.note_wire(&t.type_url, &t.nonce, mark.clone(), cut, now());
                }
                let detail = end_text(&end);
                tap_fault(kit, machine.node_id(), mark, target.as_ref(), detail);
                return Err(end_stream(end, kit, responses).await);
            }
        }
    }
    Ok(())
}

/// A response an `oversize` rule padded past the gRPC limit: the client gets OUT_OF_RANGE
/// instead, which the log says (the unpadded response was checked before the rule).
fn warn_padded<M: MachineHooks>(kit: &StreamKit, response: &M::Response) {
    let (url, bytes) = (response.type_url(), response.entry_bytes());
    if bytes > kit.max_message_bytes {
        warn!(stream = kit.tap.stream(), r#type = %type_url::short_name(url), bytes,
            limit = kit.max_message_bytes,
            "response larger than --max-message-bytes: the client gets OUT_OF_RANGE instead");
    }
}

/// A `delay` holds `target` back for `by`: the ledger says so (since when, until when) and
/// the firing counts now, when the rule fired, not when the response goes out.
fn hold<M: MachineHooks>(
    machine: &mut M,
    kit: &mut StreamKit,
    by: Duration,
    mark: FaultMark,
    target: &Target,
) {
    let now = now();
    let fate = WireFate::Held {
        since: now.wall,
        until: now.wall + by,
    };
    machine.note_wire(&target.type_url, &target.nonce, mark, fate, now);
    kit.tap.fault_counted();
    kit.tap.publish(machine.take_status());
}

/// Waits `by` (forever with `None`), reading and writing nothing, unless the client leaves
/// or the server stops first.
async fn pause<T>(
    by: Option<Duration>,
    responses: &Responses<T>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), CloseReason> {
    let wait = async {
        match by {
            Some(by) => tokio::time::sleep(by).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = wait => Ok(()),
        _ = responses.closed() => Err(CloseReason::Client),
        _ = shutdown.wait_for(|stop| *stop) => Err(CloseReason::Shutdown),
    }
}

/// Ends the stream as `end` says; the status the client was sent goes into the transcript.
async fn end_stream<T>(end: StreamEnd, kit: &StreamKit, responses: &Responses<T>) -> Ending {
    let mut facts = None;
    let status = match end {
        StreamEnd::Close { code, message } => {
            facts = Some(StatusFacts {
                code,
                message: Box::from(message.as_str()),
            });
            Status::new(Code::from(code), message)
        }
        StreamEnd::ResetStream => reset_status(),
        StreamEnd::ResetConnection => {
            // Every stream on the connection ends with it; without a connection of ours
            // (an embedder's), the stream alone is reset.
            if !kit.kill.reset() {
                warn!(
                    stream = kit.tap.stream(),
                    "no connection to reset: resetting the stream"
                );
            }
            reset_status()
        }
    };
    // The body takes it as soon as the responses queued before it are written.
    let _ = responses.send(Err(status)).await;
    Ending {
        reason: CloseReason::Fault,
        status: facts,
    }
}

/// A stream end, for people (log lines, `fault` events).
pub(crate) fn end_text(end: &StreamEnd) -> String {
    match end {
        StreamEnd::Close { code, message } => format!(
            "closed with {} {message:?}",
            crate::faults::scenario::model::code_name(*code)
        ),
        StreamEnd::ResetStream => "stream reset (RST_STREAM, no status)".into(),
        StreamEnd::ResetConnection => "connection reset".into(),
    }
}

/// What became of a response, for people.
pub(crate) fn fate_text(fate: &WireFate) -> String {
    match fate {
        WireFate::Sent { nonce } => format!("sent with nonce {nonce}"),
        WireFate::Dropped => "dropped".into(),
        WireFate::Mutated { kind } => format!("sent changed ({kind})"),
        WireFate::Withheld { names } => format!("sent without {}", names.join(", ")),
        WireFate::Held { .. } => "held back".into(),
        WireFate::NeverSent => "never sent (stream closed)".into(),
        WireFate::Delayed { by } => format!("sent {} late", humantime::format_duration(*by)),
        WireFate::Retyped { to, .. } => format!("sent as {}", type_url::short_name(to)),
        WireFate::Cut { kind } => format!("not sent ({kind})"),
    }
}

/// Every firing is in the log, whatever observes the stream.
fn log_fault(
    kit: &StreamKit,
    node: Option<&str>,
    mark: &FaultMark,
    at: Option<(&str, &str)>,
    detail: &str,
) {
    let (url, nonce) = at.unwrap_or_default();
    warn!(stream = kit.tap.stream(), node = node.unwrap_or_default(),
        r#type = %type_url::short_name(url), rule = %mark.rule, action = mark.action, nonce,
        detail, "fault injected");
}

fn tap_fault(
    kit: &mut StreamKit,
    node: Option<&str>,
    mark: FaultMark,
    target: Option<&Target>,
    detail: String,
) {
    let at = target.map(|t| (t.type_url.as_str(), t.nonce.as_str()));
    log_fault(kit, node, &mark, at, &detail);
    kit.tap.fault(FaultFacts {
        mark,
        type_url: target.map(|t| TypeName::of(&t.type_url)),
        nonce: target.map(|t| Box::from(t.nonce.as_str())),
        detail: Some(detail.into()),
    });
}

/// `mark`: the rule that touched the response, and whether its firing was counted already.
async fn send_one<R: TapResponse>(
    kit: &mut StreamKit,
    responses: &Responses<R>,
    response: R,
    mark: Option<(&FaultMark, bool)>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), CloseReason> {
    let (url, nonce) = (response.type_url(), response.nonce());
    kit.judge
        .on_response(url, nonce, mark.is_some(), Instant::now());
    kit.tap.response(&response, mark);
    // A client that stops reading must not keep a shutting-down server waiting.
    tokio::select! {
        sent = responses.send(Ok(response)) => sent.map_err(|_| CloseReason::Client),
        _ = shutdown.wait_for(|stop| *stop) => Err(CloseReason::Shutdown),
    }
}
