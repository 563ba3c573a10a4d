//! What every config source shares around the mux: the handles' commands, delivering events to
//! subscriptions, publishing the store and reports ([`Core`]), and the reconnect [`Backoff`].
//! The transports (`source::*`) only move messages; every protocol decision is the mux's.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;

use crate::event::{Event, Report};
use crate::mux::{Mux, Output};
use crate::request::Outgoing;
use crate::source::Transport;
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

/// A watch to start, and where its events go.
pub(crate) struct NewWatch {
    pub id: WatchId,
    pub type_url: String,
    pub interest: Interest,
    pub events: mpsc::Sender<Event>,
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
}

/// A running client: the shared core driven by the transport its source chose.
pub(crate) struct Session {
    pub core: Core,
    pub transport: Transport,
}

impl Session {
    /// Runs until `shutdown` resolves or every handle is gone.
    pub(crate) async fn run(mut self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        // Like Envoy, nothing goes on the wire until there is something to ask for.
        match self.core.command_or_shutdown(&mut shutdown).await {
            Some(command) => self.core.handle(command),
            None => return,
        }
        self.core.flush(&mut Offline).await;
        self.transport.run(&mut self.core, &mut shutdown).await;
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
pub(crate) struct Core {
    pub mux: Mux,
    pub commands: mpsc::Receiver<Command>,
    pub subscribers: HashMap<WatchId, mpsc::Sender<Event>>,
    pub reports: broadcast::Sender<Report>,
    pub store: watch::Sender<Arc<Store>>,
}

pub(crate) fn now() -> std::time::Instant {
    Instant::now().into_std()
}

impl Core {
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
                    self.subscribers.insert(watch.id, watch.events);
                    self.mux
                        .add_watch(watch.id, &watch.type_url, watch.interest, at);
                }
            }
            Command::SetInterest { id, interest } => self.mux.set_interest(id, interest, at),
            Command::Unwatch { id } => {
                self.subscribers.remove(&id);
                self.mux.remove_watch(id, at);
            }
        }
    }

    /// Dispatches whatever the mux produced since the last call.
    pub(crate) async fn flush(&mut self, wire: &mut impl Wire) {
        let output = self.mux.take_output();
        self.dispatch(output, wire).await;
    }

    /// Hands events to subscriptions first (waiting if one is slow: like Envoy's callbacks, an
    /// update reaches its subscribers before it is ACKed), then the requests, the new store and
    /// the reports.
    pub(crate) async fn dispatch(&mut self, mut output: Output, wire: &mut impl Wire) {
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
                wire.send(request).await;
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

    pub(crate) fn report(&self, report: Report) {
        // No receivers is fine: reports are for whoever is watching.
        let _ = self.reports.send(report);
    }

    /// Sleeps until `until` while still serving commands (their output is dispatched with no
    /// wire). Returns false on shutdown or once every handle is gone.
    pub(crate) async fn idle_until(
        &mut self,
        until: Instant,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> bool {
        let sleep = tokio::time::sleep_until(until);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => return true,
                command = self.command_or_shutdown(shutdown) => match command {
                    Some(command) => self.handle(command),
                    None => return false,
                },
            }
            self.flush(&mut Offline).await;
        }
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

#[cfg(test)]
mod tests;
