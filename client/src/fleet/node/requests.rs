//! The requests a node sends: its first request per type, ACK/NACK, and the dependent type's
//! interest change after a parent's update (C12). SotW requests carry the type's name list as
//! encoded once per change ([`FleetRequest`]).

use std::collections::BTreeSet;

use xdsloop_proto::discovery::{DeltaDiscoveryRequest, DiscoveryRequest, Node as WireNode};

use super::Node;
use super::outcome::status;
use crate::fleet::outgoing::{FleetRequest, encode_names};
use crate::request::{Mode, Outgoing};

impl Node {
    pub(super) fn follow(&mut self, parent: usize) -> Option<FleetRequest> {
        let kind = self.types[parent].kind.child()?;
        let child = self.types.iter().position(|t| t.kind == kind)?;
        let wanted: BTreeSet<String> = self.types[parent]
            .children
            .values()
            .flatten()
            .cloned()
            .collect();
        let t = &mut self.types[child];
        if wanted == t.names || (wanted.is_empty() && !t.active) {
            return None;
        }
        let subscribe: Vec<String> = wanted.difference(&t.names).cloned().collect();
        let unsubscribe: Vec<String> = t.names.difference(&wanted).cloned().collect();
        for name in &unsubscribe {
            t.held.remove(name);
        }
        t.names_wire = encode_names(&wanted);
        t.names = wanted;
        if !t.active {
            t.active = true;
            return Some(self.initial_request(child));
        }
        Some(match self.rules.mode {
            Mode::Sotw => self.sotw_request(child, None),
            Mode::Delta => FleetRequest::delta(DeltaDiscoveryRequest {
                type_url: t.url.clone(),
                resource_names_subscribe: subscribe,
                resource_names_unsubscribe: unsubscribe,
                ..Default::default()
            }),
        })
    }

    pub(super) fn initial_request(&mut self, i: usize) -> FleetRequest {
        match self.rules.mode {
            Mode::Sotw => self.sotw_request(i, None),
            Mode::Delta => {
                let node = self.take_node();
                let t = &self.types[i];
                FleetRequest::delta(DeltaDiscoveryRequest {
                    node,
                    type_url: t.url.clone(),
                    // Empty on a wildcard type = legacy wildcard, understood by every server.
                    resource_names_subscribe: t.names.iter().cloned().collect(),
                    initial_resource_versions: t.held.clone().into_iter().collect(),
                    ..Default::default()
                })
            }
        }
    }

    pub(super) fn ack(&mut self, i: usize, error: Option<String>) -> FleetRequest {
        match self.rules.mode {
            Mode::Sotw => self.sotw_request(i, error),
            Mode::Delta => FleetRequest::delta(DeltaDiscoveryRequest {
                node: self.take_node(),
                type_url: self.types[i].url.clone(),
                response_nonce: self.types[i].nonce.clone(),
                error_detail: error.map(status),
                ..Default::default()
            }),
        }
    }

    fn sotw_request(&mut self, i: usize, error: Option<String>) -> FleetRequest {
        let node = self.take_node();
        let t = &self.types[i];
        let message = Outgoing::Sotw(DiscoveryRequest {
            version_info: t.wire_version.clone(),
            node,
            type_url: t.url.clone(),
            response_nonce: t.nonce.clone(),
            error_detail: error.map(status),
            ..Default::default()
        });
        FleetRequest {
            message,
            names: t.names_wire.clone(),
        }
    }

    fn take_node(&mut self) -> Option<WireNode> {
        (!std::mem::replace(&mut self.node_sent, true)).then(|| WireNode {
            id: self.id.clone(),
            user_agent_name: "xdsloop-client-fleet".into(),
            ..Default::default()
        })
    }
}
