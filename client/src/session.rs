//! The connection lifecycle around the mux: Connecting → Streaming → BackingOff → Connecting.
//! This loop only moves messages; every protocol decision is the mux's (C10, C11, C13).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;
use tonic::transport::Endpoint;

use crate::event::{ConnectionReport, Event, Report};
use crate::mux::Mux;
use crate::request::Outgoing;
use crate::source::{Response, Source};
use crate::store::Store;
use crate::watch_map::{Interest, WatchId};

/// Reconnect backoff settings. Defaults follow Envoy: 500 ms doubling up to 30 s, ±20% jitter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackoffConfig {
    pub initial: Duration,
    pub max: Duration,
    pub multiplier: f64,
    /// Fraction of the delay randomised either way, so many clients don't reconnect in step.
    pub jitter: f64,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            multiplier: 2.0,
            jitter: 0.2,
        }
    }
}

/// Exponential backoff with jitter and a cap (C10). Every delay is positive: the client always
/// waits before re-creating a stream. Reset only once a response arrived.
#[derive(Debug)]
pub struct Backoff {
    config: BackoffConfig,
    attempt: u32,
    rng: fastrand::Rng,
}

impl Backoff {
    pub fn new(config: BackoffConfig) -> Self {
        Self::with_rng(config, fastrand::Rng::new())
    }

    pub fn with_rng(config: BackoffConfig, rng: fastrand::Rng) -> Self {
        Self {
            config,
            attempt: 0,
            rng,
        }
    }

    /// Failed attempts since the last reset.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The delay before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let c = self.config;
        let exponent = self.attempt.min(64) as i32;
        let base = c.initial.as_secs_f64() * c.multiplier.powi(exponent);
        let base = base.min(c.max.as_secs_f64());
        let factor = 1.0 - c.jitter + 2.0 * c.jitter * self.rng.f64();
        let delay = (base * factor).min(c.max.as_secs_f64());
        self.attempt = self.attempt.saturating_add(1);
        Duration::from_secs_f64(delay).max(Duration::from_millis(1))
    }

    /// A response arrived: the connection is healthy again.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    /// Sleeps for the next delay; returns it.
    pub async fn wait(&mut self) -> Duration {
        let delay = self.next_delay();
        tokio::time::sleep(delay).await;
        delay
    }
}

/// Requests from handles to the session.
pub(crate) enum Command {
    Watch {
        id: WatchId,
        type_url: String,
        interest: Interest,
        events: mpsc::Sender<Event>,
    },
    SetInterest {
        id: WatchId,
        interest: Interest,
    },
    Unwatch {
        id: WatchId,
    },
}

enum Exit {
    Retry,
    Stop,
}

pub(crate) struct Session {
    pub mux: Mux,
    pub source: Source,
    pub endpoint: Endpoint,
    pub server: String,
    pub max_message_bytes: usize,
    pub backoff: Backoff,
    pub commands: mpsc::Receiver<Command>,
    pub subscribers: HashMap<WatchId, mpsc::Sender<Event>>,
    pub reports: broadcast::Sender<Report>,
    pub store: watch::Sender<Arc<Store>>,
}

/// Capacity of a stream's outgoing request queue. At most one request per type is produced
/// per input, so this only absorbs a burst (the resubscription) while HTTP/2 opens the stream.
const REQUEST_QUEUE: usize = 64;

fn now() -> std::time::Instant {
    Instant::now().into_std()
}

impl Session {
    /// Runs until `shutdown` resolves or every handle is gone.
    pub(crate) async fn run(mut self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        // Like Envoy, the stream opens once there is something to ask for.
        match self.command_or_shutdown(&mut shutdown).await {
            Some(command) => self.handle(command),
            None => return,
        }
        self.dispatch_offline().await;
        loop {
            if let Exit::Stop = self.connect_and_stream(&mut shutdown).await {
                return;
            }
            let delay = self.backoff.next_delay();
            let attempt = self.backoff.attempt();
            self.report(Report::Connection(ConnectionReport::BackingOff {
                delay,
                attempt,
            }));
            let sleep = tokio::time::sleep(delay);
            tokio::pin!(sleep);
            loop {
                tokio::select! {
                    _ = &mut sleep => break,
                    command = self.command_or_shutdown(&mut shutdown) => match command {
                        Some(command) => self.handle(command),
                        None => return,
                    },
                }
                self.dispatch_offline().await;
            }
        }
    }

    async fn command_or_shutdown(
        &mut self,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> Option<Command> {
        tokio::select! {
            _ = shutdown => None,
            command = self.commands.recv() => command,
        }
    }

    async fn connect_and_stream(
        &mut self,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> Exit {
        let server = self.server.clone();
        let attempt = self.backoff.attempt() + 1;
        self.report(Report::Connection(ConnectionReport::Connecting {
            server: server.clone(),
            attempt,
        }));
        let connected = tokio::select! {
            _ = &mut *shutdown => return Exit::Stop,
            connected = self.endpoint.connect() => connected,
        };
        let channel = match connected {
            Ok(channel) => channel,
            Err(e) => {
                let reason = error_chain(&e);
                tracing::warn!(%server, %reason, "connect failed");
                self.report(Report::Connection(ConnectionReport::ConnectFailed {
                    server,
                    reason,
                }));
                return Exit::Retry;
            }
        };
        self.report(Report::Connection(ConnectionReport::Connected { server }));
        // Queue the resubscription before opening: some servers send no headers until they
        // have a request, so waiting for the open first could deadlock.
        self.mux.on_stream_start(now());
        let output = self.mux.take_output();
        let (tx, rx) = mpsc::channel(REQUEST_QUEUE.max(output.requests.len()));
        self.dispatch(output, Some(&tx)).await;
        let opened = tokio::select! {
            _ = &mut *shutdown => return Exit::Stop,
            opened = self.source.open(channel, self.max_message_bytes, rx) => opened,
        };
        let mut incoming = match opened {
            Ok(incoming) => incoming,
            Err(status) => {
                return self
                    .stream_ended(format!("open failed: {}", status.message()))
                    .await;
            }
        };
        loop {
            let deadline = self.mux.next_deadline().map(Instant::from_std);
            let timer = async move {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut *shutdown => return close(tx, incoming).await,
                command = self.commands.recv() => match command {
                    Some(command) => self.handle(command),
                    None => return close(tx, incoming).await,
                },
                message = incoming.next() => match message {
                    Ok(Some(response)) => {
                        self.backoff.reset();
                        match response {
                            Response::Sotw(r) => self.mux.on_sotw_response(r, now(), SystemTime::now()),
                            Response::Delta(r) => self.mux.on_delta_response(r, now(), SystemTime::now()),
                        }
                    }
                    Ok(None) => return self.stream_ended("server closed the stream".into()).await,
                    Err(status) => return self.stream_ended(status_text(&status)).await,
                },
                _ = timer => self.mux.on_timer(now(), SystemTime::now()),
            }
            let output = self.mux.take_output();
            self.dispatch(output, Some(&tx)).await;
        }
    }

    async fn stream_ended(&mut self, reason: String) -> Exit {
        tracing::warn!(server = %self.server, %reason, "stream closed");
        self.mux.on_stream_end(&reason);
        let output = self.mux.take_output();
        self.dispatch(output, None).await;
        self.report(Report::Connection(ConnectionReport::StreamClosed {
            reason,
        }));
        Exit::Retry
    }

    /// Applies a handle's command to the mux; the caller dispatches the output.
    fn handle(&mut self, command: Command) {
        let at = now();
        match command {
            Command::Watch {
                id,
                type_url,
                interest,
                events,
            } => {
                self.subscribers.insert(id, events);
                self.mux.add_watch(id, &type_url, interest, at);
            }
            Command::SetInterest { id, interest } => self.mux.set_interest(id, interest, at),
            Command::Unwatch { id } => {
                self.subscribers.remove(&id);
                self.mux.remove_watch(id, at);
            }
        }
    }

    /// Dispatches output made while no stream is live (the mux queues no requests then).
    async fn dispatch_offline(&mut self) {
        let output = self.mux.take_output();
        self.dispatch(output, None).await;
    }

    /// Hands events to subscriptions first (waiting if one is slow: like Envoy's callbacks, an
    /// update reaches its subscribers before it is ACKed), then the requests, the new store and
    /// the reports.
    async fn dispatch(
        &mut self,
        mut output: crate::mux::Output,
        tx: Option<&mpsc::Sender<Outgoing>>,
    ) {
        loop {
            let mut gone = Vec::new();
            for (id, event) in output.deliveries.drain(..) {
                let Some(subscriber) = self.subscribers.get(&id) else {
                    continue;
                };
                if subscriber.send(event).await.is_err() {
                    gone.push(id);
                }
            }
            for request in output.requests.drain(..) {
                if let Some(tx) = tx {
                    // A closed queue means the stream is gone; the reader notices and reconnects.
                    let _ = tx.send(request).await;
                }
            }
            // The store first: whoever hears a report must find the store already updated.
            if output.store_changed {
                self.store.send_replace(Arc::new(self.mux.store().clone()));
            }
            for report in output.reports.drain(..) {
                self.report(report);
            }
            if gone.is_empty() {
                return;
            }
            for id in gone {
                self.subscribers.remove(&id);
                self.mux.remove_watch(id, now());
            }
            output = self.mux.take_output();
        }
    }

    fn report(&self, report: Report) {
        // No receivers is fine: reports are for whoever is watching.
        let _ = self.reports.send(report);
    }
}

/// How long a stopping client waits for the server to end the stream after the client
/// half-closed it: long enough for the last ACK/NACK to be delivered, short enough to exit.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Ends the stream gracefully: half-close, so queued requests (the last ACK or NACK) are
/// flushed, then wait briefly for the server to finish.
async fn close(tx: mpsc::Sender<Outgoing>, mut incoming: crate::source::Incoming) -> Exit {
    drop(tx);
    let drain = async { while let Ok(Some(_)) = incoming.next().await {} };
    let _ = tokio::time::timeout(CLOSE_GRACE, drain).await;
    Exit::Stop
}

/// An error with its causes, e.g. "transport error: tcp connect error: Connection refused".
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn status_text(status: &tonic::Status) -> String {
    let mut text = format!("{:?}: {}", status.code(), status.message());
    if let Some(source) = std::error::Error::source(status) {
        text.push_str(": ");
        text.push_str(&error_chain(source));
    }
    text
}

#[cfg(test)]
mod tests;
