//! Updates: a response checked (C6), then applied to the store and ACKed, or rejected and
//! NACKed with the last good config kept (C5); exactly one reply per response (C4). A type
//! nobody subscribed to is NACKed and nothing else happens (C8). This is the heart of the
//! loop; what it hands on (events, dependents, TTLs, the callbacks' verdict) lives beside it.

use std::time::{Instant, SystemTime};

use xdsloop_proto::discovery::{DeltaDiscoveryResponse, DiscoveryResponse};

use super::Mux;
use super::csds::Nack;
use super::ttl::ttls;
use super::wire::{self, Changes, Response};
use crate::core::event::{Event, Failure, Report, Step, UpdateReport, Verdict};
use crate::core::store::{Diff, Stamp};
use crate::core::validate::Rejection;
use crate::core::watch_map::WatchId;

/// The reply to a response of a type nobody subscribed to (C8): a NACK with this message.
pub(crate) const UNWATCHED: &str = "no subscription for this type";

/// A validated update not applied yet.
#[derive(Debug)]
pub(super) struct Candidate {
    pub(super) version: String,
    pub(super) nonce: String,
    pub(super) at: SystemTime,
    pub(super) changes: Changes,
}

impl Mux {
    /// Handles a SotW response: exactly one ACK or NACK follows (C4).
    pub fn on_sotw_response(&mut self, response: DiscoveryResponse, now: Instant, at: SystemTime) {
        self.on_response(Response::Sotw(response), now, at);
    }

    /// Handles a Delta response: exactly one ACK or NACK follows (C4).
    pub fn on_delta_response(
        &mut self,
        response: DeltaDiscoveryResponse,
        now: Instant,
        at: SystemTime,
    ) {
        self.on_response(Response::Delta(response), now, at);
    }

    /// A response of either variant: the variant reads it ([`Response::read`]); deciding,
    /// applying and replying are the same for both.
    fn on_response(&mut self, mut response: Response, now: Instant, at: SystemTime) {
        self.report_received(&response);
        let (type_url, _, nonce) = response.head();
        let Some(state) = self.types.get(type_url) else {
            return self.reply_unwatched(type_url, nonce);
        };
        let (type_url, held_version) = (type_url.to_string(), state.version.clone());
        let validator = self.config.validator.as_ref();
        let read = response.read(&self.config.codec, validator, &held_version);
        let (_, version, nonce) = response.head();
        match read {
            Err(rejection) => self.rejected(&type_url, version, nonce, &rejection, at),
            Ok(changes) if changes.is_heartbeat_only() => {
                self.heartbeat_only(&type_url, version, nonce, &changes.heartbeats, (now, at));
            }
            Ok(mut changes) => {
                // Resources that were not asked for are ignored (C8).
                let wanted = self.watches.wanted(&type_url);
                changes.resources.retain(|d| wanted.wants(&d.name));
                let update = Candidate {
                    version: version.to_string(),
                    nonce: nonce.to_string(),
                    at,
                    changes,
                };
                let Some(update) = self.propose(&type_url, update, now) else {
                    // Held back until the callbacks answer (`Mux::decide`).
                    return;
                };
                self.commit(&type_url, update, &[], now);
            }
        }
        self.finish_response(&type_url, now);
    }

    /// Applies an accepted update: store, TTLs, ACK, events (except to the subscriptions in
    /// `asked`, which saw it when they decided), the update report.
    pub(super) fn commit(
        &mut self,
        type_url: &str,
        update: Candidate,
        asked: &[WatchId],
        now: Instant,
    ) {
        let Candidate {
            version,
            nonce,
            at,
            changes,
        } = update;
        let stamp = Stamp {
            version: &version,
            nonce: &nonce,
            at,
        };
        for resource in &changes.resources {
            self.not_found.received(type_url, &resource.name);
        }
        let ttls = ttls(&changes.resources);
        let kept = self.refresh(type_url, &changes.heartbeats, now);
        // A removal of an explicitly wanted name means it does not exist, at once.
        let wanted = self.watches.wanted(type_url);
        let missing = changes
            .removed_names()
            .iter()
            .filter(|n| wanted.names.contains(*n))
            .filter(|n| self.not_found.mark_missing(type_url, n))
            .cloned()
            .collect();
        let diff = changes.apply(&mut self.store, type_url, stamp, &kept);
        self.set_ttls(type_url, ttls, &diff, now);
        let events = self.events(&self.store, type_url, &diff);
        self.types
            .get_mut(type_url)
            .expect("checked")
            .ack(&nonce, &version);
        self.deliver(events, asked);
        self.accepted(type_url, &version, &nonce, diff, at);
        self.report_missing(type_url, missing, at);
    }

    /// An update that could not even be read — a REST body that is not a DiscoveryResponse, a
    /// watched file that is unreadable or malformed — is rejected like an invalid response:
    /// the last good config and version stay (C5) and subscriptions hear of the failure.
    pub fn reject_update(
        &mut self,
        type_url: &str,
        version: &str,
        nonce: &str,
        reason: &str,
        now: Instant,
        at: SystemTime,
    ) {
        if !self.types.contains_key(type_url) {
            return;
        }
        let rejection = Rejection {
            problems: vec![reason.to_string()],
            ..Default::default()
        };
        self.rejected(type_url, version, nonce, &rejection, at);
        self.finish_response(type_url, now);
    }

    pub(super) fn rejected(
        &mut self,
        type_url: &str,
        version: &str,
        nonce: &str,
        why: &Rejection,
        at: SystemTime,
    ) {
        let message = why.message();
        tracing::warn!(type_url, version, nonce, error = %message, "update rejected");
        // The server answered; the client refused what it got. Envoy stops the
        // subscription's init-fetch timer on a rejected update: what was asked for is not
        // "not found" (CSDS says NACKED).
        self.not_found.on_rejected(type_url);
        let state = self.types.get_mut(type_url).expect("caller checked");
        state.nack(nonce, &message);
        let nack = Nack {
            version: version.to_string(),
            message: message.clone(),
            at,
            names: why.names.clone(),
        };
        self.nacked.insert(type_url.to_string(), nack);
        self.answered.insert(type_url.to_string());
        let verdict = Verdict::Nack(message.clone());
        self.report_update(at, type_url, (version, nonce), verdict, Diff::default());
        let ids: Vec<_> = self
            .watches
            .subscribers(type_url)
            .map(|(id, _, _)| id)
            .collect();
        for id in ids {
            let reason = Failure::Rejected(message.clone());
            let event = Event::Failed {
                type_url: type_url.to_string(),
                reason,
            };
            self.out.deliveries.push((id, event));
        }
    }

    /// The report of one update's verdict, as observers see it.
    fn report_update(
        &mut self,
        at: SystemTime,
        type_url: &str,
        (version, nonce): (&str, &str),
        verdict: Verdict,
        diff: Diff,
    ) {
        self.out.reports.push(Report::Update(UpdateReport {
            at,
            mode: self.config.variant,
            source: self.config.source,
            type_url: type_url.to_string(),
            version: version.to_string(),
            nonce: nonce.to_string(),
            verdict,
            diff,
        }));
    }

    fn accepted(&mut self, type_url: &str, version: &str, nonce: &str, diff: Diff, at: SystemTime) {
        tracing::info!(type_url, version, nonce, ?diff, "update applied");
        self.nacked.remove(type_url);
        self.answered.insert(type_url.to_string());
        self.out.store_changed = true;
        self.report_update(at, type_url, (version, nonce), Verdict::Ack, diff);
    }

    /// C8: a response for a type nobody subscribed to is NACKed, and nothing else happens.
    fn reply_unwatched(&mut self, type_url: &str, nonce: &str) {
        tracing::warn!(type_url, nonce, "response for a type with no subscription");
        let stream = self.stream_of(type_url);
        if !self.streams.is_open(&stream) {
            return;
        }
        let node = (!self.node_sent.contains(&stream)).then(|| self.config.node.clone());
        self.node_sent.insert(stream.clone());
        let request = wire::nack(self.config.variant, node, type_url, nonce, UNWATCHED);
        self.report_sent(&stream, Step::Nack, &request);
        self.out.requests.push(request);
    }
}
