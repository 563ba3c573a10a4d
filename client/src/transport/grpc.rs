//! gRPC streams. `ads` / `ads-delta` carry every type on one stream; `grpc` / `delta-grpc` open
//! one stream per type on the type's own service (Envoy's non-aggregated `GrpcMuxImpl`, one per
//! subscription). Either way the lifecycle is Connecting → Streaming → BackingOff → Connecting
//! (C10, C11, C13) and every protocol decision is the mux's.
//!
//! Per-type streams share one HTTP/2 connection. One of them ending is retried on its own,
//! after that stream's own backoff, while the others carry on; once no stream is left the
//! connection itself is re-made after the client's backoff.

pub(super) mod call;
mod end;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::time::SystemTime;

use futures::stream::{BoxStream, SelectAll};
use futures::{StreamExt, stream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tonic::Status;
use tonic::transport::{Channel, Endpoint};
use xdsloop_proto::type_url;

use self::call::{Incoming, Response};
use self::end::{status_text, stream_end};
use crate::config::BackoffConfig;
use crate::config::Variant;
use crate::config::{ClientConfig, ClientTls};
use crate::core::event::{ConnectionReport, Report};
use crate::core::mux::StreamKey;
use crate::core::request::Outgoing;
use crate::core::stream::StreamEnd;
use crate::error::ClientError;
use crate::transport::backoff::Backoff;
use crate::transport::hub::{Hub, Offline, Wire, error_chain, now, timer};
use crate::transport::tls;

/// Capacity of a stream's outgoing request queue. At most one request per type is produced
/// per input, so this only absorbs a burst (the resubscription) while HTTP/2 opens the stream.
const REQUEST_QUEUE: usize = 64;

/// How long a stopping client waits for the server to end the streams after the client
/// half-closed them: long enough for the last ACK/NACK to be delivered, short enough to exit.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

pub(crate) struct GrpcTransport {
    endpoint: Endpoint,
    tls: Option<ClientTls>,
    server: String,
    mode: Variant,
    per_type: bool,
    max_message_bytes: usize,
    backoff: Backoff,
    backoff_config: BackoffConfig,
}

enum Exit {
    Retry,
    Stop,
}

impl GrpcTransport {
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, ClientError> {
        Ok(Self {
            endpoint: super::endpoint(&config.server, config.connect_timeout, config.tls.as_ref())?,
            tls: config.tls.clone(),
            server: config.server.clone(),
            mode: config.source.variant(),
            per_type: config.source.kind().per_type_streams(),
            max_message_bytes: config.max_message_bytes,
            backoff: Backoff::new(config.backoff),
            backoff_config: config.backoff,
        })
    }

    pub(crate) async fn run(
        mut self,
        hub: &mut Hub,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) {
        loop {
            if let Exit::Stop = self.connect_and_stream(hub, shutdown).await {
                return;
            }
            let delay = self.backoff.next_delay();
            let attempt = self.backoff.attempt();
            hub.report(Report::Connection(ConnectionReport::BackingOff {
                delay,
                attempt,
            }));
            if !hub.idle_until(Instant::now() + delay, shutdown).await {
                return;
            }
        }
    }

    async fn connect_and_stream(
        &mut self,
        hub: &mut Hub,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> Exit {
        let server = self.server.clone();
        let attempt = self.backoff.attempt() + 1;
        hub.report(Report::Connection(ConnectionReport::Connecting {
            server: server.clone(),
            attempt,
        }));
        let connect = self.endpoint.connect();
        tokio::pin!(connect);
        // Timers run while connecting: a TTL lapses whether or not the server answers (C17).
        let connected = loop {
            let timer = timer(hub.mux.next_deadline());
            tokio::select! {
                _ = &mut *shutdown => return Exit::Stop,
                connected = &mut connect => break connected,
                _ = timer => hub.mux.on_timer(now(), SystemTime::now()),
            }
            hub.flush(&mut Offline).await;
        };
        let channel = match connected {
            Ok(channel) => channel,
            Err(e) => {
                let reason = tls::describe(&e, self.tls.as_ref(), error_chain(&e));
                tracing::warn!(%server, %reason, "connect failed");
                hub.report(Report::Connection(ConnectionReport::ConnectFailed {
                    server,
                    reason,
                }));
                return Exit::Retry;
            }
        };
        hub.report(Report::Connection(ConnectionReport::Connected { server }));
        let mut streams = Streams::new(channel, self);
        streams.open_wanted(hub).await;
        loop {
            let deadline = hub.mux.next_deadline().map(Instant::from_std);
            let deadline = [deadline, streams.next_reopen()]
                .into_iter()
                .flatten()
                .min();
            let timer = async move {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut *shutdown => return streams.close().await,
                command = hub.commands.recv() => match command {
                    Some(command) => hub.handle(command),
                    None => return streams.close().await,
                },
                event = streams.events.next(), if !streams.events.is_empty() => match event {
                    Some((key, StreamEvent::Response(response))) => {
                        self.backoff.reset();
                        streams.responded(hub, &key, response);
                    }
                    Some((key, StreamEvent::Ended(end))) => {
                        let in_use = streams.ended(hub, key, end).await;
                        if !in_use {
                            return Exit::Retry;
                        }
                    }
                    None => {}
                },
                _ = timer => hub.mux.on_timer(now(), SystemTime::now()),
            }
            hub.flush(&mut streams).await;
            streams.open_wanted(hub).await;
        }
    }
}

/// What happened on one stream.
enum StreamEvent {
    Response(Response),
    Ended(StreamEnd),
}

/// The streams open on one connection, and per-type streams waiting to be reopened.
struct Streams {
    channel: Channel,
    tls: Option<ClientTls>,
    mode: Variant,
    per_type: bool,
    max_message_bytes: usize,
    open: HashMap<StreamKey, mpsc::Sender<Outgoing>>,
    events: SelectAll<BoxStream<'static, (StreamKey, StreamEvent)>>,
    reopen_at: BTreeMap<StreamKey, Instant>,
    backoffs: HashMap<StreamKey, Backoff>,
    backoff_config: BackoffConfig,
}

impl Wire for Streams {
    async fn send(&mut self, request: Outgoing) {
        let key = if self.per_type {
            StreamKey::Type(request.type_url().to_string())
        } else {
            StreamKey::Aggregated
        };
        if let Some(tx) = self.open.get(&key).cloned() {
            // A closed queue means the stream is gone; its reader notices and reports it.
            let _ = tx.send(request).await;
        }
    }
}

impl Streams {
    fn new(channel: Channel, transport: &GrpcTransport) -> Self {
        Self {
            channel,
            tls: transport.tls.clone(),
            mode: transport.mode,
            per_type: transport.per_type,
            max_message_bytes: transport.max_message_bytes,
            open: HashMap::new(),
            events: SelectAll::new(),
            reopen_at: BTreeMap::new(),
            backoffs: HashMap::new(),
            backoff_config: transport.backoff_config,
        }
    }

    fn next_reopen(&self) -> Option<Instant> {
        self.reopen_at.values().min().copied()
    }

    /// Opens every stream the mux wants that is neither open nor waiting to be reopened, and
    /// those whose reopen time has come. Opening one can make the mux want another (a
    /// dependency's type), so this repeats until nothing is new.
    async fn open_wanted(&mut self, hub: &mut Hub) {
        let at = Instant::now();
        self.reopen_at.retain(|_, reopen| *reopen > at);
        loop {
            let new: Vec<StreamKey> = hub
                .mux
                .streams_wanted()
                .into_iter()
                .filter(|k| !self.open.contains_key(k) && !self.reopen_at.contains_key(k))
                .collect();
            if new.is_empty() {
                return;
            }
            for key in new {
                self.open_one(hub, key).await;
            }
        }
    }

    /// Queues the resubscription before opening: some servers send no headers until they
    /// have a request, so waiting for the open first could deadlock.
    async fn open_one(&mut self, hub: &mut Hub, key: StreamKey) {
        hub.mux.on_stream_open(&key, now());
        let output = hub.mux.take_output();
        let (tx, rx) = mpsc::channel(REQUEST_QUEUE.max(output.requests.len()));
        self.open.insert(key.clone(), tx);
        hub.dispatch(output, self).await;
        tracing::debug!(stream = %label(&key), "opening stream");
        let opened = call::open(
            self.channel.clone(),
            key.clone(),
            self.mode,
            self.max_message_bytes,
            rx,
        );
        self.events
            .push(stream_events(key, opened, self.tls.clone()));
    }

    fn responded(&mut self, hub: &mut Hub, key: &StreamKey, response: Response) {
        if let Some(backoff) = self.backoffs.get_mut(key) {
            backoff.reset();
        }
        let type_url = match &response {
            Response::Sotw(r) => &r.type_url,
            Response::Delta(r) => &r.type_url,
        };
        if let StreamKey::Type(expected) = key
            && type_url != expected
        {
            // Like Envoy's per-type mux: another type on this stream has no subscriber here.
            tracing::warn!(stream = %expected, %type_url, "ignoring a response of another type");
            return;
        }
        match response {
            Response::Sotw(r) => hub.mux.on_sotw_response(r, now(), SystemTime::now()),
            Response::Delta(r) => hub.mux.on_delta_response(r, now(), SystemTime::now()),
        }
    }

    /// A stream ended: its types hear of it. Returns whether the connection is still in use
    /// (another stream is open); if so this stream is reopened after its own backoff.
    async fn ended(&mut self, hub: &mut Hub, key: StreamKey, end: StreamEnd) -> bool {
        self.open.remove(&key);
        let reason = end.reason.clone();
        tracing::warn!(stream = %label(&key), %reason, "stream closed");
        hub.mux.on_stream_closed(&key, end);
        hub.flush(self).await;
        let reason = match &key {
            StreamKey::Aggregated => reason,
            StreamKey::Type(t) => format!("{} stream: {reason}", type_url::short_name(t)),
        };
        if self.open.is_empty() {
            hub.report(Report::Connection(ConnectionReport::StreamClosed {
                reason,
            }));
            return false;
        }
        let config = self.backoff_config;
        let backoff = self
            .backoffs
            .entry(key.clone())
            .or_insert_with(|| Backoff::new(config));
        let delay = backoff.next_delay();
        self.reopen_at.insert(key, Instant::now() + delay);
        let reason = format!("{reason}; reopening in {:.1}s", delay.as_secs_f64());
        hub.report(Report::Connection(ConnectionReport::StreamClosed {
            reason,
        }));
        true
    }

    /// Ends the streams gracefully: half-close, so queued requests (the last ACK or NACK) are
    /// flushed, then wait briefly for the server to finish.
    async fn close(self) -> Exit {
        let Self {
            open, mut events, ..
        } = self;
        drop(open);
        let drain = async { while events.next().await.is_some() {} };
        let _ = tokio::time::timeout(CLOSE_GRACE, drain).await;
        Exit::Stop
    }
}

fn label(key: &StreamKey) -> &str {
    match key {
        StreamKey::Aggregated => "ads",
        StreamKey::Type(t) => type_url::short_name(t),
    }
}

/// One stream as a sequence of events: its responses, then exactly one `Ended`.
fn stream_events(
    key: StreamKey,
    opened: impl Future<Output = Result<Incoming, Status>> + Send + 'static,
    tls: Option<ClientTls>,
) -> BoxStream<'static, (StreamKey, StreamEvent)> {
    stream::once(opened)
        .flat_map(move |opened| match opened {
            Ok(incoming) => {
                let tls = tls.clone();
                stream::unfold(Some(incoming), move |state| {
                    let tls = tls.clone();
                    async move {
                        let mut incoming = state?;
                        let end = match incoming.next().await {
                            Ok(Some(response)) => {
                                return Some((StreamEvent::Response(response), Some(incoming)));
                            }
                            Ok(None) => StreamEnd {
                                reason: "server closed the stream".into(),
                                status: Some(("OK".into(), String::new())),
                            },
                            Err(status) => {
                                let text = status_text(&status);
                                let reason = tls::describe(&status, tls.as_ref(), text);
                                stream_end(reason, &status)
                            }
                        };
                        Some((StreamEvent::Ended(end), None))
                    }
                })
                .left_stream()
            }
            Err(status) => {
                let plain = format!("open failed: {}", status.message());
                let reason = tls::describe_open(&status, tls.as_ref(), plain);
                let end = stream_end(reason, &status);
                stream::iter([StreamEvent::Ended(end)]).right_stream()
            }
        })
        .map(move |event| (key.clone(), event))
        .boxed()
}
