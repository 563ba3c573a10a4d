//! The requests a node sends: its first request per type, ACK/NACK, and the dependent type's
//! interest change after a parent's update (C12). SotW requests carry the type's name list as
//! encoded once per change ([`FleetRequest`]).

use std::sync::Arc;

use xdsloop_proto::discovery::{DeltaDiscoveryRequest, DiscoveryRequest, Node as WireNode};

use super::Node;
use super::outcome::status;
use crate::config::Variant;
use crate::core::request::Outgoing;
use crate::fleet::names::Names;
use crate::fleet::outgoing::FleetRequest;

impl Node {
    /// Moves the dependent type of `parent` to the `wanted` names.
    pub(super) fn follow(&mut self, parent: usize, wanted: Names) -> Option<FleetRequest> {
        let kind = self.types[parent].kind.child()?;
        let child = self.types.iter().position(|t| t.kind == kind)?;
        let t = &mut self.types[child];
        let same = Arc::ptr_eq(&wanted, &t.names) || *wanted == *t.names;
        if same || (wanted.is_empty() && !t.active) {
            return None;
        }
        let old = std::mem::replace(&mut t.names, wanted);
        let delta = matches!(self.rules.mode, Variant::Delta);
        let unsubscribe = if delta {
            old.missing_from(&t.names)
        } else {
            Vec::new()
        };
        for name in &unsubscribe {
            t.held.remove(name);
        }
        if !t.active {
            t.active = true;
            return Some(self.initial_request(child));
        }
        Some(match self.rules.mode {
            Variant::Sotw => self.sotw_request(child, None),
            Variant::Delta => FleetRequest::delta(DeltaDiscoveryRequest {
                type_url: t.url.clone(),
                resource_names_subscribe: t.names.missing_from(&old),
                resource_names_unsubscribe: unsubscribe,
                ..Default::default()
            }),
        })
    }

    pub(super) fn initial_request(&mut self, i: usize) -> FleetRequest {
        match self.rules.mode {
            Variant::Sotw => self.sotw_request(i, None),
            Variant::Delta => {
                let node = self.take_node();
                let t = &self.types[i];
                FleetRequest::delta(DeltaDiscoveryRequest {
                    node,
                    type_url: t.url.clone(),
                    // Empty on a wildcard type = legacy wildcard, understood by every server.
                    resource_names_subscribe: t.names.iter().map(str::to_string).collect(),
                    initial_resource_versions: t.held.clone().into_iter().collect(),
                    ..Default::default()
                })
            }
        }
    }

    pub(super) fn ack(&mut self, i: usize, error: Option<String>) -> FleetRequest {
        match self.rules.mode {
            Variant::Sotw => self.sotw_request(i, error),
            Variant::Delta => FleetRequest::delta(DeltaDiscoveryRequest {
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
            names: t.names.wire().clone(),
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
