//! What a SotW and a Delta stream keep alike: the node and what its client can take, the
//! snapshot served, the nonces, the per-type subscriptions, the types changed since `/status`
//! last looked, the names a fault masks. [`StreamState`] holds it once, both machines embed
//! it, and what they answer alike is written here once: the node of the first request, the
//! resources a type is served, `/status`, the ledger's corrections from the wire (faults) and
//! what the client holds when the stream ends.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::{Instant, SystemTime},
};

use tracing::warn;
use xdsloop_proto::discovery::Node;

use crate::{
    protocol::held::{Held, TypeHeld},
    protocol::mask::Masks,
    protocol::nonce::NonceSource,
    protocol::subscription::{Exchange, Ledger, Subscription, TypeStatus},
    protocol::ttl::{Features, Heartbeats},
    protocol::wire::{FaultMark, Touched, WireFate},
    snapshot::Snapshot,
    snapshot::TypeResources,
};

/// One type's state in a machine: its subscription and heartbeats, and what the machine
/// knows the client holds.
pub(crate) trait PerType: Default {
    fn sub(&self) -> &Subscription;
    fn sub_mut(&mut self) -> &mut Subscription;
    fn heartbeats(&self) -> &Heartbeats;
    /// Hash of what the client holds (see [`TypeStatus::held_hash`]).
    fn held_hash(&self) -> Option<u64>;
    /// Delta: what the client holds, name → version or `None` ("told it is absent"). Empty for
    /// SotW, whose responses say it all.
    fn delta_known(&self) -> BTreeMap<String, Option<String>>;
}

/// The state every stream machine keeps, whatever its variant (`T`: a type's state).
#[derive(Debug)]
pub(crate) struct StreamState<T> {
    pub(crate) id: u64,
    pub(crate) nonces: NonceSource,
    pub(crate) node: Option<String>,
    /// What the client can take (S14, S15), from the node on its first request.
    pub(crate) features: Features,
    pub(crate) snapshot: Arc<Snapshot>,
    pub(crate) types: BTreeMap<String, T>,
    /// Types whose `/status` changed since [`Self::take_status`].
    pub(crate) changed: BTreeSet<String>,
    pub(crate) empty: Arc<TypeResources>,
    /// What the last request did.
    pub(crate) exchange: Exchange,
    /// Names a fault hides for a while (`flap`).
    masks: Masks,
}

impl<T: PerType> StreamState<T> {
    pub(crate) fn new(id: u64, snapshot: Arc<Snapshot>) -> Self {
        Self {
            id,
            nonces: NonceSource::new(id),
            node: None,
            features: Features::default(),
            snapshot,
            types: BTreeMap::new(),
            changed: BTreeSet::new(),
            empty: Arc::new(TypeResources::new(BTreeMap::new(), None)),
            exchange: Exchange::default(),
            masks: Masks::default(),
        }
    }

    /// The node id (and its features) are fixed by the stream's first request (C1: later ones
    /// may omit `node`).
    pub(crate) fn node_from(&mut self, node: Option<&Node>) -> String {
        if self.node.is_none() {
            self.features = Features::of(node);
        }
        let stream = self.id;
        self.node
            .get_or_insert_with(|| {
                let id = node.map(|n| n.id.clone());
                if id.is_none() {
                    warn!(
                        stream,
                        "first request has no node: serving the base fixtures"
                    );
                }
                id.unwrap_or_default()
            })
            .clone()
    }

    /// The resources of `url` this stream serves: the snapshot's, without what a fault masks.
    pub(crate) fn resources(&mut self, node: &str, url: &str) -> Arc<TypeResources> {
        let resources = self.snapshot.get(node, url).unwrap_or(&self.empty);
        self.masks.apply(url, resources.clone())
    }

    /// Masks what `globs` pick of `url` from now on; the node, when that changes what the
    /// stream serves and the node is known (then the type may be owed a response).
    pub(crate) fn mask(&mut self, url: &str, globs: Vec<String>) -> Option<String> {
        if !self.masks.set(url, globs) {
            return None;
        }
        self.node.clone()
    }

    pub(crate) fn node_id(&self) -> Option<&str> {
        self.node.as_deref()
    }

    pub(crate) fn take_status(&mut self) -> Vec<TypeStatus> {
        let changed = std::mem::take(&mut self.changed);
        changed
            .iter()
            .filter_map(|url| {
                let state = self.types.get(url)?;
                let mut status = state.sub().status(url, state.held_hash());
                status.heartbeats = state.heartbeats().status();
                Some(status)
            })
            .collect()
    }

    pub(crate) fn ledger(&self, url: &str) -> Option<&Ledger> {
        self.types.get(url).map(|s| &s.sub().ledger)
    }

    /// When the next heartbeat is due, if any type is scheduled one.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let due = self.types.values();
        due.filter_map(|s| s.heartbeats().next_deadline()).min()
    }

    /// See [`crate::protocol::machine::MachineHooks::note_wire`].
    pub(crate) fn note_wire(
        &mut self,
        url: &str,
        planned_nonce: &str,
        mark: FaultMark,
        fate: WireFate,
        at: SystemTime,
    ) {
        if let WireFate::Retyped { to, .. } = &fate {
            return self.retype(url, to, planned_nonce, mark, at);
        }
        let Some(state) = self.types.get_mut(url) else {
            return;
        };
        if state
            .sub_mut()
            .ledger
            .note_wire(planned_nonce, mark, &fate, at)
        {
            self.changed.insert(url.to_string());
        }
    }

    /// The response planned for `url` went on the wire as `to`'s: filed under `to` (if the
    /// stream has that type), gone from `url`'s ledger, where the fault is marked.
    fn retype(
        &mut self,
        url: &str,
        to: &str,
        planned_nonce: &str,
        mark: FaultMark,
        at: SystemTime,
    ) {
        let Some(state) = self.types.get_mut(url) else {
            return;
        };
        let ledger = &mut state.sub_mut().ledger;
        let Some(sent) = ledger.withdraw(planned_nonce) else {
            return;
        };
        let touched = Touched {
            mark: mark.clone(),
            at,
        };
        ledger.last_fault = Some(touched);
        self.changed.insert(url.to_string());
        if let Some(other) = self.types.get_mut(to) {
            other.sub_mut().ledger.adopt(sent, mark, at);
            self.changed.insert(to.to_string());
        }
    }

    /// See [`crate::protocol::machine::MachineHooks::withdraw`].
    pub(crate) fn withdraw(&mut self, url: &str, planned_nonce: &str) {
        let Some(state) = self.types.get_mut(url) else {
            return;
        };
        if state.sub_mut().ledger.withdraw(planned_nonce).is_some() {
            self.changed.insert(url.to_string());
        }
    }

    /// The types the client may not hold as served, which a resync sends again.
    pub(crate) fn unsettled(&self) -> Vec<String> {
        let types = self.types.iter();
        let unsettled = types.filter(|(_, state)| state.sub().ledger.unsettled());
        unsettled.map(|(url, _)| url.clone()).collect()
    }

    /// What the client holds of each type as the stream ends.
    pub(crate) fn held(self) -> Held {
        let types = self.types.into_iter().map(|(url, state)| {
            let delta_known = state.delta_known();
            let ledger = &state.sub().ledger;
            let held = TypeHeld {
                interest: state.sub().interest.clone(),
                last_acked: ledger.last_acked.as_ref().map(|a| a.version.clone()),
                acked: ledger.acked_latest(),
                delta_known,
            };
            (url, held)
        });
        Held {
            types: types.collect(),
        }
    }
}
