//! The async loop around a stream state machine. It only moves messages: requests in, snapshot
//! changes in, responses out, status to the registry. All protocol decisions are in
//! [`crate::protocol::sotw`] and [`crate::protocol::delta`].
//!
//! Around the machine sit its seams, in the order a message meets them ([`StreamKit`]):
//! - the conformance judge sees each request before and after the machine handles it, and each
//!   response as it leaves;
//! - the fault stage plans how each batch of responses goes on the wire ([`act`]);
//! - the [`tap`] reports each message as it really went on the wire (after the fault stage) to
//!   the stream's timeline and the server's bus, and counts it.
//!
//! Whatever happens here affects this stream only (S12).

pub(crate) mod act;
mod judge;
pub(crate) mod tap;

use std::{sync::Arc, time::SystemTime};

use futures::{Stream, StreamExt};
use tokio::{
    sync::{mpsc, watch},
    time::Instant,
};
use tonic::{Code, Status};
use tracing::{debug, info, warn};

use judge::report_violations;
use xdsloop_proto::type_url;

use crate::{
    admin::registry::StreamKind,
    faults::scenario::Installed,
    faults::stage::FaultStage,
    judge::Judge,
    protocol::bounds::SubscriptionBounds,
    protocol::facts::{StatusFacts, TapRequest, TapResponse},
    protocol::machine::MachineHooks,
    protocol::now::Now,
    protocol::wire::WireResponse,
    snapshot::Snapshot,
    tap::CloseReason,
};
use tap::Tap;

/// Responses one stream may have queued for gRPC before its loop waits. An update yields at most
/// one response per type, and responses can be many MiB each: a small bound caps the memory a
/// slow client pins, while the loop waits the watch channel keeps only the newest snapshot
/// (latest wins, never a queue of stale ones).
pub(crate) const OUTBOUND_CAPACITY: usize = 4;

/// What a stream loop listens to besides its requests.
#[derive(Debug, Clone)]
pub(crate) struct Feeds {
    /// Its current value is the snapshot the machine was built from, already marked seen.
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// Turns true when the server stops.
    pub shutdown: watch::Receiver<bool>,
    /// The gRPC encoding limit, to explain in the log why a client gets OUT_OF_RANGE.
    pub max_message_bytes: usize,
    /// The fault scenario in force, then every change.
    pub scenarios: watch::Receiver<Arc<Installed>>,
    /// The request limit; the stream's subscriptions are bounded by it too.
    pub max_request_bytes: usize,
}

/// The seams around one stream's machine.
#[derive(Debug)]
pub(crate) struct StreamKit {
    pub kind: StreamKind,
    pub tap: Tap,
    pub judge: Judge,
    pub faults: FaultStage,
    /// When the stream opened (the fault stage's `after` counts from here).
    pub opened: std::time::Instant,
    /// Resets the stream's whole connection (`reset: { scope: connection }`).
    pub kill: crate::net::close::KillSwitch,
    /// The gRPC encoding limit, to say in the log when a response a rule padded is above it.
    pub max_message_bytes: usize,
    /// The server-wide rules, told of each request while one waits for it.
    pub server: crate::transport::outage::ServerFaults,
}

/// Why the loop stopped, and the status the client was sent, if one: the transcript records
/// it, so a replay ends the stream the same way.
#[derive(Debug)]
pub(crate) struct Ending {
    pub reason: CloseReason,
    pub status: Option<StatusFacts>,
}

impl Ending {
    fn because(reason: CloseReason) -> Self {
        Self {
            reason,
            status: None,
        }
    }
}

impl From<CloseReason> for Ending {
    fn from(reason: CloseReason) -> Self {
        Self::because(reason)
    }
}

/// The moment an event is handled, read once for the machine, which reads no clock. The
/// monotonic part is tokio's, so paused-time tests move heartbeats along.
pub(crate) fn now() -> Now {
    Now {
        at: Instant::now().into_std(),
        wall: SystemTime::now(),
    }
}

/// Runs one stream until the client goes away, the request stream ends or fails, or the server
/// stops.
pub(crate) async fn run<M, S>(
    mut machine: M,
    mut requests: S,
    feeds: Feeds,
    responses: mpsc::Sender<Result<M::Response, Status>>,
    mut kit: StreamKit,
) where
    M: MachineHooks,
    S: Stream<Item = Result<M::Request, Status>> + Unpin,
{
    let Feeds {
        mut snapshots,
        mut shutdown,
        max_message_bytes,
        mut scenarios,
        max_request_bytes,
    } = feeds;
    let mut bounds = SubscriptionBounds::new(max_request_bytes);
    let stream = kit.tap.stream();
    let (mut source_open, mut scenarios_open) = (true, true);
    kit.faults
        .load(scenarios.borrow_and_update().clone(), kit.kind, None);
    let ending = loop {
        // Heartbeats (S15): the machine says when; the loop only sleeps until then.
        let tick = until(machine.next_deadline());
        let (timer, mut timer_due) = (act::timer_deadline(&kit), false);
        let mut out = tokio::select! {
            request = requests.next() => match request {
                Some(Ok(request)) => on_request(&mut machine, request, &mut kit),
                Some(Err(status)) => break ended_by_error(stream, &responses, status),
                None => {
                    debug!(stream, "client closed its side of the stream");
                    break Ending::because(CloseReason::Client);
                }
            },
            changed = snapshots.changed(), if source_open => {
                if changed.is_err() {
                    // The snapshot source is gone: keep serving the last snapshot.
                    source_open = false;
                    continue;
                }
                let snapshot = snapshots.borrow_and_update().clone();
                machine.on_snapshot(snapshot, now())
            },
            changed = scenarios.changed(), if scenarios_open => {
                if changed.is_err() {
                    // Nobody can change the scenario any more: keep the one in force.
                    scenarios_open = false;
                    continue;
                }
                load_scenario(&mut machine, &mut kit, &mut scenarios)
            },
            () = act::fault_timer(timer) => {
                timer_due = true;
                Vec::new()
            },
            _ = shutdown.wait_for(|stop| *stop) => break Ending::because(CloseReason::Shutdown),
            _ = responses.closed() => {
                debug!(stream, "client went away");
                break Ending::because(CloseReason::Client);
            }
            () = tick => Vec::new(),
        };
        if timer_due {
            match act::on_timer(&mut machine, &mut kit, &responses, &mut shutdown).await {
                Ok(flapped) => out.extend(flapped),
                Err(ending) => break ending,
            }
        }
        // After every event: it may have made a heartbeat due, or scheduled one.
        out.extend(machine.on_tick(now()));
        if let Err(ending) = publish_status(&mut machine, &mut kit, &mut bounds, &responses, &out) {
            break ending;
        }
        warn_oversized::<M>(stream, &out, max_message_bytes);
        // A scenario installed before these responses were made applies to them, even when
        // its change and the snapshot's were both waiting and `select!` took the snapshot's.
        if scenarios_open && scenarios.has_changed().unwrap_or(false) {
            out.extend(load_scenario(&mut machine, &mut kit, &mut scenarios));
        }
        if let Err(ending) = act::send(&mut machine, &mut kit, &responses, out, &mut shutdown).await
        {
            break ending;
        }
        if let Some(status) = machine.take_ending() {
            break ended_by_machine(stream, &responses, status, &mut shutdown).await;
        }
    };
    finish(machine, kit, ending);
}

/// Follows the scenario just installed. What a `flap` or a `withhold` that went with the old
/// one hid is served at once. A scenario removed (`DELETE /scenario`), or the one in force
/// sent again (`POST /resync`), resyncs the stream: every type the client may not hold as
/// served is sent again ([`MachineHooks::resync`]). Returns the responses.
fn load_scenario<M: MachineHooks>(
    machine: &mut M,
    kit: &mut StreamKit,
    scenarios: &mut watch::Receiver<Arc<Installed>>,
) -> Vec<M::Response> {
    let installed = scenarios.borrow_and_update().clone();
    let again = kit.faults.follows(&installed);
    let resync = again || installed.is_empty();
    if !again {
        kit.faults.load(installed, kit.kind, machine.node_id());
    }
    let mut out = act::on_flap(machine, kit);
    if resync {
        out.extend(machine.resync(now()));
        return out;
    }
    for type_url in kit.faults.released() {
        let owed = machine
            .ledger(&type_url)
            .and_then(|l| l.last_sent.as_ref())
            .is_some_and(|s| s.withheld.is_some());
        if owed {
            out.extend(machine.repeat_last(&type_url, now()));
        }
    }
    out
}

/// After every event: what changed goes to the tap; the stream ends if its subscriptions went
/// over the limit or the strict judge found a violation. Then `out`, the responses the event
/// made, never go on the wire: the ledger forgets them first, so `/status` lists only what
/// went out.
fn publish_status<M: MachineHooks>(
    machine: &mut M,
    kit: &mut StreamKit,
    bounds: &mut SubscriptionBounds,
    responses: &mpsc::Sender<Result<M::Response, Status>>,
    out: &[M::Response],
) -> Result<(), Ending> {
    let stream = kit.tap.stream();
    let strict = kit.judge.failure().is_some();
    if strict {
        withdraw(machine, out);
    }
    let mut changed = machine.take_status();
    let over = bounds.check(&changed);
    if over.is_err() && !strict {
        withdraw(machine, out);
        changed.extend(machine.take_status());
    }
    kit.tap.publish(changed);
    if let Err(reason) = over {
        warn!(stream, %reason, "stream ended: its subscriptions are over the limit");
        return Err(ended_by_error(
            stream,
            responses,
            Status::resource_exhausted(reason),
        ));
    }
    match judge::strict_ending(kit, responses) {
        Some(ending) => Err(ending),
        None => Ok(()),
    }
}

fn withdraw<M: MachineHooks>(machine: &mut M, out: &[M::Response]) {
    for response in out.iter().rev() {
        machine.withdraw(response.type_url(), response.nonce());
    }
}

/// Sleeps until `deadline` (on tokio's clock, so paused-time tests can move it), or forever.
async fn until(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

/// One request through the judge, the machine and the tap.
fn on_request<M: MachineHooks>(
    machine: &mut M,
    request: M::Request,
    kit: &mut StreamKit,
) -> Vec<M::Response> {
    let view = request.view();
    kit.judge.before(
        &view,
        machine.ledger(view.type_url),
        machine.nonces_issued(),
        Instant::now().into_std(),
    );
    // Only a stream some scenario rule applies to needs the type after the request is gone.
    let type_url = (!kit.faults.is_idle()).then(|| view.type_url.to_string());
    let facts = kit.tap.capture().map(|c| (request.facts(c), c));
    let asking = kit
        .server
        .note(machine.node_id(), &request, |url| machine.sent_names(url));
    let mut out = machine.on_request(request, now());
    let exchange = machine.exchange();
    kit.judge.after(exchange);
    if !kit.tap.is_identified()
        && let Some(node) = machine.node_id()
    {
        crate::protocol::chatter::stream_line!(stream = kit.tap.stream(), node, "node identified");
        kit.tap.identify(node);
        kit.faults.identify(kit.kind, node);
    }
    kit.tap.request(facts, exchange);
    // A request that sets off an outage gets no answer: the server goes away instead.
    if let Some(asking) = asking
        && kit.server.asked(kit.tap.stream(), kit.kind, asking)
    {
        withdraw(machine, &out);
        out.clear();
    }
    report_violations(kit);
    if let Some(type_url) = type_url {
        let node = machine.node_id().map(str::to_owned);
        let ctx = act::ctx(node.as_deref(), kit);
        let again = kit
            .faults
            .after_exchange(&ctx, &type_url, exchange, machine);
        out.extend(again);
    }
    out
}

/// A malformed message, or a client that vanished mid-stream: end this stream only, and tell
/// the client why if it is still listening.
fn ended_by_error<T>(
    stream: u64,
    responses: &mpsc::Sender<Result<T, Status>>,
    status: Status,
) -> Ending {
    info!(stream, code = ?status.code(), error = status.message(), "stream ended by an error");
    if status.code() == Code::Cancelled {
        // The request body broke (see `Requests`): the client reset the stream or left.
        return Ending::because(CloseReason::Client);
    }
    let facts = StatusFacts {
        code: status.code() as i32,
        message: Box::from(status.message()),
    };
    let _ = responses.try_send(Err(status));
    Ending {
        reason: CloseReason::Status,
        status: Some(facts),
    }
}

/// The machine ended the stream: the client gets the status, the log says why.
async fn ended_by_machine<T>(
    stream: u64,
    responses: &mpsc::Sender<Result<T, Status>>,
    status: StatusFacts,
    shutdown: &mut watch::Receiver<bool>,
) -> Ending {
    warn!(stream, code = status.code, error = %status.message, "stream ended by the server");
    let grpc = Status::new(Code::from_i32(status.code), status.message.to_string());
    // Behind the responses already queued; a client that stops reading must not keep a
    // stopping server waiting.
    tokio::select! {
        _ = responses.send(Err(grpc)) => {}
        _ = shutdown.wait_for(|stop| *stop) => {}
    }
    Ending {
        reason: CloseReason::Status,
        status: Some(status),
    }
}

/// The stream ended: the judge sees what the client held, the tap says why it closed.
fn finish<M: MachineHooks>(machine: M, mut kit: StreamKit, mut ending: Ending) {
    let stream = kit.tap.stream();
    if ending.reason == CloseReason::Client && kit.server.in_outage() {
        // The client did not leave: an outage closed its connection.
        ending.reason = CloseReason::Fault;
    }
    if kit.judge.wants_held() {
        let cut = matches!(ending.reason, CloseReason::Status | CloseReason::Fault);
        kit.judge
            .closed(machine.held(), cut, Instant::now().into_std());
        report_violations(&mut kit);
    }
    kit.tap.closed(ending.reason, ending.status);
    crate::protocol::chatter::stream_line!(stream, "stream closed");
}

/// tonic refuses to encode these and tells only the client; say it in the server log too.
fn warn_oversized<M: MachineHooks>(stream: u64, out: &[M::Response], limit: usize) {
    for response in out {
        let (url, bytes) = (response.type_url(), response.entry_bytes());
        if bytes > limit {
            warn!(stream, r#type = %type_url::short_name(url), bytes, limit,
                "response larger than --max-message-bytes: the client gets OUT_OF_RANGE instead");
        }
    }
}

#[cfg(test)]
mod tests;
