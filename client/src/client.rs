//! The client handle: start a session against a server, subscribe, observe.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use xdsloop_proto::Codec;
use xdsloop_proto::discovery::Node;

use crate::error::ClientError;
use crate::event::Report;
use crate::mux::{Mux, MuxConfig};
use crate::resource::XdsResource;
use crate::session::{BackoffConfig, Command, Core, NewWatch, Session};
use crate::source::{self, Source, Transport};
use crate::store::Store;
use crate::subscription::{Subscription, TypedSubscription};
use crate::validate::Validator;
use crate::watch_map::Interest;

/// Handles issue few commands; a small queue back-pressures them while the session is busy.
const COMMAND_QUEUE: usize = 64;
/// Per subscription: a slow subscriber holds the client up (updates are applied before they
/// are ACKed), so only a few events wait.
const EVENT_QUEUE: usize = 16;
/// Observers that fall this far behind miss reports (they are told how many): observing must
/// never stall the protocol.
const REPORT_QUEUE: usize = 4096;

/// Everything a client needs to know.
#[derive(Clone)]
pub struct ClientConfig {
    /// `host:port` or an `http://` URI: the gRPC server, or the REST server for
    /// [`Source::Rest`]. Unused for [`Source::File`].
    pub server: String,
    pub node: Node,
    pub source: Source,
    /// REST: time between polls of a type (Envoy's `refresh_delay`).
    pub refresh_delay: Duration,
    /// REST: how long one poll may take (Envoy's `request_timeout`, default 1 s).
    pub request_timeout: Duration,
    /// Follow LDS → RDS and CDS → EDS references (C12).
    pub follow_deps: bool,
    pub validator: Option<Validator>,
    pub not_found_timeout: Duration,
    pub backoff: BackoffConfig,
    pub connect_timeout: Duration,
    /// gRPC message limit, both directions (C16).
    pub max_message_bytes: usize,
    pub codec: Codec,
}

impl ClientConfig {
    pub fn new(server: impl Into<String>, node_id: impl Into<String>) -> Self {
        let node = Node {
            id: node_id.into(),
            user_agent_name: "xdsloop-client".into(),
            ..Default::default()
        };
        Self {
            server: server.into(),
            node,
            source: Source::Ads,
            refresh_delay: Duration::from_secs(1),
            request_timeout: Duration::from_secs(1),
            follow_deps: false,
            validator: None,
            not_found_timeout: crate::not_found::DEFAULT_TIMEOUT,
            backoff: BackoffConfig::default(),
            connect_timeout: Duration::from_secs(5),
            max_message_bytes: source::DEFAULT_MAX_MESSAGE_BYTES,
            codec: Codec::envoy(),
        }
    }
}

/// A running client. Dropping it stops the session.
pub struct Client {
    commands: mpsc::Sender<Command>,
    next_id: Arc<AtomicU64>,
    reports: broadcast::Sender<Report>,
    store: watch::Receiver<Arc<Store>>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Client {
    /// Starts the session task. The stream opens with the first subscription and runs until
    /// `shutdown` resolves or the client is dropped.
    pub fn start(
        config: ClientConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Self, ClientError> {
        let transport = Transport::new(&config)?;
        let mux = Mux::new(MuxConfig {
            mode: config.source.mode(),
            source: config.source.kind(),
            node: config.node.clone(),
            follow_deps: config.follow_deps,
            not_found_timeout: config.not_found_timeout,
            validator: config.validator.clone(),
            codec: config.codec.clone(),
        });
        let (commands_tx, commands) = mpsc::channel(COMMAND_QUEUE);
        let (reports, _) = broadcast::channel(REPORT_QUEUE);
        let (store_tx, store) = watch::channel(Arc::new(Store::default()));
        let core = Core {
            mux,
            commands,
            subscribers: HashMap::new(),
            reports: reports.clone(),
            store: store_tx,
        };
        let session = Session { core, transport };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(session.run(async move {
            tokio::select! {
                _ = shutdown => {}
                _ = stopped => {}
            }
        }));
        Ok(Self {
            commands: commands_tx,
            next_id: Arc::new(AtomicU64::new(1)),
            reports,
            store,
            stop: Some(stop),
            task: Some(task),
        })
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
        let mut new = Vec::new();
        let mut subscriptions = Vec::new();
        for (type_url, interest) in watches {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let (events_tx, events) = mpsc::channel(EVENT_QUEUE);
            let commands = self.commands.clone();
            subscriptions.push(Subscription::new(id, type_url.clone(), commands, events));
            new.push(NewWatch {
                id,
                type_url,
                interest,
                events: events_tx,
            });
        }
        if !new.is_empty() {
            self.commands
                .send(Command::Watch(new))
                .await
                .map_err(|_| ClientError::Stopped)?;
        }
        Ok(subscriptions)
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

    /// Stops the session and waits for it to end.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[cfg(test)]
mod tests;
