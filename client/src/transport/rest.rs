//! REST-JSON polling (Envoy's `HttpSubscriptionImpl`): each type is polled with
//! `POST /v3/discovery:<type>` every refresh delay, the body a JSON DiscoveryRequest carrying
//! the node, the names and the last *accepted* version. A 200 answer is a DiscoveryResponse
//! handled by the mux exactly as a streamed one; 304 means nothing changed. There is no NACK on
//! the wire: a rejected answer is reported locally and the next poll simply carries the last
//! accepted version again — Envoy sends no `error_detail` over REST either. Failed polls
//! (connection, timeout, other statuses) are retried at the next refresh, never fatal.
//!
//! A 200 answer identical to the last accepted one for its type (same `version_info`, same
//! resources) is "no update" too: a server that cannot answer 304 — xdsloop-server under a
//! fixture's explicit `version_info` — would otherwise make every poll an update.
//!
//! The mux sees one virtual stream that never breaks; the requests it builds (first request,
//! ACK, NACK, interest change) only update what the next poll of that type sends. A change of
//! names is polled at once, so dependency following works as over gRPC.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio::time::Instant;
use xdsloop_proto::Codec;
use xdsloop_proto::discovery::{Any, DiscoveryRequest, DiscoveryResponse, Node};
use xdsloop_proto::services::per_type_api;

use super::http::{self, Answer, Base};
use crate::config::ClientConfig;
use crate::core::event::{ConnectionReport, Report};
use crate::core::request::Outgoing;
use crate::error::ClientError;
use crate::transport::hub::{Hub, Wire, now};

pub(crate) struct RestTransport {
    base: Base,
    server: String,
    node: Node,
    codec: Codec,
    refresh_delay: Duration,
    request_timeout: Duration,
    max_message_bytes: usize,
}

type PollResult = (String, Result<Answer, String>);

impl RestTransport {
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, ClientError> {
        if config.refresh_delay.is_zero() {
            return Err(ClientError::Argument(
                "the REST refresh delay must be positive".into(),
            ));
        }
        Ok(Self {
            base: Base::new(&config.server, config.tls.as_ref())?,
            server: config.server.clone(),
            node: config.node.clone(),
            codec: config.codec.clone(),
            refresh_delay: config.refresh_delay,
            request_timeout: config.request_timeout,
            max_message_bytes: config.max_message_bytes,
        })
    }

    pub(crate) async fn run(
        self,
        hub: &mut Hub,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) {
        let mut polls = Polls::default();
        let mut in_flight: FuturesUnordered<BoxFuture<'static, PollResult>> =
            FuturesUnordered::new();
        let mut health = Health::Unknown;
        hub.mux.on_stream_start(now());
        hub.flush(&mut polls).await;
        loop {
            for (type_url, request) in polls.start_due(hub, Instant::now()) {
                in_flight.push(self.poll(type_url, request));
            }
            let deadline = hub.mux.next_deadline().map(Instant::from_std);
            let deadline = [deadline, polls.next_due()].into_iter().flatten().min();
            let timer = async move {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut *shutdown => return,
                command = hub.commands.recv() => match command {
                    Some(command) => hub.handle(command),
                    None => return,
                },
                Some((type_url, result)) = in_flight.next(), if !in_flight.is_empty() => {
                    polls.finished(&type_url, Instant::now() + self.refresh_delay);
                    if let Some(response) = self.answered(hub, &mut health, &type_url, result) {
                        polls.handle(hub, response).await;
                    }
                }
                _ = timer => hub.mux.on_timer(now(), SystemTime::now()),
            }
            hub.flush(&mut polls).await;
        }
    }

    /// One poll of `type_url`: the mux's latest request for it, with the node (every REST
    /// request stands alone) and without nonce or error detail (REST has neither).
    fn poll(
        &self,
        type_url: String,
        mut request: DiscoveryRequest,
    ) -> BoxFuture<'static, PollResult> {
        request.node = Some(self.node.clone());
        request.response_nonce.clear();
        request.error_detail = None;
        let body = http::request_json(&self.codec, &request);
        let base = self.base.clone();
        let (timeout, max) = (self.request_timeout, self.max_message_bytes);
        tracing::debug!(%type_url, version = %request.version_info, "polling");
        Box::pin(async move {
            let result = match per_type_api(&type_url).and_then(|api| api.rest_path) {
                Some(path) => http::post(&base, path, body, timeout, max).await,
                None => Err(format!("{type_url} has no REST endpoint")),
            };
            (type_url, result)
        })
    }

    /// Reports connection news and returns the DiscoveryResponse a poll brought, if any (an
    /// answer that is not one is rejected here).
    fn answered(
        &self,
        hub: &mut Hub,
        health: &mut Health,
        type_url: &str,
        result: Result<Answer, String>,
    ) -> Option<DiscoveryResponse> {
        let answer = match result {
            Err(reason) => {
                tracing::warn!(server = %self.server, type_url, %reason, "REST poll failed");
                if *health != Health::Failing {
                    *health = Health::Failing;
                    let server = self.server.clone();
                    let news = ConnectionReport::ConnectFailed { server, reason };
                    hub.report(Report::Connection(news));
                }
                return None;
            }
            Ok(answer) => answer,
        };
        if *health != Health::Up {
            *health = Health::Up;
            let server = self.server.clone();
            hub.report(Report::Connection(ConnectionReport::Connected { server }));
        }
        let Answer::Body(body) = answer else {
            tracing::debug!(type_url, "not modified");
            return None;
        };
        let (at, wall) = (now(), SystemTime::now());
        match http::response_from_json(&self.codec, &body) {
            Ok(mut response) if response.type_url.is_empty() || response.type_url == type_url => {
                response.type_url = type_url.to_string();
                Some(response)
            }
            Ok(response) => {
                let reason = format!("the answer is for {}, not {type_url}", response.type_url);
                let (version, nonce) = (&response.version_info, &response.nonce);
                hub.mux
                    .reject_update(type_url, version, nonce, &reason, at, wall);
                None
            }
            Err(e) => {
                let reason = format!("not a DiscoveryResponse: {e}");
                hub.mux.reject_update(type_url, "", "", &reason, at, wall);
                None
            }
        }
    }
}

/// Whether polls get answers, so connection news is reported on changes only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Health {
    Unknown,
    Up,
    Failing,
}

/// Per type: the request the next poll sends and when it is due.
#[derive(Default)]
struct Polls {
    latest: BTreeMap<String, DiscoveryRequest>,
    due: BTreeMap<String, Instant>,
    in_flight: BTreeSet<String>,
    /// Interest changed while a poll was out: poll again as soon as it is back.
    again: BTreeSet<String>,
    /// The last answer handled per type, and whether it was accepted.
    last: BTreeMap<String, Handled>,
}

struct Handled {
    version: String,
    resources: Vec<Any>,
    accepted: bool,
}

impl Wire for Polls {
    async fn send(&mut self, request: Outgoing) {
        let Outgoing::Sotw(request) = request else {
            return;
        };
        let type_url = request.type_url.clone();
        let names_changed = self
            .latest
            .get(&type_url)
            .is_none_or(|old| old.resource_names != request.resource_names);
        self.latest.insert(type_url.clone(), request);
        if !names_changed {
            // An ACK or NACK: it only changes the version the next poll carries.
            return;
        }
        if self.in_flight.contains(&type_url) {
            self.again.insert(type_url);
        } else {
            self.due.insert(type_url, Instant::now());
        }
    }
}

impl Polls {
    /// The polls due at `at`, now in flight. A type nobody wants any more is not polled (an
    /// empty name list would mean "everything" to a REST server).
    fn start_due(&mut self, hub: &Hub, at: Instant) -> Vec<(String, DiscoveryRequest)> {
        let due: Vec<String> = self
            .due
            .iter()
            .filter(|(_, when)| **when <= at)
            .map(|(t, _)| t.clone())
            .collect();
        let mut started = Vec::new();
        for type_url in due {
            self.due.remove(&type_url);
            if hub.mux.wanted(&type_url).is_empty() {
                continue;
            }
            if let Some(request) = self.latest.get(&type_url) {
                self.in_flight.insert(type_url.clone());
                started.push((type_url, request.clone()));
            }
        }
        started
    }

    fn finished(&mut self, type_url: &str, next: Instant) {
        self.in_flight.remove(type_url);
        let next = if self.again.remove(type_url) {
            Instant::now()
        } else {
            next
        };
        self.due.insert(type_url.to_string(), next);
    }

    /// Hands an answer to the mux, unless it repeats the last accepted one.
    async fn handle(&mut self, hub: &mut Hub, response: DiscoveryResponse) {
        let type_url = response.type_url.clone();
        let repeat = self.last.get(&type_url).is_some_and(|last| {
            last.accepted
                && last.version == response.version_info
                && last.resources == response.resources
        });
        if repeat {
            tracing::debug!(%type_url, version = %response.version_info, "same as the last accepted answer");
            return;
        }
        let (version, resources) = (response.version_info.clone(), response.resources.clone());
        hub.mux.on_sotw_response(response, now(), SystemTime::now());
        let output = hub.mux.take_output();
        // Only after dispatch is the answer decided: callbacks give their verdict there. The
        // reply the mux built for it (sent here, kept in `latest`) says which it was.
        hub.dispatch(output, self).await;
        let accepted = self
            .latest
            .get(&type_url)
            .is_some_and(|reply| reply.error_detail.is_none() && reply.version_info == version);
        let handled = Handled {
            version,
            resources,
            accepted,
        };
        self.last.insert(type_url, handled);
    }

    fn next_due(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }
}
