//! The client handle: start a session against a server, subscribe, observe.
//!
//! [`Client`] starts a [`session`] (the mux driven by the transport its source chose) and hands
//! out [`subscription`] handles; everything the session does reaches the handle as events,
//! reports and the store. [`csds`] serves what it holds to CSDS tools (`--csds ADDR`).

pub mod csds;
pub(crate) mod session;
pub(crate) mod subscription;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use xdsloop_proto::csds::ClientConfig as CsdsConfig;

use crate::client::session::Session;
use crate::client::subscription::{
    DecodeFirst, Subscription, SubscriptionCallbacks, TypedSubscription,
    TypedSubscriptionCallbacks, run_callbacks,
};
use crate::config::ClientConfig;
use crate::core::event::Report;
use crate::core::mux::{Mux, MuxConfig};
use crate::core::resource::XdsResource;
use crate::core::store::Store;
use crate::core::watch_map::Interest;
use crate::error::ClientError;
use crate::transport::Transport;
use crate::transport::hub::{Command, Hub, NewWatch, StoreOut, Subscriber, stop_requested};

/// Handles issue few commands; a small queue back-pressures them while the session is busy.
const COMMAND_QUEUE: usize = 64;
/// Per subscription: a slow subscriber holds the client up (updates are applied before they
/// are ACKed), so only a few events wait.
const EVENT_QUEUE: usize = 16;
/// Observers that fall this far behind miss reports (they are told how many): observing must
/// never stall the protocol.
const REPORT_QUEUE: usize = 4096;

/// A running client: a handle, cheap to clone (as tonic's `XdsClient` is). Every clone drives
/// the same sessions; dropping the last one stops them, and [`Client::stop`] stops them for
/// every clone.
#[derive(Clone)]
pub struct Client {
    /// One session per config source in use: the first is `ClientConfig::source`'s.
    sessions: Vec<mpsc::Sender<Command>>,
    /// The types that come from another source, and the index of its session.
    routes: BTreeMap<String, usize>,
    next_id: Arc<AtomicU64>,
    reports: broadcast::Sender<Report>,
    store: watch::Receiver<Arc<Store>>,
    /// Set to true to stop the session; the session's shutdown future sets it too, so every
    /// wait inside the session sees one flag.
    stop: Arc<watch::Sender<bool>>,
    /// Held by the handles only: the last one dropped stops the sessions.
    last_handle: Arc<StopOnDrop>,
    tasks: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>,
}

/// Sets the stop flag when dropped.
#[derive(Debug)]
struct StopOnDrop(Arc<watch::Sender<bool>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("sessions", &self.sessions.len())
            .field("routes", &self.routes)
            .field("stopped", &*self.stop.borrow())
            .field("handles", &Arc::strong_count(&self.last_handle))
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts the session task on the transport `config.source` names ([`Transport::new`],
    /// Envoy's subscription factory). The stream opens with the first subscription and runs
    /// until `shutdown` resolves or the client is dropped.
    pub fn start(
        config: ClientConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Self, ClientError> {
        let mut transports = vec![Transport::new(&config)?];
        let mut sources = vec![config.source.clone()];
        let mut routes = BTreeMap::new();
        for (alias, source) in &config.type_sources {
            let type_url = xdsloop_proto::type_url::resolve(alias)
                .ok_or_else(|| ClientError::UnknownType(alias.clone()))?;
            let session = match sources.iter().position(|s| s == source) {
                Some(session) => session,
                None => {
                    let mut own = config.clone();
                    own.source = source.clone();
                    transports.push(Transport::new(&own)?);
                    sources.push(source.clone());
                    sources.len() - 1
                }
            };
            if session != 0 {
                routes.insert(type_url.to_string(), session);
            }
        }
        Ok(Self::start_sessions(transports, routes, config, shutdown))
    }

    /// Starts the session task on a transport the factory already made (checked before
    /// anything runs); the transport's source wins over `config.source`. One transport is one
    /// source: a `config.type_sources` that is not empty is an error ([`Client::start`] runs
    /// a session per source).
    pub fn start_on(
        transport: Transport,
        config: ClientConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Self, ClientError> {
        if !config.type_sources.is_empty() {
            let types: Vec<&str> = config.type_sources.keys().map(String::as_str).collect();
            return Err(ClientError::Argument(format!(
                "Client::start_on runs one transport, so it cannot give types a source of \
                 their own (type_sources: {}); use Client::start",
                types.join(", ")
            )));
        }
        Ok(Self::start_sessions(
            vec![transport],
            BTreeMap::new(),
            config,
            shutdown,
        ))
    }

    /// One session per transport, sharing the reports, the store and the stop flag.
    fn start_sessions(
        transports: Vec<Transport>,
        routes: BTreeMap<String, usize>,
        config: ClientConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        let (reports, _) = broadcast::channel(REPORT_QUEUE);
        let (store_tx, store) = watch::channel(Arc::new(Store::default()));
        let (stop, stopping) = watch::channel(false);
        let stop = Arc::new(stop);
        let outlets = StoreOut::split(store_tx, transports.len());
        let mut sessions = Vec::new();
        let mut tasks = Vec::new();
        for (index, (transport, store)) in transports.into_iter().zip(outlets).enumerate() {
            // A session follows a dependency only if the dependent type travels with it; the
            // pairs split across sources stop, every other pair keeps following.
            let elsewhere = |t: &str| routes.get(t).copied().unwrap_or(0) != index;
            let unfollowed = [
                xdsloop_proto::type_url::LISTENER,
                xdsloop_proto::type_url::CLUSTER,
            ]
            .into_iter()
            .filter(|parent| !elsewhere(parent))
            .filter_map(crate::core::deps::child_of)
            .filter(|child| elsewhere(child))
            .collect();
            let mux = Mux::new(MuxConfig {
                variant: transport.kind().variant(),
                source: transport.kind(),
                node: config.node.clone(),
                follow_deps: config.follow_deps,
                unfollowed,
                not_found_timeout: config.not_found_timeout,
                validator: config.validator.clone(),
                codec: config.codec.clone(),
                received: config.received_reports,
            });
            let (commands_tx, commands) = mpsc::channel(COMMAND_QUEUE);
            let hub = Hub {
                mux,
                commands,
                subscribers: HashMap::new(),
                reports: reports.clone(),
                store,
                stopping: stopping.clone(),
                callback_timeout: config.callback_timeout,
            };
            let session = Session { hub, transport };
            let mut stopped = stopping.clone();
            tasks.push(tokio::spawn(session.run(async move {
                stop_requested(&mut stopped).await;
            })));
            sessions.push(commands_tx);
        }
        // The caller's shutdown becomes the flag, watched even while the session waits on a
        // slow subscriber; this task ends with the session (its flag's receivers gone).
        let flag = stop.clone();
        drop(stopping);
        tokio::spawn(async move {
            tokio::select! {
                _ = shutdown => { flag.send_replace(true); }
                _ = flag.closed() => {}
            }
        });
        Self::handle(sessions, routes, reports, store, stop, tasks)
    }

    fn handle(
        sessions: Vec<mpsc::Sender<Command>>,
        routes: BTreeMap<String, usize>,
        reports: broadcast::Sender<Report>,
        store: watch::Receiver<Arc<Store>>,
        stop: Arc<watch::Sender<bool>>,
        tasks: Vec<JoinHandle<()>>,
    ) -> Self {
        Self {
            sessions,
            routes,
            next_id: Arc::new(AtomicU64::new(1)),
            reports,
            store,
            last_handle: Arc::new(StopOnDrop(stop.clone())),
            stop,
            tasks: Arc::new(std::sync::Mutex::new(tasks)),
        }
    }

    /// The session that carries `type_url`.
    fn commands_for(&self, type_url: &str) -> &mpsc::Sender<Command> {
        let session = self.routes.get(type_url).copied().unwrap_or(0);
        &self.sessions[session]
    }

    /// Watches resources of `type_url` (a full type URL).
    pub async fn subscribe(
        &self,
        type_url: &str,
        interest: Interest,
    ) -> Result<Subscription, ClientError> {
        let mut one = self
            .subscribe_all([(type_url.to_string(), interest)])
            .await?;
        Ok(one.remove(0))
    }

    /// Watches several types at once, e.g. a whole start-up plan like Envoy's bootstrap. The
    /// session registers them in one step, before it handles another response, so the first
    /// [`Report::Synced`] covers every one of them. (Watches subscribed one by one can see a
    /// "synced" for the first ones before the later ones are registered.)
    pub async fn subscribe_all(
        &self,
        watches: impl IntoIterator<Item = (String, Interest)>,
    ) -> Result<Vec<Subscription>, ClientError> {
        let mut new: BTreeMap<usize, Vec<NewWatch>> = BTreeMap::new();
        let mut subscriptions = Vec::new();
        for (type_url, interest) in watches {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let (events_tx, events) = mpsc::channel(EVENT_QUEUE);
            let commands = self.commands_for(&type_url).clone();
            subscriptions.push(Subscription::new(id, type_url.clone(), commands, events));
            let session = self.routes.get(&type_url).copied().unwrap_or(0);
            new.entry(session).or_default().push(NewWatch {
                id,
                type_url,
                interest,
                events: Subscriber::Events(events_tx),
            });
        }
        for (session, watches) in new {
            self.sessions[session]
                .send(Command::Watch(watches))
                .await
                .map_err(|_| ClientError::Stopped)?;
        }
        Ok(subscriptions)
    }

    /// Watches resources of `type_url` with callbacks that decide each update (Envoy's
    /// `GrpcMux::addWatch` with `SubscriptionCallbacks`): the client applies and ACKs an
    /// update only once `on_config_update` returns `Ok`; an `Err` NACKs it with its message
    /// and the type keeps its last good config and version. With several deciding
    /// subscriptions on a type, one rejection NACKs the update for all of them.
    ///
    /// The callbacks run on a blocking task of their own (they may take their time); an update
    /// they do not decide within [`ClientConfig::callback_timeout`] is rejected. The returned
    /// handle changes the interest and unsubscribes when dropped; its `recv` returns `None`
    /// (the events go to the callbacks).
    pub async fn subscribe_with(
        &self,
        type_url: &str,
        interest: Interest,
        callbacks: impl SubscriptionCallbacks,
    ) -> Result<Subscription, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (calls_tx, calls) = mpsc::channel(EVENT_QUEUE);
        // No queue: the callbacks get the events.
        let (_, events) = mpsc::channel(1);
        let commands = self.commands_for(type_url).clone();
        let subscription = Subscription::new(id, type_url.to_string(), commands.clone(), events);
        let watch = NewWatch {
            id,
            type_url: type_url.to_string(),
            interest,
            events: Subscriber::Callbacks(calls_tx),
        };
        commands
            .send(Command::Watch(vec![watch]))
            .await
            .map_err(|_| ClientError::Stopped)?;
        run_callbacks(callbacks, calls);
        Ok(subscription)
    }

    /// [`Client::subscribe_with`] for resources of type `T`, decoded before the callbacks see
    /// them (Envoy's `SubscriptionBase<T>`). An update that does not decode as `T` is
    /// rejected (NACK) without calling them.
    pub async fn subscribe_typed_with<T: XdsResource>(
        &self,
        interest: Interest,
        callbacks: impl TypedSubscriptionCallbacks<T>,
    ) -> Result<TypedSubscription<T>, ClientError> {
        let inner = self
            .subscribe_with(T::TYPE_URL, interest, DecodeFirst::new(callbacks))
            .await?;
        Ok(TypedSubscription::new(inner))
    }

    /// Watches resources of type `T`, decoded.
    pub async fn subscribe_typed<T: XdsResource>(
        &self,
        interest: Interest,
    ) -> Result<TypedSubscription<T>, ClientError> {
        let inner = self.subscribe(T::TYPE_URL, interest).await?;
        Ok(TypedSubscription::new(inner))
    }

    /// Everything that happens from now on: updates with ACK/NACK, not-found, requests sent,
    /// connection changes.
    pub fn reports(&self) -> broadcast::Receiver<Report> {
        self.reports.subscribe()
    }

    /// The applied resources, updated after every accepted response.
    pub fn store(&self) -> watch::Receiver<Arc<Store>> {
        self.store.clone()
    }

    /// Envoy's `GrpcMux::pause(type_url)`: requests of the type (subscriptions and ACKs alike)
    /// are held back until the returned guard is resumed or dropped, then go out as one
    /// request with the latest state. Pauses of one type nest. Used to batch interest changes,
    /// as Envoy does while it applies a CDS update before asking for EDS.
    pub async fn pause(&self, type_url: &str) -> Result<Paused, ClientError> {
        let commands = self.commands_for(type_url).clone();
        let type_url = type_url.to_string();
        commands
            .send(Command::Pause {
                type_url: type_url.clone(),
            })
            .await
            .map_err(|_| ClientError::Stopped)?;
        Ok(Paused {
            commands,
            type_url: Some(type_url),
        })
    }

    /// A handle that asks the session what it holds, as CSDS reports it (C18).
    pub fn status(&self) -> StatusHandle {
        StatusHandle {
            sessions: self.sessions.clone(),
        }
    }

    /// Stops the sessions, for every clone of this handle, and waits for them to end.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// Asks a running client for its CSDS status. Cheap to clone.
#[derive(Debug, Clone)]
pub struct StatusHandle {
    sessions: Vec<mpsc::Sender<Command>>,
}

impl StatusHandle {
    /// What the client holds now; `contents` false leaves the resources themselves out.
    /// With several config sources, one `ClientConfig` with every source's resources, its
    /// `client_scope` naming them all.
    pub async fn client_config(&self, contents: bool) -> Result<CsdsConfig, ClientError> {
        let mut whole: Option<CsdsConfig> = None;
        for session in &self.sessions {
            let (reply, answer) = oneshot::channel();
            let command = Command::Status { contents, reply };
            session
                .send(command)
                .await
                .map_err(|_| ClientError::Stopped)?;
            let part = answer.await.map_err(|_| ClientError::Stopped)?;
            match &mut whole {
                None => whole = Some(part),
                Some(whole) => {
                    whole.generic_xds_configs.extend(part.generic_xds_configs);
                    whole.client_scope = format!("{},{}", whole.client_scope, part.client_scope);
                }
            }
        }
        whole.ok_or(ClientError::Stopped)
    }
}

/// A type paused by [`Client::pause`] (Envoy's `ScopedResume`): [`Paused::resume`] or dropping
/// it resumes the type.
#[derive(Debug)]
#[must_use = "dropping the guard resumes the type at once"]
pub struct Paused {
    commands: mpsc::Sender<Command>,
    type_url: Option<String>,
}

impl Paused {
    /// Resumes the type: the held-back request goes out now.
    pub async fn resume(mut self) -> Result<(), ClientError> {
        let Some(type_url) = self.type_url.take() else {
            return Ok(());
        };
        self.commands
            .send(Command::Resume { type_url })
            .await
            .map_err(|_| ClientError::Stopped)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        let Some(type_url) = self.type_url.take() else {
            return;
        };
        let command = Command::Resume { type_url };
        // Usually there is room; otherwise the resume waits for it on the runtime, and with no
        // runtime left the client is gone with its pauses.
        if let Err(mpsc::error::TrySendError::Full(command)) = self.commands.try_send(command)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let commands = self.commands.clone();
            runtime.spawn(async move {
                let _ = commands.send(command).await;
            });
        }
    }
}

#[cfg(test)]
mod tests;

/// `Client::pause` and its guard: each pause is resumed exactly once, by `resume` or by drop.
#[cfg(test)]
mod pause_tests {
    use xdsloop_proto::type_url::CLUSTER;

    use super::tests::client_and_hub;
    use super::*;

    /// The next command the session would take; none within a second fails the test.
    async fn next(hub: &mut Hub) -> Option<Command> {
        let wait = std::time::Duration::from_secs(1);
        tokio::time::timeout(wait, hub.commands.recv()).await.ok()?
    }

    fn is(command: Option<Command>, pause: bool) -> bool {
        match command {
            Some(Command::Pause { type_url }) => pause && type_url == CLUSTER,
            Some(Command::Resume { type_url }) => !pause && type_url == CLUSTER,
            _ => false,
        }
    }

    #[tokio::test]
    async fn a_dropped_guard_resumes_its_type() {
        let (client, mut hub) = client_and_hub();
        let paused = client.pause(CLUSTER).await.unwrap();
        drop(paused);
        assert!(is(next(&mut hub).await, true));
        assert!(is(next(&mut hub).await, false));
        assert!(hub.commands.try_recv().is_err(), "one resume, no more");
    }

    #[tokio::test]
    async fn a_resumed_guard_does_not_resume_again_when_dropped() {
        let (client, mut hub) = client_and_hub();
        let paused = client.pause(CLUSTER).await.unwrap();
        paused.resume().await.unwrap();
        assert!(is(next(&mut hub).await, true));
        assert!(is(next(&mut hub).await, false));
        assert!(hub.commands.try_recv().is_err(), "one resume, no more");
    }
}
