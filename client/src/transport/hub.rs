//! What every transport drives: the mux plus everything around it that does not depend on the
//! wire (`Hub`): the handles' commands, delivering events to subscriptions, publishing the
//! store and reports. The transports only move messages between the wire and the hub; every
//! protocol decision is the mux's.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;
use xdsloop_proto::csds::ClientConfig;

use crate::core::event::{Event, Report};
use crate::core::mux::{Mux, Output, Proposal};
use crate::core::request::Outgoing;
use crate::core::store::Store;
use crate::core::validate::Rejection;
use crate::core::watch_map::{Interest, WatchId};

/// A watch to start, and where its events go.
pub(crate) struct NewWatch {
    pub id: WatchId,
    pub type_url: String,
    pub interest: Interest,
    pub events: Subscriber,
}

/// Where a subscription's events go.
pub(crate) enum Subscriber {
    /// A queue its handle reads with `recv`; it hears of updates once they are applied.
    Events(mpsc::Sender<Event>),
    /// Its callbacks, run on a task of their own: they decide each update they are told of
    /// before it is applied or answered.
    Callbacks(mpsc::Sender<Call>),
}

/// One call of a subscription's callbacks; `verdict` is there when the update waits for it.
pub(crate) struct Call {
    pub event: Event,
    pub verdict: Option<oneshot::Sender<Result<(), Rejection>>>,
}

/// What handing an event to a subscription came to.
enum Handed {
    Sent,
    /// The subscription is gone (its handle or its callbacks' task ended).
    Gone,
    Stopping,
}

/// Requests from handles to the session.
pub(crate) enum Command {
    /// Watches subscribed together. They reach the mux in one step, with no response handled
    /// in between, so [`Report::Synced`] never covers only part of them.
    Watch(Vec<NewWatch>),
    SetInterest {
        id: WatchId,
        interest: Interest,
    },
    Unwatch {
        id: WatchId,
    },
    /// Envoy's `GrpcMux::pause`: hold back requests of a type (ACKs included) until the
    /// matching `Resume`; pauses of one type nest.
    Pause {
        type_url: String,
    },
    Resume {
        type_url: String,
    },
    /// CSDS: what this client holds now, answered from the mux (C18); `contents` false leaves
    /// the resources themselves out.
    Status {
        contents: bool,
        reply: oneshot::Sender<ClientConfig>,
    },
}

impl Command {
    /// Whether the command changes what the client wants (a status query or a pause does not:
    /// it must not be what opens the first stream).
    pub(crate) fn is_interest(&self) -> bool {
        matches!(
            self,
            Command::Watch(_) | Command::SetInterest { .. } | Command::Unwatch { .. }
        )
    }
}

/// Where a session publishes what it applied: its part of the client's one store (a client
/// with several config sources runs a session per source, each holding its own types).
pub(crate) struct StoreOut {
    part: usize,
    parts: Arc<std::sync::Mutex<Vec<Arc<Store>>>>,
    client: Arc<watch::Sender<Arc<Store>>>,
}

impl StoreOut {
    /// The outlets of `sessions` sessions into one client store.
    pub(crate) fn split(client: watch::Sender<Arc<Store>>, sessions: usize) -> Vec<StoreOut> {
        let parts = Arc::new(std::sync::Mutex::new(vec![Arc::default(); sessions]));
        let client = Arc::new(client);
        (0..sessions)
            .map(|part| StoreOut {
                part,
                parts: parts.clone(),
                client: client.clone(),
            })
            .collect()
    }

    /// Publishes this session's store; the client's store is every session's together.
    pub(crate) fn publish(&self, store: &Store) {
        let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        parts[self.part] = Arc::new(store.clone());
        let whole = match &parts[..] {
            [one] => one.clone(),
            many => {
                let mut whole = Store::default();
                for part in many {
                    whole.absorb(part);
                }
                Arc::new(whole)
            }
        };
        self.client.send_replace(whole);
    }
}

/// Where a transport puts the requests the mux produced.
pub(crate) trait Wire {
    fn send(&mut self, request: Outgoing) -> impl Future<Output = ()> + Send;
}

/// No wire: while nothing is connected the mux produces no requests anyway.
pub(crate) struct Offline;

impl Wire for Offline {
    async fn send(&mut self, _request: Outgoing) {}
}

/// The mux plus everything around it that does not depend on the transport.
pub(crate) struct Hub {
    pub mux: Mux,
    pub commands: mpsc::Receiver<Command>,
    pub subscribers: HashMap<WatchId, Subscriber>,
    pub reports: broadcast::Sender<Report>,
    pub store: StoreOut,
    /// Becomes true when the client is stopped or dropped, or its shutdown future resolves.
    /// Handing an event to a subscription nobody reads waits for room in its queue; this lets
    /// that wait end, so stopping always completes.
    pub stopping: watch::Receiver<bool>,
    /// How long callbacks may take to decide an update before it counts as rejected.
    pub callback_timeout: Duration,
}

pub(crate) fn now() -> std::time::Instant {
    Instant::now().into_std()
}

impl Hub {
    /// The next command, or `None` on shutdown or once every handle is gone.
    pub(crate) async fn command_or_shutdown(
        &mut self,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> Option<Command> {
        tokio::select! {
            _ = shutdown => None,
            command = self.commands.recv() => command,
        }
    }

    /// Applies a handle's command to the mux; the caller dispatches the output.
    pub(crate) fn handle(&mut self, command: Command) {
        let at = now();
        match command {
            Command::Watch(watches) => {
                for watch in watches {
                    let (id, type_url, interest) = (watch.id, &watch.type_url, watch.interest);
                    match watch.events {
                        Subscriber::Events(_) => self.mux.add_watch(id, type_url, interest, at),
                        Subscriber::Callbacks(_) => {
                            self.mux.add_deciding_watch(id, type_url, interest, at)
                        }
                    }
                    self.subscribers.insert(id, watch.events);
                }
            }
            Command::SetInterest { id, interest } => self.mux.set_interest(id, interest, at),
            Command::Unwatch { id } => {
                self.subscribers.remove(&id);
                self.mux.remove_watch(id, at);
            }
            Command::Pause { type_url } => self.mux.pause(&type_url),
            Command::Resume { type_url } => self.mux.resume(&type_url, at),
            Command::Status { contents, reply } => {
                // The asker may have given up; nothing to do then.
                let _ = reply.send(self.mux.client_config(contents));
            }
        }
    }

    /// Dispatches whatever the mux produced since the last call.
    pub(crate) async fn flush(&mut self, wire: &mut impl Wire) {
        let output = self.mux.take_output();
        self.dispatch(output, wire).await;
    }

    /// Hands events to subscriptions first (waiting if one is slow: like Envoy's callbacks, an
    /// update reaches its subscribers before it is ACKed), then asks the callbacks of each
    /// held-back update for their verdict and gives it to the mux (so the ACK or NACK it
    /// builds follows the verdict), then sends the requests, the new store and the reports.
    pub(crate) async fn dispatch(&mut self, mut output: Output, wire: &mut impl Wire) {
        let mut gone = Vec::new();
        loop {
            for (id, event) in output.deliveries.drain(..) {
                match self.hand(id, event, None).await {
                    Handed::Sent => {}
                    Handed::Gone => gone.push(id),
                    Handed::Stopping => return,
                }
            }
            if !output.proposals.is_empty() {
                for proposal in std::mem::take(&mut output.proposals) {
                    let (type_url, nonce) = (proposal.type_url.clone(), proposal.nonce.clone());
                    let Some(verdict) = self.ask(proposal, &mut gone).await else {
                        return;
                    };
                    self.mux.decide(&type_url, &nonce, verdict, now());
                }
                // The verdicts' output (events, the ACK or NACK, reports) follows in order.
                let more = self.mux.take_output();
                output.deliveries.extend(more.deliveries);
                output.proposals.extend(more.proposals);
                output.requests.extend(more.requests);
                output.reports.extend(more.reports);
                output.store_changed |= more.store_changed;
                continue;
            }
            for request in output.requests.drain(..) {
                tokio::select! {
                    _ = wire.send(request) => {}
                    _ = stop_requested(&mut self.stopping) => return,
                }
            }
            // The store first: whoever hears a report must find the store already updated.
            if output.store_changed {
                self.store.publish(self.mux.store());
            }
            for report in output.reports.drain(..) {
                self.report(report);
            }
            if gone.is_empty() {
                return;
            }
            for id in gone.drain(..) {
                self.subscribers.remove(&id);
                self.mux.remove_watch(id, now());
            }
            output = self.mux.take_output();
        }
    }

    /// Hands an event to a subscription: its queue, or its callbacks (with `verdict` if the
    /// update waits for their answer).
    async fn hand(
        &mut self,
        id: WatchId,
        event: Event,
        verdict: Option<oneshot::Sender<Result<(), Rejection>>>,
    ) -> Handed {
        let sent = match self.subscribers.get(&id) {
            None => return Handed::Sent,
            Some(Subscriber::Events(queue)) => tokio::select! {
                sent = queue.send(event) => sent.is_ok(),
                _ = stop_requested(&mut self.stopping) => return Handed::Stopping,
            },
            Some(Subscriber::Callbacks(calls)) => tokio::select! {
                sent = calls.send(Call { event, verdict }) => sent.is_ok(),
                _ = stop_requested(&mut self.stopping) => return Handed::Stopping,
            },
        };
        if sent { Handed::Sent } else { Handed::Gone }
    }

    /// Envoy's `onConfigUpdate` and the status it returns: asks every deciding subscription of
    /// a held-back update and waits, at most `callback_timeout`, for all of them. Every
    /// rejection's message goes into the one NACK; a subscription that does not answer in
    /// time rejects the update too (it was not applied). `None`: the client is stopping.
    async fn ask(
        &mut self,
        proposal: Proposal,
        gone: &mut Vec<WatchId>,
    ) -> Option<Result<(), Rejection>> {
        let timeout = self.callback_timeout;
        let deadline = Instant::now() + timeout;
        let late = |id: WatchId| {
            format!("the callbacks of subscription {id} did not answer within {timeout:?}")
        };
        let mut problems = Vec::new();
        let mut answers = Vec::new();
        for (id, event) in proposal.asks {
            let (reply, answer) = oneshot::channel();
            let hand = tokio::time::timeout_at(deadline, self.hand(id, event, Some(reply)));
            match hand.await {
                Ok(Handed::Sent) => answers.push((id, answer)),
                Ok(Handed::Gone) => gone.push(id),
                Ok(Handed::Stopping) => return None,
                Err(_) => problems.push(late(id)),
            }
        }
        for (id, answer) in answers {
            let answer = tokio::select! {
                answer = tokio::time::timeout_at(deadline, answer) => answer,
                _ = stop_requested(&mut self.stopping) => return None,
            };
            match answer {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(rejection))) => problems.extend(rejection.problems),
                // Its task ended (the callbacks panicked, or the subscription is gone).
                Ok(Err(_)) => problems.push(format!(
                    "the callbacks of subscription {id} ended without answering"
                )),
                Err(_) => problems.push(late(id)),
            }
        }
        if problems.is_empty() {
            return Some(Ok(()));
        }
        tracing::warn!(type_url = %proposal.type_url, version = %proposal.version, ?problems, "update rejected by its callbacks");
        Some(Err(Rejection {
            problems,
            ..Rejection::default()
        }))
    }

    pub(crate) fn report(&self, report: Report) {
        // No receivers is fine: reports are for whoever is watching.
        let _ = self.reports.send(report);
    }

    /// Sleeps until `until` while still serving commands and timers (their output is
    /// dispatched with no wire: TTLs lapse while disconnected, C17). Returns false on shutdown
    /// or once every handle is gone.
    pub(crate) async fn idle_until(
        &mut self,
        until: Instant,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> bool {
        let sleep = tokio::time::sleep_until(until);
        tokio::pin!(sleep);
        loop {
            let timer = timer(self.mux.next_deadline());
            tokio::select! {
                _ = &mut sleep => return true,
                command = self.command_or_shutdown(shutdown) => match command {
                    Some(command) => self.handle(command),
                    None => return false,
                },
                _ = timer => self.mux.on_timer(now(), SystemTime::now()),
            }
            self.flush(&mut Offline).await;
        }
    }
}

/// Resolves once a stop was asked for; never if the flag's sender is gone without asking (a
/// test that drives the hub itself).
pub(crate) async fn stop_requested(stopping: &mut watch::Receiver<bool>) {
    if stopping.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Sleeps until the mux's next timer (`deadline`), or forever without one.
pub(crate) async fn timer(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

/// An error with its causes, e.g. "transport error: tcp connect error: Connection refused".
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
