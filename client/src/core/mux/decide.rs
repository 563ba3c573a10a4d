//! Deciding subscriptions (Envoy's `SubscriptionCallbacks`): an update one of them would be
//! told of is held back as a [`Proposal`] until [`Mux::decide`] brings its verdict, and only
//! then applied and ACKed, or NACKed. Separate from the update path because it suspends it:
//! an update may wait here across calls, and a newer response or a closed stream voids it.

use std::time::Instant;

use super::Mux;
use super::update::Candidate;
use crate::core::event::Event;
use crate::core::store::Stamp;
use crate::core::validate::Rejection;
use crate::core::watch_map::WatchId;

/// An update the mux holds back for the verdict of the subscriptions that decide (Envoy's
/// `SubscriptionCallbacks::onConfigUpdate` and the status it returns). Nothing of it is applied
/// or answered until [`Mux::decide`].
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// The type URL of the update.
    pub type_url: String,
    /// The response's version (SotW `version_info`, Delta `system_version_info`).
    pub version: String,
    /// The response's nonce: [`Mux::decide`] applies a verdict only to the update it names.
    pub nonce: String,
    /// What each deciding subscription would be told if the update is applied; every one of
    /// them must accept it.
    pub asks: Vec<(WatchId, Event)>,
}

/// An update waiting for [`Mux::decide`], and the subscriptions that were asked.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) update: Candidate,
    pub(super) asked: Vec<WatchId>,
}

impl Mux {
    /// Envoy's `SubscriptionCallbacks::onConfigUpdate` returning: the callbacks' verdict on
    /// the update of `type_url` held back in a [`Proposal`]. `Ok` applies it and ACKs;
    /// `Err` NACKs it with the rejection's message, and the type keeps its last good config
    /// and version (C5). `nonce` is the [`Proposal`]'s: a verdict for an update no longer held
    /// back (its stream closed meanwhile, or a newer response superseded it) is ignored, so it
    /// can never decide another update of the type.
    pub fn decide(
        &mut self,
        type_url: &str,
        nonce: &str,
        verdict: Result<(), Rejection>,
        now: Instant,
    ) {
        if self.pending.get(type_url).map(|p| p.update.nonce.as_str()) != Some(nonce) {
            tracing::debug!(
                type_url,
                nonce,
                "verdict for an update no longer held: ignored"
            );
            return;
        }
        let Some(Pending { update, asked }) = self.pending.remove(type_url) else {
            return;
        };
        match verdict {
            Ok(()) => self.commit(type_url, update, &asked, now),
            Err(mut rejection) => {
                if rejection.names.is_empty() {
                    rejection.names = update.changes.names();
                }
                let (version, nonce) = (&update.version, &update.nonce);
                self.rejected(type_url, version, nonce, &rejection, update.at);
            }
        }
        self.finish_response(type_url, now);
    }

    /// Holds `update` back if a subscription of the type decides (it registered callbacks)
    /// and would be told of it: queues a [`Proposal`] with what each such subscription would
    /// get, and returns `None`. Otherwise gives the update back to be applied at once.
    pub(super) fn propose(
        &mut self,
        type_url: &str,
        update: Candidate,
        now: Instant,
    ) -> Option<Candidate> {
        if let Some(stale) = self.pending.remove(type_url) {
            // The loop fed a response before answering the last one: that one is not applied,
            // and still gets its one reply (C4).
            let why =
                Rejection::new("superseded by a newer response before its callbacks answered");
            let (version, nonce) = (&stale.update.version, &stale.update.nonce);
            // Its proposal is void: no verdict is asked for an update already answered.
            self.out
                .proposals
                .retain(|p| !(p.type_url == type_url && &p.nonce == nonce));
            self.rejected(type_url, version, nonce, &why, stale.update.at);
            self.flush(now);
        }
        let deciding = self
            .watches
            .subscribers(type_url)
            .any(|(id, _, _)| self.deciding.contains(&id));
        if !deciding {
            return Some(update);
        }
        // What the subscriptions would be told, from a copy of the store with the update in.
        let mut trial = self.store.clone();
        let stamp = Stamp {
            version: &update.version,
            nonce: &update.nonce,
            at: update.at,
        };
        let kept = self.current_heartbeats(type_url, &update.changes.heartbeats);
        let diff = update
            .changes
            .clone()
            .apply(&mut trial, type_url, stamp, &kept);
        let events = self.events(&trial, type_url, &diff);
        let asks: Vec<(WatchId, Event)> = events
            .into_iter()
            .filter(|(id, _)| self.deciding.contains(id))
            .collect();
        if asks.is_empty() {
            return Some(update);
        }
        tracing::debug!(type_url, version = %update.version, "update held for its callbacks");
        self.out.proposals.push(Proposal {
            type_url: type_url.to_string(),
            version: update.version.clone(),
            nonce: update.nonce.clone(),
            asks: asks.clone(),
        });
        let asked = asks.into_iter().map(|(id, _)| id).collect();
        self.pending
            .insert(type_url.to_string(), Pending { update, asked });
        None
    }
}
