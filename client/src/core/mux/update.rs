//! Responses and timers: validate, apply to the store, ACK or NACK, tell subscriptions, follow
//! dependencies.

use std::time::{Duration, Instant, SystemTime};

use xdsloop_proto::discovery::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use xdsloop_proto::type_url;

use super::Mux;
use super::status::Nack;
use crate::config::Variant;
use crate::core::deps;
use crate::core::event::{Event, Failure, Report, Step, UpdateReport, Verdict};
use crate::core::request::{Outgoing, nack_detail};
use crate::core::store::{Diff, Stamp};
use crate::core::validate::{self, Decoded, Rejection, Validated};
use crate::core::watch_map::Interest;

/// The reply to a response of a type nobody subscribed to (C8): a NACK with this message.
pub const UNWATCHED: &str = "no subscription for this type";

/// The TTL of each resource about to be applied.
fn ttls(resources: &[Decoded]) -> Vec<(String, Option<Duration>)> {
    resources.iter().map(|r| (r.name.clone(), r.ttl)).collect()
}

/// Internal watch ids count down from the top so they never meet subscriber ids.
const FIRST_INTERNAL_WATCH: u64 = u64::MAX;

impl Mux {
    /// Handles a SotW response: exactly one ACK or NACK follows (C4).
    pub fn on_sotw_response(
        &mut self,
        mut response: DiscoveryResponse,
        now: Instant,
        at: SystemTime,
    ) {
        self.report_sotw_received(&response);
        let type_url = response.type_url.clone();
        if !self.types.contains_key(&type_url) {
            return self.reply_unwatched(&type_url, &response.nonce);
        }
        let validator = self.config.validator.as_ref();
        let result = validate::sotw(
            &self.config.codec,
            &type_url,
            std::mem::take(&mut response.resources),
            validator,
        );
        let (version, nonce) = (&response.version_info, &response.nonce);
        let result = result.and_then(|v| {
            self.check_sotw_heartbeats(&type_url, version, &v.heartbeats)?;
            Ok(v)
        });
        match result {
            Err(rejection) => self.rejected(&type_url, version, nonce, &rejection, at),
            Ok(v) if v.resources.is_empty() && !v.heartbeats.is_empty() => {
                self.heartbeat_only(&type_url, version, nonce, &v.heartbeats, (now, at));
            }
            Ok(Validated {
                resources: decoded,
                heartbeats,
            }) => {
                let wanted = self.watches.wanted(&type_url);
                // Resources that were not asked for are ignored (C8).
                let decoded: Vec<_> = decoded
                    .into_iter()
                    .filter(|d| wanted.wants(&d.name))
                    .collect();
                for resource in &decoded {
                    self.not_found.received(&type_url, &resource.name);
                }
                let ttls = ttls(&decoded);
                let kept = self.refresh(&type_url, &heartbeats, now);
                let stamp = Stamp { version, nonce, at };
                let full = type_url::full_state(&type_url);
                let diff = self
                    .store
                    .apply_sotw(&type_url, stamp, decoded, full, &kept);
                self.set_ttls(&type_url, ttls, &diff, now);
                self.types
                    .get_mut(&type_url)
                    .expect("checked")
                    .ack(nonce, version);
                self.deliver_sotw_update(&type_url, &diff);
                self.accepted(&type_url, version, nonce, diff, at);
            }
        }
        self.finish_response(&type_url, now);
    }

    /// Handles a Delta response: exactly one ACK or NACK follows (C4).
    pub fn on_delta_response(
        &mut self,
        mut response: DeltaDiscoveryResponse,
        now: Instant,
        at: SystemTime,
    ) {
        self.report_delta_received(&response);
        let type_url = response.type_url.clone();
        if !self.types.contains_key(&type_url) {
            return self.reply_unwatched(&type_url, &response.nonce);
        }
        let validator = self.config.validator.as_ref();
        let codec = &self.config.codec;
        let resources = std::mem::take(&mut response.resources);
        let removed = &response.removed_resources;
        let result = validate::delta(codec, &type_url, resources, removed, validator);
        let (version, nonce) = (&response.system_version_info, &response.nonce);
        match result {
            Err(rejection) => self.rejected(&type_url, version, nonce, &rejection, at),
            Ok((v, removed))
                if v.resources.is_empty() && removed.is_empty() && !v.heartbeats.is_empty() =>
            {
                self.heartbeat_only(&type_url, version, nonce, &v.heartbeats, (now, at));
            }
            Ok((
                Validated {
                    resources: added,
                    heartbeats,
                },
                removed,
            )) => {
                let wanted = self.watches.wanted(&type_url);
                let added: Vec<_> = added
                    .into_iter()
                    .filter(|d| wanted.wants(&d.name))
                    .collect();
                for resource in &added {
                    self.not_found.received(&type_url, &resource.name);
                }
                self.refresh(&type_url, &heartbeats, now);
                let ttls = ttls(&added);
                let stamp = Stamp { version, nonce, at };
                let diff = self.store.apply_delta(&type_url, stamp, added, &removed);
                self.set_ttls(&type_url, ttls, &diff, now);
                self.types
                    .get_mut(&type_url)
                    .expect("checked")
                    .ack(nonce, version);
                // A removal of an explicitly wanted name means it does not exist, at once.
                let missing: Vec<String> = removed
                    .iter()
                    .filter(|n| wanted.names.contains(*n))
                    .filter(|n| self.not_found.mark_missing(&type_url, n))
                    .cloned()
                    .collect();
                self.deliver_delta_update(&type_url, &diff);
                self.accepted(&type_url, version, nonce, diff, at);
                self.report_missing(&type_url, missing, at);
            }
        }
        self.finish_response(&type_url, now);
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

    /// Not-found timers that expired by `now` are reported missing (C14); TTL'd resources
    /// whose TTL lapsed are removed (C17).
    pub fn on_timer(&mut self, now: Instant, at: SystemTime) {
        self.expire(now, at);
        let expired = self.not_found.expired(now);
        let mut by_type: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (type_url, name) in expired {
            by_type.entry(type_url).or_default().push(name);
        }
        for (type_url, names) in by_type {
            self.report_missing(&type_url, names, at);
        }
        self.check_synced();
    }

    fn report_missing(&mut self, type_url: &str, names: Vec<String>, at: SystemTime) {
        if names.is_empty() {
            return;
        }
        tracing::info!(type_url, ?names, "resources not found");
        let subscribers: Vec<_> = self
            .watches
            .subscribers(type_url)
            .map(|(id, interest, _)| (id, interest.clone()))
            .collect();
        for (id, interest) in subscribers {
            let mine: Vec<String> = names
                .iter()
                .filter(|n| interest.wants(n))
                .cloned()
                .collect();
            if !mine.is_empty() {
                let event = Event::Missing {
                    type_url: type_url.to_string(),
                    names: mine,
                };
                self.out.deliveries.push((id, event));
            }
        }
        let report = Report::NotFound {
            at,
            type_url: type_url.to_string(),
            names,
        };
        self.out.reports.push(report);
    }

    fn rejected(
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
        self.out.reports.push(Report::Update(UpdateReport {
            at,
            mode: self.config.mode,
            source: self.config.source,
            type_url: type_url.to_string(),
            version: version.to_string(),
            nonce: nonce.to_string(),
            verdict: Verdict::Nack(message.clone()),
            diff: Diff::default(),
        }));
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

    fn accepted(&mut self, type_url: &str, version: &str, nonce: &str, diff: Diff, at: SystemTime) {
        tracing::info!(type_url, version, nonce, ?diff, "update applied");
        self.nacked.remove(type_url);
        self.answered.insert(type_url.to_string());
        self.out.store_changed = true;
        self.out.reports.push(Report::Update(UpdateReport {
            at,
            mode: self.config.mode,
            source: self.config.source,
            type_url: type_url.to_string(),
            version: version.to_string(),
            nonce: nonce.to_string(),
            verdict: Verdict::Ack,
            diff,
        }));
    }

    /// C17: each applied resource's TTL (none clears an earlier one); removed ones are gone.
    fn set_ttls(
        &mut self,
        type_url: &str,
        ttls: Vec<(String, Option<Duration>)>,
        diff: &Diff,
        now: Instant,
    ) {
        for (name, ttl) in ttls {
            self.expiry.set(type_url, &name, ttl, now);
        }
        for name in &diff.removed {
            self.expiry.forget(type_url, name);
        }
    }

    /// Sends the parent's ACK or NACK, then the dependent type's coalesced request (C12).
    fn finish_response(&mut self, type_url: &str, now: Instant) {
        let child = self.follow_dependencies(type_url, now);
        self.flush(now);
        if let Some(child) = child {
            self.resume(child, now);
        }
        self.check_synced();
    }

    /// Recomputes the dependent names of `type_url` with the child type paused; returns the
    /// paused child, which the caller resumes after the parent's reply went out.
    fn follow_dependencies(&mut self, type_url: &str, now: Instant) -> Option<&'static str> {
        if !self.config.follow_deps || self.nacked.contains_key(type_url) {
            return None;
        }
        let child = deps::child_of(type_url)?;
        self.pause(child);
        let held = self.store.of_type(type_url);
        let bytes = held
            .into_iter()
            .flat_map(|t| t.resources.values())
            .map(|r| &r.bytes[..]);
        let names = deps::names_for(type_url, bytes);
        let interest = Interest::Names(names);
        match self.dep_watches.get(child).copied() {
            Some(id) => self.set_interest(id, interest, now),
            None => {
                let id = FIRST_INTERNAL_WATCH - self.dep_watches.len() as u64;
                self.dep_watches.insert(child.to_string(), id);
                let before = self.watches.wanted(child);
                self.watches.add(id, child, interest, true);
                self.types
                    .entry(child.to_string())
                    .or_insert_with(|| crate::core::request::TypeState::new(child));
                self.interest_changed(child, before, now);
            }
        }
        Some(child)
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
        let error_detail = Some(nack_detail(UNWATCHED));
        let request = match self.config.mode {
            Variant::Sotw => Outgoing::Sotw(DiscoveryRequest {
                node,
                type_url: type_url.to_string(),
                response_nonce: nonce.to_string(),
                error_detail,
                ..Default::default()
            }),
            Variant::Delta => Outgoing::Delta(DeltaDiscoveryRequest {
                node,
                type_url: type_url.to_string(),
                response_nonce: nonce.to_string(),
                error_detail,
                ..Default::default()
            }),
        };
        self.report_sent(&stream, Step::Nack, &request);
        self.out.requests.push(request);
    }
}
