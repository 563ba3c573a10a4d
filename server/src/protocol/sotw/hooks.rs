//! The SotW machine behind [`StreamMachine`], with the hooks the stream loop's observers and
//! fault stage use.

use std::{collections::BTreeMap, sync::Arc, time::Instant};

use super::{SotwStream, respond};
use crate::{
    Snapshot,
    protocol::held::{Held, TypeHeld},
    protocol::machine::StreamMachine,
    protocol::request::SotwRequest,
    protocol::response::SotwResponse,
    protocol::subscription::{Exchange, Ledger, Subscription, TypeStatus},
    protocol::wire::{FaultMark, WireFate},
};

impl SotwStream {
    /// The current interest's response again, with a fresh nonce, whether or not the client
    /// has it; `None` before the node is known or when nothing is subscribed.
    pub fn repeat_last(&mut self, url: &str) -> Option<SotwResponse> {
        let node = self.node.clone()?;
        let resources = self.resources(&node, url);
        let state = self.types.get_mut(url)?;
        if state.sub.interest.is_empty() {
            return None;
        }
        let who = (self.id, node.as_str(), self.features);
        let planned = respond(who, &mut self.nonces, url, state, &resources);
        self.changed.insert(url.to_string());
        Some(planned.response)
    }

    /// See [`StreamMachine::mask`].
    pub fn mask(&mut self, url: &str, globs: Vec<String>) -> Vec<SotwResponse> {
        if !self.masks.set(url, globs) {
            return Vec::new();
        }
        let Some(node) = self.node.clone() else {
            return Vec::new();
        };
        self.push_if_changed(&node, url)
            .into_iter()
            .map(|planned| planned.response)
            .collect()
    }

    /// See [`StreamMachine::note_wire`].
    pub fn note_wire(&mut self, url: &str, planned_nonce: &str, mark: FaultMark, fate: WireFate) {
        if let WireFate::Retyped { to, .. } = &fate {
            return self.retype(url, to, planned_nonce, mark);
        }
        let Some(state) = self.types.get_mut(url) else {
            return;
        };
        if state.sub.ledger.note_wire(planned_nonce, mark, &fate) {
            self.changed.insert(url.to_string());
        }
    }

    /// The response planned for `url` went on the wire as `to`'s: filed under `to` (if the
    /// stream has that type), gone from `url`'s ledger, where the fault is marked.
    fn retype(&mut self, url: &str, to: &str, planned_nonce: &str, mark: FaultMark) {
        let Some(state) = self.types.get_mut(url) else {
            return;
        };
        let Some(sent) = state.sub.ledger.withdraw(planned_nonce) else {
            return;
        };
        state.sub.ledger.last_fault = Some(crate::protocol::wire::Touched {
            mark: mark.clone(),
            at: std::time::SystemTime::now(),
        });
        self.changed.insert(url.to_string());
        if let Some(other) = self.types.get_mut(to) {
            other.sub.ledger.adopt(sent, mark);
            self.changed.insert(to.to_string());
        }
    }

    /// See [`StreamMachine::withdraw`].
    pub fn withdraw(&mut self, url: &str, planned_nonce: &str) {
        let Some(state) = self.types.get_mut(url) else {
            return;
        };
        if state.sub.ledger.withdraw(planned_nonce).is_some() {
            self.changed.insert(url.to_string());
        }
    }

    /// See [`StreamMachine::resync`].
    pub fn resync(&mut self) -> Vec<SotwResponse> {
        let unsettled: Vec<String> = self
            .types
            .iter()
            .filter(|(_, state)| state.sub.ledger.unsettled())
            .map(|(url, _)| url.clone())
            .collect();
        unsettled
            .iter()
            .filter_map(|url| self.repeat_last(url))
            .collect()
    }

    /// What the client holds of each type as the stream ends.
    pub fn held(self) -> Held {
        let types = self.types.into_iter().map(|(url, state)| {
            let Subscription { interest, ledger } = state.sub;
            let held = TypeHeld {
                interest,
                last_acked: ledger.last_acked.as_ref().map(|a| a.version.clone()),
                acked: ledger.acked_latest(),
                delta_known: BTreeMap::new(),
            };
            (url, held)
        });
        Held {
            types: types.collect(),
        }
    }
}

impl StreamMachine for SotwStream {
    type Request = SotwRequest;
    type Response = SotwResponse;
    fn on_request(&mut self, request: SotwRequest) -> Vec<SotwResponse> {
        SotwStream::on_request(self, request)
    }
    fn on_snapshot(&mut self, snapshot: Arc<Snapshot>) -> Vec<SotwResponse> {
        SotwStream::on_snapshot(self, snapshot)
    }
    fn on_tick(&mut self, now: Instant) -> Vec<SotwResponse> {
        SotwStream::on_tick(self, now)
    }
    fn next_deadline(&self) -> Option<Instant> {
        SotwStream::next_deadline(self)
    }
    fn node_id(&self) -> Option<&str> {
        SotwStream::node_id(self)
    }
    fn take_status(&mut self) -> Vec<TypeStatus> {
        SotwStream::take_status(self)
    }
    fn payload(response: &SotwResponse) -> (&str, usize) {
        (&response.head.type_url, response.entry_bytes())
    }
    fn exchange(&self) -> Exchange {
        self.exchange
    }
    fn ledger(&self, type_url: &str) -> Option<&Ledger> {
        self.types.get(type_url).map(|s| &s.sub.ledger)
    }
    fn nonces_issued(&self) -> u64 {
        self.nonces.issued()
    }
    fn repeat_last(&mut self, type_url: &str) -> Option<SotwResponse> {
        SotwStream::repeat_last(self, type_url)
    }
    fn mask(&mut self, type_url: &str, globs: Vec<String>) -> Vec<SotwResponse> {
        SotwStream::mask(self, type_url, globs)
    }
    fn note_wire(&mut self, type_url: &str, planned_nonce: &str, mark: FaultMark, fate: WireFate) {
        SotwStream::note_wire(self, type_url, planned_nonce, mark, fate)
    }
    fn withdraw(&mut self, type_url: &str, planned_nonce: &str) {
        SotwStream::withdraw(self, type_url, planned_nonce)
    }
    fn resync(&mut self) -> Vec<SotwResponse> {
        SotwStream::resync(self)
    }
    fn held(self) -> Held {
        SotwStream::held(self)
    }
}

#[cfg(test)]
mod tests;
