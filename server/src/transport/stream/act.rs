//! Carrying out the fault stage's plan for one batch of responses: each response the plan
//! sends is told to the machine (when a rule touched it), the judge and the tap, then handed
//! to the stream's bounded channel.

use std::time::Instant;

use tokio::sync::{mpsc, watch};
use tonic::Status;

use super::StreamKit;
use crate::protocol::{
    faults::stage::{Plan, StreamCtx, WireStep},
    machine::StreamMachine,
    tap::{CloseReason, TapResponse},
    wire::{FaultMark, WireFate},
};

type Responses<T> = mpsc::Sender<Result<T, Status>>;

/// Sends one batch as planned; `Err` says why the stream must end (the client went away, the
/// server is stopping).
pub async fn send<M: StreamMachine>(
    machine: &mut M,
    kit: &mut StreamKit,
    responses: &Responses<M::Response>,
    out: Vec<M::Response>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), CloseReason> {
    if out.is_empty() {
        return Ok(());
    }
    let ctx = StreamCtx {
        node: machine.node_id(),
        kind: kit.kind,
    };
    let plan = kit.faults.plan(&ctx, out);
    let sent = match plan {
        Plan::AsIs(out) => send_as_is(kit, responses, out, shutdown).await,
        Plan::Steps(steps) => send_steps(machine, kit, responses, steps, shutdown).await,
    };
    kit.tap.flush();
    sent
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

async fn send_steps<M: StreamMachine>(
    machine: &mut M,
    kit: &mut StreamKit,
    responses: &Responses<M::Response>,
    steps: Vec<WireStep<M::Response>>,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), CloseReason> {
    for step in steps {
        match step {
            WireStep::Send { response, mark } => {
                if let Some(mark) = &mark {
                    let (url, nonce) = (response.type_url(), response.nonce());
                    let fate = WireFate::Sent {
                        nonce: nonce.to_string(),
                    };
                    machine.note_wire(url, nonce, mark.clone(), fate);
                }
                send_one(kit, responses, response, mark.as_ref(), shutdown).await?;
            }
        }
    }
    Ok(())
}

async fn send_one<R: TapResponse>(
    kit: &mut StreamKit,
    responses: &Responses<R>,
    response: R,
    mark: Option<&FaultMark>,
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
